"""``python -m tfrecord_pipelines ARGS`` in a process forked from one that has imported what a
command imports.

A ``run`` process on the bundled data spends about 8 of its 25 CPU-seconds
importing TensorFlow, TFX, Beam and TFMA, the same modules every time, and the
suite starts dozens. Here one server process per test worker (``_ZYGOTE``)
does what the command's ``main`` does first (``deferred_inits``), imports those
modules once, and forks for each command. The fork is a new process with its own
arguments, working folder, environment, standard streams, exit handlers and
status: only the imports happened before them.

What a fork cannot show is the command's own start, so these run as processes
of their own (``run_cli`` decides):

- a command given variables (``env``) or naming an object store: the stores are
  set up before TensorFlow is imported (``object_stores.run_entry_point``);
- what each entry point imports, and the processes that are started, killed and
  inspected: test_cli_imports and the fault tests (``running_pipeline``) start
  their own.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from tfrecord_pipelines.components.storage.filesystem import is_object_store

# The server: the command's first step (main's deferral), the modules a run, a convert and a
# compile import, then a fork per request line. Each request is answered with the child's
# pid, then its wait status.
_ZYGOTE = r"""
import atexit, json, os, runpy, sys, traceback

from tfrecord_pipelines.components import deferred_inits
deferred_inits.defer_package_inits()
import tfrecord_pipelines.cli.main
import tfrecord_pipelines.definition.pipeline
import tfrecord_pipelines.local.runner
import tfrecord_pipelines.report.render

answers = os.fdopen(int(sys.argv[1]), "w")
os.set_inheritable(answers.fileno(), False)


def command(request):
    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, request["stdout"], os.O_WRONLY | os.O_TRUNC),
                            (2, request["stderr"], os.O_WRONLY | os.O_TRUNC)):
        os.dup2(os.open(path, flags), fd)
    sys.argv = ["tfrecord_pipelines", *request["args"]]
    status = 0
    try:
        runpy.run_module("tfrecord_pipelines", run_name="__main__", alter_sys=True)
    except SystemExit as done:  # as Python's own exit: None is 0, a message is 1
        if done.code is None or isinstance(done.code, int):
            status = done.code or 0
        else:
            print(done.code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    return status


for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            status = command(request)
        finally:
            os._exit(status)
    answers.write(f"{pid}\n")
    answers.flush()
    _, wait_status = os.waitpid(pid, 0)
    answers.write(f"{wait_status}\n")
    answers.flush()
"""


class _Zygote:
    def __init__(self) -> None:
        read, write = os.pipe()
        self._log = tempfile.NamedTemporaryFile(prefix="forked-cli-", suffix=".log", delete=False)  # noqa: SIM115
        self._process = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, str(write)],
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            text=True,
            pass_fds=(write,),
        )
        os.close(write)
        self._answers = os.fdopen(read)
        atexit.register(self.close)

    def close(self) -> None:
        """Ends the server (its input closed) and removes its log."""
        self._process.stdin.close()
        self._process.wait(timeout=60)
        self._log.close()
        os.unlink(self._log.name)

    def _answer(self, timeout: float | None) -> str:
        ready, _, _ = select.select([self._answers], [], [], timeout)
        if not ready:
            return ""
        line = self._answers.readline()
        if not line:
            raise RuntimeError(f"the command server ended; its log: {self._log.name}")
        return line.strip()

    def run(self, args, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as folder:
            out, err = Path(folder) / "stdout", Path(folder) / "stderr"
            out.touch()
            err.touch()
            request = {"args": list(args), "cwd": str(cwd), "env": dict(os.environ),
                       "stdout": str(out), "stderr": str(err)}  # fmt: skip
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            pid = int(self._answer(None))
            answer = self._answer(timeout)
            command = [sys.executable, "-m", "tfrecord_pipelines", *args]
            if not answer:
                os.killpg(pid, signal.SIGKILL)
                self._answer(None)
                raise subprocess.TimeoutExpired(command, timeout, out.read_text(), err.read_text())
            status = os.waitstatus_to_exitcode(int(answer))
            return subprocess.CompletedProcess(command, status, out.read_text(), err.read_text())


_LOCK = threading.Lock()
_zygote: _Zygote | None = None


def forkable(args, env) -> bool:
    """Whether a command can run in a fork: no variables of its own, no object store."""
    # An option's value may follow its name after '=' (--data=gs://...).
    return not env and not any(is_object_store(str(arg).rpartition("=")[2]) for arg in args)


def run_forked(args, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """Runs ``python -m tfrecord_pipelines ARGS`` in a fork of this worker's command server;
    returns what ``subprocess.run`` would."""
    global _zygote
    with _LOCK:
        if _zygote is None:
            _zygote = _Zygote()
        return _zygote.run(args, cwd, timeout)
