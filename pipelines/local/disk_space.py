"""Disk space: a rough need for a run, and one line when a write finds the disk full.

A full disk surfaces from many layers (Python's OSError, TensorFlow's and
Beam's wrapped errors, SQLite's "database or disk is full" from ML Metadata);
all of them become one line naming the folder, what is free and what a run
needs.
"""

from __future__ import annotations

import errno
import os
import re
import shutil

from tfrecord_pipelines.components.example_gen.shard_compression import parse_compression

_FULL_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_FULL_DISK_SIGNS = (
    "No space left on device",
    "Disk quota exceeded",
    "database or disk is full",
    "[Errno 28]",
)
# SQLite rolls a transaction back when a write finds the disk full, and ML Metadata's
# COMMIT then fails with this instead of "database or disk is full": a full disk when
# the output's disk is as good as full.
_ROLLED_BACK_COMMIT = "cannot commit - no transaction is active"
_NEARLY_FULL_BYTES = 4 * 2**20
# Besides its shards, a run writes statistics, a schema, the Transform graph,
# the model three times (Trainer, Pusher's archive, serving folder), the
# evaluation and the metadata store: 1.7 MiB in all on the bundled penguins;
# an image model (MobileNetV2: 9 MiB) three times for images.
_FIXED_RUN_BYTES = {True: 4 * 2**20, False: 48 * 2**20}
# Shards per input byte: GZIP shards of CSV (ISA-L's deflate) take about 0.7 of
# the CSV; images are stored as they are. Tabular data is written twice (ExampleGen, Transform).
_SHARD_BYTES_PER_INPUT_BYTE = {"gzip": 0.75, "none": 1.1}
# While ExampleGen plans its shards, its records wait uncompressed in spill
# files (components/example_gen/spill.py): about 3x a CSV (9 columns of short
# values), about 1x images, on top of the shards being written.
_SPILL_BYTES_PER_INPUT_BYTE = {True: 3.2, False: 1.05}


class DiskFull(Exception):
    """A write found the output's disk full; the message is the one line to print."""


def tree_bytes(folder: str) -> int:
    """Bytes of the files under ``folder`` (0 if it is missing)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def estimated_run_bytes(input_bytes: int, compression: str, tabular: bool) -> int:
    """About how much disk a first run on ``input_bytes`` of data needs at its peak.

    The larger of what the finished run holds and what ExampleGen holds while
    it converts (its spill files and the shards it writes).
    """
    shards = _SHARD_BYTES_PER_INPUT_BYTE[parse_compression(compression)[0]] * input_bytes
    finished = _FIXED_RUN_BYTES[tabular] + (2 if tabular else 1) * shards
    converting = _SPILL_BYTES_PER_INPUT_BYTE[tabular] * input_bytes + shards
    return int(max(finished, converting))


def human(size: float) -> str:
    """``size`` bytes as KiB, MiB or GiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def _full_disk_error(error: BaseException) -> tuple[bool, str | None]:
    """(whether ``error`` or what caused it is a full disk, the path it names if any)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _FULL_DISK_ERRNOS:
            return True, error.filename
        text = str(error)
        if any(sign in text for sign in _FULL_DISK_SIGNS):
            path = re.search(r"(/[^\s'\":;,]+)", text)
            return True, path.group(1) if path else None
        error = error.__cause__ or error.__context__
    return False, None


def _nearly_full(output_dir: str) -> bool:
    try:
        return shutil.disk_usage(output_dir).free < _NEARLY_FULL_BYTES
    except OSError:
        return False


def disk_full_message(error: BaseException, output_dir: str, needed: int | None) -> str | None:
    """One line for a full-disk failure under ``output_dir``; None if ``error`` is another one."""
    full, path = _full_disk_error(error)
    if not full and not (_ROLLED_BACK_COMMIT in str(error) and _nearly_full(output_dir)):
        return None
    usage = shutil.disk_usage(output_dir)
    writing = f" while writing {path}" if path else ""
    need = f"; a run on this data needs about {human(needed)}" if needed else ""
    return (
        f"No space left on the disk of {output_dir}{writing}: {human(usage.free)} free of "
        f"{human(usage.total)}, this output folder holds {human(tree_bytes(output_dir))}{need}. "
        "Nothing half-written was published; free space or pass --output on a larger disk, "
        "then run again: finished steps are reused."
    )


def check_disk_full(error: BaseException, output_dir: str, needed: int | None = None) -> None:
    """Raises DiskFull with one line if ``error`` comes from a full disk; else returns."""
    message = disk_full_message(error, output_dir, needed)
    if message:
        raise DiskFull(message) from error
