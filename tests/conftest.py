"""Shared test setup: TFX 1.16 needs Keras 2, chosen before TensorFlow is imported."""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
# The bundled pipeline's components, in the order they run.
PIPELINE_COMPONENTS = (
    "ImportSchemaGen",
    "ShardedExampleGen",
    "StatisticsGen",
    "ExampleValidator",
    "Transform",
    "Trainer",
    "Evaluator",
    "Pusher",
)


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now, for a test's server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs ``python -m tfrecord_pipelines ARGS`` as a user would; returns the finished process."""
    return subprocess.run(
        [sys.executable, "-m", "tfrecord_pipelines", *args],
        cwd=cwd or REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


def run_summary(output: Path, name: str, printed: str):
    """The RunSummary of the run that printed ``printed``, read from ML Metadata."""
    from tfrecord_pipelines.local.run_record import open_store
    from tfrecord_pipelines.report.run_summary import summarize_run

    store = open_store(str(output / "metadata" / name / "metadata.db"))
    return summarize_run(store, name, printed_run_id(printed))


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
