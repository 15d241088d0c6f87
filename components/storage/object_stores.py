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
project's glob (``filesystem.glob``, level by level). fake-gcs-server skips the
parts of a batch request that carry no Content-ID, which google-cloud-storage
leaves out: Beam's renames on ``gs://`` (a sink's temporary files, copied in
batches) then copy nothing. Under an emulator, ``configure`` numbers the parts.

S3 (AWS, MinIO): core TensorFlow 2.16 has no ``s3://`` file system; tensorflow-io's
plugin library has one, reaching the server its own ``S3_ENDPOINT`` names.
``configure`` points it at ``AWS_ENDPOINT_URL`` (the AWS SDKs' and CLI's variable)
and loads the library as soon as TensorFlow is imported, when a process is
given an ``s3://`` path or an S3 endpoint. Credentials stay the AWS SDK's:
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, a profile, or the pod's role.

The library in tensorflow-io 0.37.1's wheel aborts every process that used it
at exit ("pure virtual method called", status 134): its AWS SDK client's
static destructor logs through a log system already destroyed
(tensorflow/io#2039; fixed in the source by tensorflow/io#2120, in no release).
A process given S3 therefore ends with ``os._exit``, after Python's own exit
handlers and before C++'s static destructors, with the status it recorded
(``exit_status``; every entry point runs through ``run_entry_point``, which
records it), or else 1 after an uncaught exception and 0 otherwise.

Call ``configure`` before TensorFlow is imported (``run_entry_point`` does);
worker processes inherit the variables.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.util
import itertools
import logging
import os
import sys
from collections.abc import Callable, Sequence

from tfrecord_pipelines.components.storage.emulators import (
    GCS_EMULATOR_ENDPOINT,
    GCS_EMULATOR_HOST,
    gcs_emulator,
)

# The plugin's cache settings, each set so that its constructor finds it: a 64 MiB read
# block, and no block or stat cache, so that a listing after a write sees the write.
_PLUGIN_SETTINGS = {
    "GCS_READ_CACHE_BLOCK_SIZE_MB": "64",
    "GCS_READ_CACHE_MAX_SIZE_MB": "0",
    "GCS_READ_CACHE_MAX_STALENESS": "0",
    "GCS_STAT_CACHE_MAX_AGE": "0",
    "GCS_STAT_CACHE_MAX_ENTRIES": "0",
}
# The AWS SDKs' names for an S3 endpoint, the service's own first.
AWS_ENDPOINTS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
# tensorflow-io's S3 plugin's own endpoint variable (a URL, as the SDKs' are).
S3_ENDPOINT = "S3_ENDPOINT"
S3_SCHEME = "s3://"
# The pipeline root's store, which a task reads earlier runs' artifacts from (compile's
# --artifact-endpoint and --artifact-secret), under names of this project's own: given as
# the AWS SDKs' variables, they would send the task's own s3:// data (in AWS, read with the
# pod's role) to the pipeline root's store. ``read_artifact_store`` applies them.
ARTIFACT_ENDPOINT = "TFRECORD_PIPELINES_ARTIFACT_ENDPOINT"
ARTIFACT_KEYS = (
    "TFRECORD_PIPELINES_ARTIFACT_ACCESS_KEY_ID",
    "TFRECORD_PIPELINES_ARTIFACT_SECRET_ACCESS_KEY",
)
_AWS_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
# The status a process given S3 ends with, when recorded (exit_status); unrecorded, 1 after
# an uncaught exception and 0 otherwise, as Python's own exit would give.
_exit_status: int | None = None
_s3_configured = False
# Whether this process said that the root's store is out of TensorFlow's reach.
_said_out_of_reach = False


def configure(argv: Sequence[str] = ()) -> None:
    """Points TensorFlow's file systems at the object stores the environment names.

    A GCS emulator: TensorFlow's modular GCS plugin. S3, when ``argv`` names an
    ``s3://`` path or an S3 endpoint is set: tensorflow-io's plugin, loaded when
    TensorFlow is imported.
    """
    if gcs_emulator() is not None:
        _configure_gcs()
    if any(S3_SCHEME in arg for arg in argv) or _first_set(
        S3_ENDPOINT, *AWS_ENDPOINTS, ARTIFACT_ENDPOINT
    ):
        _configure_s3()


def exit_status(status: int | str | None) -> int:
    """Records the status this process ends with (``sys.exit``'s argument); returns it."""
    global _exit_status
    _exit_status = status if isinstance(status, int) else 0 if status is None else 1
    return _exit_status


def run_entry_point(argv: Sequence[str], body: Callable[[], int | None]) -> int:
    """Runs an entry point's ``body`` in a process set up for the object stores.

    Every entry point (the command line, the KFP components', the compiled
    pipeline's executor) goes through here: ``configure`` first, before
    TensorFlow is imported, then the status ``body`` returns or exits with is
    recorded, the one a process given S3 ends with (see the module docstring). An
    object store's refusal ends the process with one line naming what it refused
    and its answer (``store_errors``), not the client's traceback.

    Returns:
      The status ``body`` returned (None is 0).
    """
    from tfrecord_pipelines.components.storage.store_errors import store_answer

    configure(argv)
    try:
        status = body()
    except SystemExit as done:
        exit_status(done.code)
        raise
    except Exception as e:
        answer = store_answer(e)
        if answer is None:
            raise
        print(f"error: {answer}", file=sys.stderr)
        raise SystemExit(exit_status(1)) from None
    return exit_status(status)


def _configure_gcs() -> None:
    endpoint = gcs_emulator()
    os.environ.setdefault(GCS_EMULATOR_ENDPOINT, endpoint)
    os.environ.setdefault(GCS_EMULATOR_HOST, endpoint)
    os.environ["TF_USE_MODULAR_FILESYSTEM"] = "1"
    for name, value in _PLUGIN_SETTINGS.items():
        os.environ.setdefault(name, value)
    _register_glob_for_tfx()
    _after_import("google.cloud.storage.batch", _number_batch_parts)


def s3_endpoint() -> str | None:
    """The S3 endpoint the environment names (the SDKs' variables, then the plugin's), or None."""
    return _first_set(*AWS_ENDPOINTS, S3_ENDPOINT)


def artifact_store_endpoint() -> str | None:
    """The pipeline root's store's S3 endpoint this task is given, or None."""
    return os.environ.get(ARTIFACT_ENDPOINT) or None


def read_artifact_store(own_paths: Sequence[str] = ()) -> bool:
    """Points TensorFlow's and Beam's S3 at the pipeline root's store, with its keys, for the
    earlier runs' artifacts this process reads; without an endpoint, leaves the pod's own S3
    settings (the AWS SDKs' defaults: its role) as they are.

    TensorFlow's S3 file system reaches one endpoint with one key per process. A pod
    given S3 settings of its own (a namespace's PodDefault for the data's store) keeps
    them while the task names ``s3://`` paths of its own (``own_paths``: its data, a
    serving or state folder): the root's artifacts are then out of TensorFlow's reach,
    which it says in one line (ExampleGen uploads its examples with a client of the
    root's own instead, ``root_uploads``; SpanWindow reads only their metadata). A task
    that names none reads and writes S3 only in the root's store: its own settings are
    set aside, in one printed line.

    Returns:
      Whether TensorFlow and Beam reach the root's store over S3 in this process.
    """
    endpoint = artifact_store_endpoint()
    if endpoint is None:
        return True
    settings = {S3_ENDPOINT: endpoint} | {
        aws: os.environ[scoped]
        for scoped, aws in zip(ARTIFACT_KEYS, _AWS_KEYS, strict=True)
        if os.environ.get(scoped)
    }
    endpoints = [name for name in (S3_ENDPOINT, *AWS_ENDPOINTS) if os.environ.get(name)]
    clashes = sorted(
        {name for name, value in settings.items() if os.environ.get(name, value) != value}
        | {name for name in endpoints if os.environ[name] != endpoint}
    )
    if clashes and own_paths:
        if not _said_out_of_reach:
            _say_out_of_reach(endpoint, own_paths, clashes)
        return False
    if clashes:
        print(
            f"This task's S3 is the pipeline root's store alone ({endpoint}): its own S3 "
            f"settings ({', '.join(clashes)}) are set aside"
        )
        settings |= {name: endpoint for name in endpoints}
        if set(_AWS_KEYS) & set(clashes):
            os.environ.pop("AWS_SESSION_TOKEN", None)
    os.environ.update(settings)
    _configure_s3()
    return True


def _say_out_of_reach(endpoint: str, own_paths: Sequence[str], clashes: Sequence[str]) -> None:
    global _said_out_of_reach
    _said_out_of_reach = True
    print(
        f"This task's S3 is its own store, for {', '.join(sorted(own_paths))} "
        f"({', '.join(clashes)} differ from the pipeline root's store's): TensorFlow's S3 "
        f"file system reaches one store per process, so the root's artifacts in s3:// "
        f"({endpoint}) are out of its reach and a read of one fails; keep the task's s3:// "
        "paths in the root's store, or use a gs:// or volume path"
    )


def with_beam_s3_endpoint(beam_args: Sequence[str]) -> list[str]:
    """Beam's flags with ``--s3_endpoint_url`` set to the endpoint TensorFlow's S3 file system
    reaches (``s3_endpoint``), unless they name one: Beam reaches s3:// through boto3, which
    reads neither tensorflow-io's ``S3_ENDPOINT`` nor, from Beam, the pipeline root's store's
    name; its keys it takes from the AWS SDKs' variables as TensorFlow does."""
    endpoint = s3_endpoint()
    if endpoint is None or any(a.startswith("--s3_endpoint_url") for a in beam_args):
        return list(beam_args)
    return [*beam_args, f"--s3_endpoint_url={endpoint}"]


def _first_set(*names: str) -> str | None:
    return next((os.environ[name] for name in names if os.environ.get(name)), None)


def _configure_s3() -> None:
    endpoint = _first_set(*AWS_ENDPOINTS)
    if endpoint and not os.environ.get(S3_ENDPOINT):
        os.environ[S3_ENDPOINT] = endpoint
    global _s3_configured
    if _s3_configured:
        return
    _s3_configured = True
    atexit.register(_end_before_static_destructors)
    _after_import("tensorflow", _load_s3_plugin)


def _load_s3_plugin(_tensorflow) -> None:
    # tensorflow_io's import registers its file systems (tf.Transform imports it too).
    import tensorflow_io  # noqa: F401


def _after_import(name: str, action: Callable) -> None:
    """Calls ``action(module)`` once module ``name`` is imported: now, if it is."""
    if name in sys.modules:
        action(sys.modules[name])
    else:
        sys.meta_path.insert(0, _AfterImport(name, action))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls an action on a module once it has been imported."""

    def __init__(self, name: str, action: Callable) -> None:
        self._name, self._action = name, action

    def find_spec(self, name, path=None, target=None):
        if name != self._name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            self._action(module)

        spec.loader.exec_module = exec_module
        return spec


# Marks google-cloud-storage's batch part class as numbered (configure may run twice).
_NUMBERED = "_tfrecord_pipelines_numbered"


def _number_batch_parts(batch_module) -> None:
    """Gives each part of google-cloud-storage's batch requests a Content-ID, which GCS's
    batch API allows and fake-gcs-server needs: it skips a part without one
    (fakestorage's handleBatchCall), so Beam's GCS renames (copy_batch) copied nothing."""
    http_part = batch_module.MIMEApplicationHTTP
    if getattr(http_part, _NUMBERED, False):
        return
    initialize = http_part.__init__
    numbers = itertools.count(1)

    def numbered(self, *args, **kwargs):
        initialize(self, *args, **kwargs)
        self["Content-ID"] = f"<part-{next(numbers)}>"

    http_part.__init__ = numbered
    setattr(http_part, _NUMBERED, True)


def _end_before_static_destructors() -> None:
    # Registered before TensorFlow, Beam and TFX register theirs: runs after them.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    if _exit_status is not None:
        os._exit(_exit_status)
    os._exit(1 if getattr(sys, "last_value", None) is not None else 0)


def _register_glob_for_tfx() -> None:
    """Gives TFX's file system calls on ``gs://`` the project's glob, the rest TensorFlow's."""
    # Imported here: the command line imports this module before anything slow.
    from tfx.dsl.io import filesystem as tfx_filesystem
    from tfx.dsl.io import filesystem_registry

    from tfrecord_pipelines.components.storage import filesystem

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
