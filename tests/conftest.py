"""Shared test setup: TFX 1.16 needs Keras 2, chosen before TensorFlow is imported."""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from forked_cli import forkable, run_forked

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
# The longest a command of a test may take.
COMMAND_TIMEOUT_S = 1200
# The bundled pipeline's components, in the order they run.
PIPELINE_COMPONENTS = (
    "ImportSchemaGen",
    "ShardedExampleGen",
    "ExampleValidator",
    "Transform",
    "Trainer",
    "Evaluator",
    "Pusher",
)


# Test modules in the order `make test` hands them to its workers (pytest-xdist,
# --dist loadscope --no-loadscope-reorder: a module and its shared runs stay on
# one worker): the longest first, so that both workers finish together. Runs
# in the component image take longest (the image build, whole DAGs), then
# pipeline runs and fault tests.
_HEAVIEST_MARKS = (("image",), ("e2e", "faults"))
# The first image module's worker builds the image (minutes; from an empty cache, as in
# CI, about 5 with the local Python base's debootstrap): meanwhile the other worker runs
# this many pipeline modules instead of waiting on the build's lock, then the other image
# modules.
_WHILE_THE_IMAGE_BUILDS = 5


def _weight_class(module_items: list) -> int:
    marks = {mark.name for item in module_items for mark in item.iter_markers()}
    for weight, names in enumerate(_HEAVIEST_MARKS):
        if marks & set(names):
            return weight
    return len(_HEAVIEST_MARKS)


def pytest_collection_modifyitems(items: list) -> None:
    """Orders the modules heaviest first, but for the pipeline modules that run while the
    image builds (``_WHILE_THE_IMAGE_BUILDS``), keeping each module's tests in their order."""
    modules: dict[str, list] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    order = sorted(modules.values(), key=_weight_class)
    image = [module for module in order if _weight_class(module) == 0]
    others = order[len(image) :]
    if image:
        cover = others[:_WHILE_THE_IMAGE_BUILDS]
        order = [image[0], *cover, *image[1:], *others[len(cover) :]]
    items[:] = [item for module in order for item in module]


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now, for a test's server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Runs ``python -m tfrecord_pipelines ARGS`` as a user would, with ``env`` added to the
    environment; returns the finished process.

    Forked from the worker's command server (``forked_cli``) unless the command is given
    variables or names an object store: then as a process of its own.
    """
    if forkable(args, env):
        return run_forked(args, cwd or REPO_ROOT, timeout=COMMAND_TIMEOUT_S)
    return subprocess.run(
        [sys.executable, "-m", "tfrecord_pipelines", *args],
        cwd=cwd or REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        env={**os.environ, **env} if env else None,
    )


def compile_in_process(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Runs ``python -m tfrecord_pipelines compile ARGS``'s code in this process; returns what
    ``run_cli`` would.

    A ``compile`` process spends about 16 of its 20 CPU-seconds importing TFX
    and KFP; here they are imported once per test worker. What the command
    changes in the process (the environment, the working folder, warning
    filters, absl's logger) is put back after it. The command's own process,
    as a user starts it, is tested by the modules that compile with ``run_cli``.
    """
    import contextlib
    import io
    import logging
    import warnings

    from absl import logging as absl_logging

    from tfrecord_pipelines.cli.main import main

    saved_environment, saved_folder = dict(os.environ), os.getcwd()
    absl_logger = logging.getLogger("absl")
    saved_logger = (list(absl_logger.handlers), list(absl_logger.filters), absl_logger.propagate)
    saved_verbosity = absl_logging.get_verbosity()
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        os.environ.update(env or {})
        os.chdir(cwd or REPO_ROOT)
        with warnings.catch_warnings(), contextlib.redirect_stdout(stdout):
            with contextlib.redirect_stderr(stderr):
                try:
                    status = main(["compile", *args])
                except SystemExit as done:  # argparse's usage errors
                    status = done.code if isinstance(done.code, int) else 1
    finally:
        os.environ.clear()
        os.environ.update(saved_environment)
        os.chdir(saved_folder)
        absl_logger.handlers[:], absl_logger.filters[:] = saved_logger[0], saved_logger[1]
        absl_logger.propagate = saved_logger[2]
        absl_logging.set_verbosity(saved_verbosity)
    command = [sys.executable, "-m", "tfrecord_pipelines", "compile", *args]
    return subprocess.CompletedProcess(command, status, stdout.getvalue(), stderr.getvalue())


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


def run_summary(output: Path, name: str, printed: str):
    """The RunSummary of the run that printed ``printed``, read from ML Metadata."""
    from tfrecord_pipelines.local.run_record import open_store
    from tfrecord_pipelines.report.run_summary import summarize_run

    store = open_store(str(output / "metadata" / name / "metadata.db"))
    return summarize_run(store, name, printed_run_id(printed))


def run_output(output: Path, name: str, printed: str, node_id: str, key: str):
    """The ML Metadata artifact of ``node_id``'s output ``key`` in the run that printed
    ``printed``."""
    from tfrecord_pipelines.local.run_record import open_store, read_run

    store = open_store(str(output / "metadata" / name / "metadata.db"))
    return read_run(store, name, printed_run_id(printed))[node_id].output(key)


def json_property(artifact, name: str):
    """A custom property that TFX stored as JSON (a struct), as Python values."""
    from google.protobuf import json_format

    return json_format.MessageToDict(artifact.custom_properties[name].struct_value)


def printed_run_id(printed: str) -> str:
    """The run id a finished ``run`` printed in its summary."""
    return re.search(r"^  run id: +(\S+)$", printed, re.MULTILINE).group(1)


@pytest.fixture(scope="session")
def chromium_endpoint():
    """The DevTools endpoint of a headless Chromium, stopped when the session ends."""
    from report_browser import HeadlessChromium

    chromium = HeadlessChromium()
    try:
        yield chromium.endpoint
    finally:
        chromium.stop()


@pytest.fixture(scope="session")
def component_image() -> str:
    """The cpu image, built from docker/Dockerfile as `make image` builds it; its tag."""
    from component_image import ContainerSetupError, build_component_image

    try:
        return build_component_image("cpu")
    except ContainerSetupError as e:
        pytest.fail(f"the component image cannot be built here: {e}", pytrace=False)


@pytest.fixture(scope="session")
def docker_api(tmp_path_factory):
    """podman's Docker API on a socket of this session's, named by $DOCKER_HOST while it runs."""
    from component_image import ContainerSetupError, DockerApi

    try:
        api = DockerApi(tmp_path_factory.mktemp("podman"))
    except ContainerSetupError as e:
        pytest.fail(f"containers cannot run here: {e}", pytrace=False)
    before = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = api.url
    try:
        yield api
    finally:
        api.stop()
        if before is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = before


@pytest.fixture
def serve():
    """Yields a function that serves a fake KFP API (fake_kfp_api.FakeKfpApi) on a free local
    port and returns its URL; the servers stop when the test ends."""
    from fake_kfp_api import FakeKfpServer

    servers = []

    def start(api) -> str:
        server = FakeKfpServer(api)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()
