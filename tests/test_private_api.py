"""Other libraries' private names go through components/private_api/, one module per library,
each listing what its uses rest on; this fails when the installed library is not the version
a module was checked against, or a listed source changed."""

import importlib
import importlib.metadata
import pkgutil
import platform

import pytest

from tfrecord_pipelines.components import private_api

MODULES = [
    importlib.import_module(f"{private_api.__name__}.{info.name}")
    for info in pkgutil.iter_modules(private_api.__path__)
]


def _installed(library: str) -> str:
    if library == "python":
        return ".".join(platform.python_version_tuple()[:2])
    return importlib.metadata.version(library)


def test_each_library_has_its_module():
    assert {m.LIBRARY for m in MODULES} == {
        "tfx",
        "tensorflow-model-analysis",
        "tensorflow",
        "kfp",
        "python",
    }


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.LIBRARY)
def test_the_private_names_are_as_checked(module):
    assert _installed(module.LIBRARY) == module.VERSION, (
        f"{module.LIBRARY} is {_installed(module.LIBRARY)}, not the {module.VERSION} that "
        f"{module.__name__} was checked against: check each name in its CHECKED, then its version"
    )
    assert module.CHECKED
    changed = {
        name: private_api.fingerprint(name)
        for name, recorded in module.CHECKED.items()
        if private_api.fingerprint(name) != recorded
    }
    assert not changed, f"changed in {module.LIBRARY} {module.VERSION}: {changed}"
