"""Writes a split's serialized records to TFRecord shards of a planned size.

The input is ``spill.Spilled`` files, one split's records each: one
element or task per file, not per record, keeps an engine's cost per element
out of the cost per record, and the records out of memory. Engine-neutral:
``beam.shards`` runs these steps on Beam, ``spark/shard_stage`` on Spark.

TFX's writer leaves the shard count to the runner (one file for small data on
the DirectRunner). Here the split is measured first (records, bytes, and for
GZIP the compression ratio of a sample), the shard plan is made from that,
and each bundle writes its records, compressed, to one piece per planned
shard; each shard's pieces are then joined byte for byte by one worker
(GZIP pieces are GZIP members, read in sequence). Shard files get
temporary names; ``finalize_split`` gives them their final
``data_tfrecord-SSSSS-of-NNNNN[.gz]`` names and returns the outcome.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Iterable

import numpy as np

from tfrecord_pipelines.components.example_gen.record_sample import RecordSample
from tfrecord_pipelines.components.example_gen.shard_compression import (
    GZIP,
    gzip_compressor,
    gzip_size,
    parse_compression,
)
from tfrecord_pipelines.components.example_gen.shard_plan import (
    TFRECORD_FRAMING_BYTES,
    ShardingOptions,
    ShardPlan,
    plan_shards,
)
from tfrecord_pipelines.components.example_gen.spill import Spilled, read_index
from tfrecord_pipelines.components.storage import filesystem

SHARD_PREFIX = "data_tfrecord"
# Merged shards wait under this prefix until finalize_split numbers them.
TEMP_SHARD_PREFIX = ".shard-"
_COPY_BYTES = 16 * 2**20
# Bytes of a spill file dealt at a time (at least one record).
_CHUNK_BYTES = 16 * 2**20


def pieces_dir(split_dir: str) -> str:
    """Returns where a split's shard pieces wait to be merged (outside Split-<name>/)."""
    return split_dir.rstrip("/") + ".pieces"


def shard_suffix(compression: str) -> str:
    """Returns the file suffix; readers detect GZIP by '.gz'."""
    return ".gz" if parse_compression(compression)[0] == GZIP else ""


def new_measure() -> list:
    """Returns an empty measure: records, bytes, and a sample to measure compression."""
    return [0, 0, RecordSample()]


def add_to_measure(measure: list, records: int, size: int, sample: RecordSample) -> list:
    """Adds a part of the split (a spill file, another measure) to a measure; returns it."""
    measure[0] += records
    measure[1] += size
    measure[2].merge(sample)
    return measure


def measure_split(spilled: Iterable[Spilled]) -> list:
    """Returns a split's measure (records, bytes, sample) for ``plan_split``."""
    measure = new_measure()
    for one in spilled:
        add_to_measure(measure, one.records, one.bytes, one.sample)
    return measure


def _framed(record: bytes) -> bytes:
    # The real framing has masked CRC32Cs; a CRC32 compresses the same way.
    length = struct.pack("<Q", len(record))
    return (
        length
        + struct.pack("<I", zlib.crc32(length))
        + record
        + struct.pack("<I", zlib.crc32(record))
    )


def plan_split(measure, options: ShardingOptions, compression: str) -> ShardPlan | None:
    """Returns the shard plan of a measured split (None when it has no records)."""
    count, size, sample = measure
    if count == 0:
        return None
    on_disk = size + TFRECORD_FRAMING_BYTES * count
    kind, level = parse_compression(compression)
    if kind == GZIP and sample.records:
        raw = b"".join(_framed(r) for r in sample.sorted_records())
        on_disk = int(on_disk * gzip_size(raw, level) / len(raw))
    return plan_shards(on_disk, count, options)


class _Piece:
    """One piece file, compressed as it is written."""

    def __init__(self, path: str, compressor):
        self.path = path
        self.records = 0
        self._file = filesystem.open_file(path, "wb")
        self._compressor = compressor

    def write(self, framed: bytes, records: int) -> None:
        self._file.write(self._compressor.compress(framed) if self._compressor else framed)
        self.records += records

    def close(self) -> None:
        if self._compressor:
            self._file.write(self._compressor.flush())
        self._file.close()


