"""Drives ``python -m tfrecord_pipelines run`` as processes: start, watch, kill, inspect."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from conftest import REPO_ROOT, printed_run_id

# Penguins with short training: the fault tests care about what is kept, not accuracy.
PENGUINS = "penguins"
FAST = ("--train-steps", "200", "--min-accuracy", "0")


def start_run(*args: str) -> subprocess.Popen:
    """Starts ``python -m tfrecord_pipelines run ARGS`` (own process group, output to a file)."""
    log = open(os.path.join(_log_dir(args), f"run-{time.monotonic_ns()}.log"), "w+")  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "tfrecord_pipelines", "run", *args],
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    process.log = log
    return process


def _log_dir(args) -> str:
    output = Path(args[list(args).index("--output") + 1])
    output.mkdir(parents=True, exist_ok=True)
    return str(output.parent)


def output_of(process: subprocess.Popen) -> str:
    """Everything the process printed so far."""
    process.log.flush()
    with open(process.log.name) as f:
        return f.read()


def wait_for(
    process: subprocess.Popen, condition: Callable[[], bool], what: str, limit_s: float = 900
) -> None:
    """Polls ``condition`` until it holds; fails if the process ends first or it never holds."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if process.poll() is not None:
            raise AssertionError(
                f"The run ended (status {process.returncode}) before {what}:\n"
                + output_of(process)[-3000:]
            )
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {limit_s} s")
        time.sleep(0.05)


def kill_hard(process: subprocess.Popen) -> None:
    """kill -9 of the run and every process it started."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def finish(process: subprocess.Popen, limit_s: float = 1200) -> tuple[int, str]:
    """Waits for the run; returns its status and output."""
    process.wait(timeout=limit_s)
    return process.returncode, output_of(process)


def run(*args: str) -> tuple[int, str]:
    """Runs ``python -m tfrecord_pipelines run ARGS`` to the end."""
    return finish(start_run(*args))


def lock_holder(output: Path) -> dict:
    """What the output folder's lock file says of the run that took it ({} if none)."""
    try:
        return json.loads((output / ".run.lock").read_text())
    except (OSError, ValueError):
        return {}


def node_outputs_exist(output: Path, node: str, key: str) -> Callable[[], bool]:
    """A condition: the node's execution has made its output folder (it is running)."""
    folder = output / "pipeline_root" / PENGUINS / node / key

    def holds() -> bool:
        return folder.is_dir() and any(folder.iterdir())

    return holds


def executions_by_node(output: Path, name: str = PENGUINS) -> dict[str, list]:
    """Every execution in the pipeline's ML Metadata store, by node id, oldest first."""
    from tfrecord_pipelines.local.run_record import node_ids_by_execution, open_store

    store = open_store(str(output / "metadata" / name / "metadata.db"))
    node_ids = node_ids_by_execution(store, name)
    found: dict[str, list] = {}
    for execution in store.get_executions_by_id(sorted(node_ids)):
        found.setdefault(node_ids[execution.id], []).append(execution)
    return found


def run_states(output: Path, result_text: str, name: str = PENGUINS) -> dict[str, str]:
    """The state of each node's execution in the run that printed ``result_text``."""
    from tfrecord_pipelines.local.run_record import open_store, read_run

    store = open_store(str(output / "metadata" / name / "metadata.db"))
    return {node: e.state for node, e in read_run(store, name, printed_run_id(result_text)).items()}
