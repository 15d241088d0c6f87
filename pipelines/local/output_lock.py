"""One run at a time per output folder: a lock file holding the running process's id.

Two runs on one output folder would share the ML Metadata store, the
pipeline root and the serving folder. The lock is an ``fcntl.flock`` on
``<output>/.run.lock``: the kernel releases it when its process exits, how
ever it exits (kill -9 included), so a lock left by a dead run never blocks.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import socket
import sys
from collections.abc import Iterator

LOCK_FILE = ".run.lock"


class OutputInUse(Exception):
    """Another live process holds the output folder's lock."""


def _describe(holder: dict) -> str:
    return (
        f"process {holder.get('pid', '?')} on {holder.get('host', '?')}, started "
        f"{holder.get('started', '?')}: {holder.get('command', '?')}"
    )


@contextlib.contextmanager
def output_lock(output_dir: str) -> Iterator[None]:
    """Holds ``output_dir``'s run lock for the ``with`` block.

    Raises:
      OutputInUse: at once, naming the other run, if a live process holds it.
    """
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, LOCK_FILE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with open(path) as f:
                text = f.read()
            try:
                holder = json.loads(text)
            except ValueError:
                holder = {}
            raise OutputInUse(
                f"{output_dir} is in use by another run ({_describe(holder)}); wait for it to "
                "finish or pass another --output."
            ) from None
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "command": " ".join(["python -m tfrecord_pipelines", *sys.argv[1:]]),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        yield
    finally:
        # Closing the descriptor releases the lock; the file stays for the next run.
        os.close(fd)