class PieceWriter:
    """Writes records into one piece file per planned shard, compressed.

    A piece is a complete TFRecord file in the shard's compression: GZIP
    pieces are GZIP members, which TensorFlow's and Beam's readers read one
    after the other when concatenated, as RFC 1952 allows. So a shard is its
    pieces' bytes joined (``merge_pieces``), with no record read or written
    again. Only piece paths travel to the step that gathers a shard, never
    the records. Engine-neutral: a Beam bundle or a Spark task makes one and
    names its pieces ``<name>-<shard>``.

    A spill file is dealt a chunk at a time: the records' shards from their
    CRC32s in the spill's index (numpy), and each shard's records copied as
    the byte ranges they occupy in the spill file, framing and CRC32Cs as
    TensorFlow wrote them; no record is parsed or framed again.
    """

    def __init__(self, pieces_dir: str, compression: str, name: str):
        kind, level = parse_compression(compression)
        self._compressor = (lambda: gzip_compressor(level)) if kind == GZIP else (lambda: None)
        self._pieces_dir = pieces_dir
        self._name = name
        self._pieces: dict[int, _Piece] = {}

    def write(self, spill_path: str, plan: ShardPlan) -> None:
        """Deals a spill file's records to their shards' pieces."""
        lengths, crcs = read_index(spill_path)
        shards = plan.shards_of(crcs)
        ends = np.cumsum(lengths + TFRECORD_FRAMING_BYTES)
        starts = ends - lengths - TFRECORD_FRAMING_BYTES
        with filesystem.open_binary(spill_path) as spill:
            first = 0
            while first < len(lengths):
                last = max(first + 1, int(np.searchsorted(ends, starts[first] + _CHUNK_BYTES)))
                chunk = memoryview(spill.read(int(ends[last - 1] - starts[first])))
                self._deal(chunk, starts[first:last] - starts[first], shards[first:last])
                first = last

    def _deal(self, chunk: memoryview, starts: np.ndarray, shards: np.ndarray) -> None:
        """Writes a chunk's records (at ``starts`` in it) to their ``shards``' pieces."""
        ends = np.append(starts[1:], len(chunk))
        for shard in np.unique(shards).tolist():
            chosen = np.flatnonzero(shards == shard)
            if len(chosen) == len(shards):
                framed = chunk
            else:
                ranges = zip(starts[chosen].tolist(), ends[chosen].tolist(), strict=True)
                framed = b"".join([chunk[a:b] for a, b in ranges])
            self._piece(shard).write(framed, len(chosen))

    def _piece(self, shard: int) -> _Piece:
        piece = self._pieces.get(shard)
        if piece is None:
            filesystem.make_folder(self._pieces_dir)
            path = os.path.join(self._pieces_dir, f"{self._name}-{shard:05d}")
            piece = self._pieces[shard] = _Piece(path, self._compressor())
        return piece

    def close(self) -> list[tuple[int, tuple[str, int]]]:
        """Closes the pieces; returns ``(shard, (piece path, records))`` of each."""
        pieces = []
        for shard, piece in self._pieces.items():
            piece.close()
            pieces.append((shard, (piece.path, piece.records)))
        self._pieces = {}
        return pieces


def temp_shard_name(index: int, compression: str) -> str:
    """Returns a merged shard's name until ``finalize_split`` numbers it."""
    return f"{TEMP_SHARD_PREFIX}{index:05d}{shard_suffix(compression)}"


def merge_pieces(pieces: Iterable[tuple[str, int]], path: str, *, remove: bool) -> int:
    """Joins pieces, byte for byte and in path order, into ``path``; returns the records.

    ``remove`` deletes each piece once copied (an engine that may retry the
    merge keeps them; ``finalize_split`` removes what is left); a shard of
    one piece is then that piece, renamed.
    """
    pieces = sorted(pieces)
    if remove and len(pieces) == 1:
        ((piece, count),) = pieces
        filesystem.replace(piece, path)
        return count
    count = 0
    with filesystem.open_file(path, "wb") as shard:
        for piece, piece_count in pieces:
            with filesystem.open_file(piece, "rb") as f:
                while chunk := f.read(_COPY_BYTES):
                    shard.write(chunk)
            count += piece_count
            if remove:
                filesystem.remove(piece)
    return count


def write_outcome(shards: list[dict], plan: ShardPlan | None, path: str) -> None:
    """Writes a split's plan and merged shards ({"index", "path", "records"}) for finalize."""
    outcome = {
        "planned_shards": plan.num_shards if plan else 0,
        "shards_adjusted": plan.adjusted if plan else "",
        "estimated_bytes": plan.estimated_bytes if plan else 0,
        "records_measured": plan.num_records if plan else 0,
        "shards": sorted(shards, key=lambda s: s["index"]),
    }
    with filesystem.open_file(path, "w") as f:
        json.dump(outcome, f)


def finalize_split(split_dir: str, outcome_path: str, compression: str) -> dict:
    """Renames a split's shards to their final names and returns its outcome.

    Returns:
      ``{"planned_shards", "shards_adjusted", "estimated_bytes", "records_measured", "records",
      "bytes", "shards": [{"file", "records", "bytes"}, ...]}``; shards
      numbered without gaps.

    Raises:
      RuntimeError: if fewer records were written than were measured, so
        that a runner's loss of data never passes silently.
    """
    with filesystem.open_file(outcome_path) as f:
        outcome = json.load(f)
    filesystem.remove(outcome_path)
    # Pieces of retried bundles were never merged.
    if filesystem.exists(pieces_dir(split_dir)):
        filesystem.remove_tree(pieces_dir(split_dir))
    shards = outcome.pop("shards")
    finals = []
    for number, shard in enumerate(shards):
        name = f"{SHARD_PREFIX}-{number:05d}-of-{len(shards):05d}{shard_suffix(compression)}"
        final = os.path.join(split_dir, name)
        filesystem.replace(shard["path"], final)
        finals.append({"file": name, "records": shard["records"], "bytes": filesystem.size(final)})
    outcome["shards"] = finals
    outcome["records"] = sum(s["records"] for s in finals)
    outcome["bytes"] = sum(s["bytes"] for s in finals)
    if outcome["records"] != outcome["records_measured"]:
        raise RuntimeError(
            f"{split_dir}: {outcome['records_measured']:,} records reached the writer but "
            f"{outcome['records']:,} were written; the Beam runner lost records. Rerun, or "
            "use another runner (--beam-arg=--direct_running_mode=in_memory)."
        )
    return outcome
