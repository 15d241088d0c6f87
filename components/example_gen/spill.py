"""Encoded records go to disk as soon as they are made, not into the runner's memory.

The shard plan needs each split's record count and size before any shard is
written, so the records wait somewhere while the splits are measured. Held
as a PCollection, they would all sit in the local runner's memory (a 1 GB
CSV becomes more than 1 GB of records); written to a spill file per split
per bundle, only their count, size and a small sample travel on, and memory
stays bounded by what one bundle's block holds. The writer reads each spill
file once and deletes it.

Beside each spill file, an index holds each record's length and CRC32 (the
CRC32 the compression sample and the shard plan use), so that the writer
deals a whole file's records to their shards with numpy and byte slices of
the file as written, framing included, instead of a call per record.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tensorflow as tf

from tfrecord_pipelines.components.example_gen.record_sample import RecordSample, crc32s
from tfrecord_pipelines.components.storage import filesystem

_PROGRESS_EVERY = 250_000
# One entry of a spill file's index.
_INDEX = np.dtype([("length", "<u8"), ("crc32", "<u4")])


@dataclasses.dataclass(frozen=True)
class Spilled:
    """One spill file of one split's records.

    Attributes:
      split: the split the records belong to.
      path: the uncompressed TFRecord file holding them.
      records: how many.
      bytes: their serialized size.
      sample: a sample of them, to estimate GZIP's ratio (``record_sample``).
    """

    split: str
    path: str
    records: int
    bytes: int
    sample: RecordSample


def _index_path(path: str) -> str:
    return path + ".index"


def read_index(path: str) -> tuple[np.ndarray, np.ndarray]:
    """Returns a spill file's records' lengths (int64) and CRC32s (uint32), in order."""
    with filesystem.open_file(_index_path(path), "rb") as f:
        index = np.frombuffer(f.read(), dtype=_INDEX)
    return index["length"].astype(np.int64), index["crc32"]


def remove_spilled(path: str) -> None:
    """Removes a spill file and its index."""
    filesystem.remove(path)
    filesystem.remove(_index_path(path))


class SpillWriter:
    """Writes ``(split, [record])`` batches to one spill file per split.

    Engine-neutral: a Beam bundle or a Spark task makes one, names its files
    ``<split>-<name>.tfrecord`` in ``spill_dir``, and ``close`` returns a
    ``Spilled`` per file. Prints progress every 250,000 records (per process).
    """

    _seen = 0  # per process, across writers

    def __init__(self, spill_dir: str, name: str):
        self._spill_dir = spill_dir
        self._name = name
        self._open: dict[str, dict] = {}

    def add(self, split: str, records: list[bytes]) -> None:
        """Writes one split's records."""
        entry = self._open.get(split)
        if entry is None:
            filesystem.make_folder(self._spill_dir)
            path = os.path.join(self._spill_dir, f"{split}-{self._name}.tfrecord")
            entry = self._open[split] = {
                "writer": tf.io.TFRecordWriter(path), "path": path, "records": 0,
                "bytes": 0, "sample": RecordSample(),
                "index": filesystem.open_file(_index_path(path), "wb"),
            }  # fmt: skip
        write = entry["writer"].write
        for record in records:
            write(record)
        index = np.empty(len(records), dtype=_INDEX)
        index["length"] = np.fromiter(map(len, records), dtype=np.uint64, count=len(records))
        index["crc32"] = crc32s(records)
        entry["index"].write(index.tobytes())
        entry["records"] += len(records)
        entry["bytes"] += int(index["length"].sum())
        entry["sample"].add(records, index["crc32"])
        before = SpillWriter._seen
        SpillWriter._seen += len(records)
        if SpillWriter._seen // _PROGRESS_EVERY > before // _PROGRESS_EVERY:
            print(
                f"  ... {SpillWriter._seen:,} examples converted by worker {os.getpid()}",
                flush=True,
            )

    def flush(self) -> None:
        """Makes what was written so far readable (for fault tests and progress)."""
        for entry in self._open.values():
            entry["writer"].flush()
            entry["index"].flush()

    def close(self) -> list[Spilled]:
        """Closes the files; returns what each holds."""
        spilled = []
        for split, entry in self._open.items():
            entry["writer"].close()
            entry["index"].close()
            spilled.append(
                Spilled(split, entry["path"], entry["records"], entry["bytes"], entry["sample"])
            )
        self._open = {}
        return spilled
