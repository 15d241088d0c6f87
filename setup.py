"""The wheel's packages: one import name, ``tfrecord_pipelines``, over the repository's folders.

``pipelines/`` is the package ``tfrecord_pipelines`` (the command line, the
pipeline's definition, its runners, the report) and ``components/`` is
``tfrecord_pipelines.components``: the folders stay where a reader looks for
them, while the import path has a name of its own that does not collide with a
user's ``pipelines`` or ``components`` package. Everything else is in
pyproject.toml.
"""

from setuptools import find_packages, setup

FOLDERS = {"tfrecord_pipelines": "pipelines", "tfrecord_pipelines.components": "components"}

setup(
    package_dir=FOLDERS,
    packages=[
        name
        for package, folder in FOLDERS.items()
        for name in [package, *(f"{package}.{sub}" for sub in find_packages(folder))]
    ],
)
