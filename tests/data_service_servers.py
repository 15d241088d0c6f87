"""Real tf.data service servers for tests: a dispatcher and workers, each its own process.

Started with the project's entry point (``python -m tfrecord_pipelines.cli.data_service``)
on 127.0.0.1, waited for with a bounded timeout, and stopped by their own
process ids when the test ends, pass or fail.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import free_port
from tfrecord_pipelines.components.trainer.data_service import DataService, registered_workers

START_TIMEOUT_S = 60.0
_DISPATCHER_LINE = re.compile(r"dispatcher serving at grpc://[^:]+:(\d+)")


class DataServiceServers:
    """The dispatcher and workers one test started."""

    def __init__(self, cwd: Path, logs: Path):
        self._cwd = cwd
        self._logs = logs
        self._numbers = itertools.count()
        self.dispatcher: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.port: int | None = None
        self._arguments: dict[int, tuple[str, ...]] = {}

    @property
    def service(self) -> DataService:
        """The dispatcher's address for the trainer's side."""
        return DataService(f"127.0.0.1:{self.port}")

    def _start(self, *args: str) -> tuple[subprocess.Popen, Path]:
        """Starts a server whose output goes to a log file (a pipe left unread would block it)."""
        log = self._logs / f"{args[0]}-{next(self._numbers)}.log"
        with open(log, "w") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "tfrecord_pipelines.cli.data_service", *args],
                cwd=self._cwd,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self._arguments[process.pid] = args
        return process, log

    def start_dispatcher(self, journal: Path | None = None) -> DataService:
        """Starts the dispatcher (on the port it had before, if restarted); returns it."""
        # Fast failure detection, so that a killed worker is dropped within seconds.
        args = ["dispatcher", "--port", str(self.port or 0), "--worker-timeout-s", "3"]
        if journal:
            args += ["--journal", str(journal)]
        self.dispatcher, log = self._start(*args)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and self.dispatcher.poll() is None:
            if match := _DISPATCHER_LINE.search(log.read_text()):
                self.port = int(match.group(1))
                return self.service
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"The dispatcher did not start: {log.read_text()[-2000:]}")

    def start_workers(self, count: int) -> list[subprocess.Popen]:
        """Starts count workers, each on a port of its own, and waits until all registered."""
        started = [
            self._start(
                *("worker", "--dispatcher", f"127.0.0.1:{self.port}", "--port", str(free_port())),
                *("--heartbeat-s", "0.5"),
            )[0]
            for _ in range(count)
        ]
        self.workers += started
        self._wait_for_workers(len(self.workers))
        return started

    def restart_worker(self, process: subprocess.Popen) -> subprocess.Popen:
        """Starts a worker again at the address it had, as a StatefulSet recreates its pod."""
        restarted, _ = self._start(*self._arguments[process.pid])
        self.workers.append(restarted)
        return restarted

    def _wait_for_workers(self, count: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while len(registered_workers(self.service)) < count:
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{count} workers did not register in {START_TIMEOUT_S} s")
            time.sleep(0.5)

    @staticmethod
    def kill(process: subprocess.Popen) -> None:
        """SIGKILL, as a lost node or an out-of-memory kill would end it."""
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def stop(self) -> None:
        """Kills every server still running."""
        for process in [*self.workers, self.dispatcher]:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=30)
