"""TensorFlow's file systems pointed at an object-store emulator by the ecosystem's variables.

Core TensorFlow's GCS file system has Google's endpoint compiled in
(``https://www.googleapis.com/storage/v1/``) and no variable to move it, so it
cannot reach an emulator. TensorFlow's modular GCS plugin
(``tensorflow-io-gcs-filesystem``, installed with TensorFlow; chosen by
``TF_USE_MODULAR_FILESYSTEM=1``) is google-cloud-cpp's client, which reads
``CLOUD_STORAGE_EMULATOR_ENDPOINT``. Its file system's constructor hands
``getenv``'s result for five cache settings to a ``string_view`` unchecked:
with any of them unset, the first ``gs://`` call dies of a segmentation
fault (a null pointer in ``GCSFileSystemImplementation``'s constructor, seen
with gdb). ``configure`` gives them their values when an emulator is named.

The plugin also globs wildcards in the last level only, and there only
objects, not folders: TFX's ExampleGen driver's glob of
``gs://b/events/day-*/*.csv`` finds nothing. ``configure`` registers, for
``gs://`` in TFX's file system registry, TFX's TensorFlow file system with the
project's glob (``filesystem.glob``, level by level).

Call it before TensorFlow is imported (the command line and the Kubeflow
entry point do); worker processes inherit the variables.
"""

from __future__ import annotations

import os

# The ecosystem's names for a GCS emulator: Python's client library's and google-cloud-cpp's.
GCS_EMULATOR_HOST = "STORAGE_EMULATOR_HOST"
GCS_EMULATOR_ENDPOINT = "CLOUD_STORAGE_EMULATOR_ENDPOINT"
# The plugin's cache settings, each set so that its constructor finds it: a 64 MiB read
# block, and no block or stat cache, so that a listing after a write sees the write.
_PLUGIN_SETTINGS = {
    "GCS_READ_CACHE_BLOCK_SIZE_MB": "64",
    "GCS_READ_CACHE_MAX_SIZE_MB": "0",
    "GCS_READ_CACHE_MAX_STALENESS": "0",
    "GCS_STAT_CACHE_MAX_AGE": "0",
    "GCS_STAT_CACHE_MAX_ENTRIES": "0",
}


def gcs_emulator() -> str | None:
    """The GCS emulator's URL the environment names, or None."""
    endpoint = os.environ.get(GCS_EMULATOR_ENDPOINT) or os.environ.get(GCS_EMULATOR_HOST)
    if not endpoint:
        return None
    return endpoint if "://" in endpoint else f"http://{endpoint}"


def configure() -> None:
    """When a GCS emulator is named, makes TensorFlow reach it through its modular plugin."""
    endpoint = gcs_emulator()
    if endpoint is None:
        return
    os.environ.setdefault(GCS_EMULATOR_ENDPOINT, endpoint)
    os.environ.setdefault(GCS_EMULATOR_HOST, endpoint)
    os.environ["TF_USE_MODULAR_FILESYSTEM"] = "1"
    for name, value in _PLUGIN_SETTINGS.items():
        os.environ.setdefault(name, value)
    _register_glob_for_tfx()


def _register_glob_for_tfx() -> None:
    """Gives TFX's file system calls on ``gs://`` the project's glob, the rest TensorFlow's."""
    # Imported here: the command line imports this module before anything slow.
    from tfx.dsl.io import filesystem as tfx_filesystem
    from tfx.dsl.io import filesystem_registry

    from tfrecord_pipelines.components import filesystem

    class EmulatedGcsFilesystem(tfx_filesystem.Filesystem):
        """TFX's TensorFlow file system for ``gs://``, globbing level by level."""

        SUPPORTED_SCHEMES = ["gs://"]
        glob = staticmethod(filesystem.glob)
        open = _tensorflows("open")
        copy = _tensorflows("copy")
        exists = _tensorflows("exists")
        isdir = _tensorflows("isdir")
        listdir = _tensorflows("listdir")
        makedirs = _tensorflows("makedirs")
        mkdir = _tensorflows("mkdir")
        remove = _tensorflows("remove")
        rename = _tensorflows("rename")
        rmtree = _tensorflows("rmtree")
        stat = _tensorflows("stat")
        walk = _tensorflows("walk")

    # Preferred over TFX's own registration of TensorFlow's (priority 10).
    filesystem_registry.DEFAULT_FILESYSTEM_REGISTRY.register(EmulatedGcsFilesystem, priority=5)


def _tensorflows(name: str):
    """TFX's TensorFlow file system's ``name``, imported on first use: it imports TensorFlow,
    which must see ``configure``'s variables first."""

    def call(*args, **kwargs):
        from tfx.dsl.io.plugins.tensorflow_gfile import TensorflowFilesystem

        return getattr(TensorflowFilesystem, name)(*args, **kwargs)

    return staticmethod(call)
