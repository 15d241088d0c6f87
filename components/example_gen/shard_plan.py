"""How many TFRecord shards a split gets, and which shard each record goes to.

Readers want shards of roughly 100-200 MB, and at least as many shards as
there are reading workers (about 10 per training server). A split of B bytes
with a target of T bytes per shard gets B/T shards rounded to a whole number:
when the remainder is under a quarter of T it is spread over the full shards
(each stays within +25% of T); otherwise it becomes one last, smaller shard.
More readers than that raises the count to one shard per reader, in equal
shares. An explicit shard count replaces the size rule. No split gets more
shards than its records fill (``MIN_RECORDS_PER_SHARD`` each); when the
reader floor or that cap changes the count the size or the user asked for,
the plan says so in one line (``ShardPlan.adjusted``). Records are assigned
by a hash of their bytes, so the assignment is deterministic and needs no
coordination between workers.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import zlib

DEFAULT_TARGET_SHARD_BYTES = 128 * 1024 * 1024
# Workers expected to read a split in parallel: about 10 per training server.
DEFAULT_NUM_READERS = 10
# Below this many records per shard, hashing may leave a shard empty.
MIN_RECORDS_PER_SHARD = 32
# Length (8 bytes) and two CRCs (4 bytes each) framing every TFRecord.
TFRECORD_FRAMING_BYTES = 16
# A remainder smaller than this share of the target is spread, not given a shard.
_SPREAD_REMAINDER_BELOW = 0.25

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]i?B|B)?\s*$", re.IGNORECASE)
_UNITS = {
    None: 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3,
}  # fmt: skip


def parse_size(text: str) -> int:
    """Parses a byte size such as '128MiB', '64 KiB', '1.5GB' or '4096'.

    Raises:
      ValueError: if the text is not a size.
    """
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"Size {text!r} is not a byte size such as 128MiB, 64KiB or 1GB.")
    number, unit = match.groups()
    size = int(float(number) * _UNITS[unit.lower() if unit else None])
    if size < 1:
        raise ValueError(f"Size {text!r} must be at least 1 byte.")
    return size


@dataclasses.dataclass(frozen=True)
class ShardingOptions:
    """What the writer aims for.

    Attributes:
      target_shard_bytes: bytes per shard file on disk (after compression).
        Readers read each shard sequentially; 100-200 MB keeps reads long and
        the file count small. Smaller shards only pay off for more readers.
      num_readers: workers that will read the data in parallel (about 10 per
        training server); the shard count is raised to at least this when
        there are enough records. None: size alone decides.
      num_shards: shards per split, exactly (data allowing), instead of
        the count the target size gives; the reader floor still applies.
    """

    target_shard_bytes: int = DEFAULT_TARGET_SHARD_BYTES
    num_readers: int | None = None
    num_shards: int | None = None

    def __post_init__(self):
        if self.target_shard_bytes < 1:
            raise ValueError(
                f"target_shard_bytes must be at least 1, got {self.target_shard_bytes}."
            )
        if self.num_readers is not None and self.num_readers < 1:
            raise ValueError(f"num_readers must be at least 1, got {self.num_readers}.")
        if self.num_shards is not None and self.num_shards < 1:
            raise ValueError(f"num_shards must be at least 1, got {self.num_shards}.")


def requested_sharding(
    target_shard_bytes: int | None = None,
    num_shards: int | None = None,
    num_readers: int | None = None,
) -> ShardingOptions:
    """The sharding a user's settings ask for, None standing for "not set".

    Nothing set: the default target size and the default floor of
    ``DEFAULT_NUM_READERS`` readers. A target size or a shard count that was
    set wins over the default floor: the floor applies only when the reader
    count is set too (the plan then says when it raised the count).

    Raises:
      ValueError: if both a target size and a shard count are set, or a value is below 1.
    """
    if target_shard_bytes is not None and num_shards is not None:
        raise ValueError(
            "Set a target shard size or a shard count, not both: the count would ignore the size."
        )
    explicit = target_shard_bytes is not None or num_shards is not None
    return ShardingOptions(
        target_shard_bytes=target_shard_bytes or DEFAULT_TARGET_SHARD_BYTES,
        num_readers=num_readers if num_readers is not None or explicit else DEFAULT_NUM_READERS,
        num_shards=num_shards,
    )


@dataclasses.dataclass(frozen=True)
class ShardPlan:
    """The shard layout chosen for one split.

    Attributes:
      num_shards: how many shard files the split is written to.
      weights: each shard's share of the records, summing to 1.
      estimated_bytes: the split's expected size on disk.
      num_records: records in the split, as measured before writing.
      adjusted: empty, or one line saying why the count differs from the one
        asked for (the target size's or ``num_shards``).
    """

    num_shards: int
    weights: tuple[float, ...]
    estimated_bytes: int
    num_records: int = 0
    adjusted: str = ""

    def shard_of(self, record: bytes) -> int:
        """Returns the shard index for a serialized record (deterministic)."""
        return int(self.shards_of([zlib.crc32(record)])[0])

    def shards_of(self, crcs):
        """Returns each record's shard index (a numpy array), given the records' CRC32s,
        for a whole batch.

        CRC32, not the split's hash: reusing the split hash would send a split's
        records to only some shards.
        """
        import numpy as np  # here: the command line reads this module before its checks

        crcs = np.asarray(crcs, dtype=np.uint32)
        if self.num_shards == 1:
            return np.zeros(len(crcs), dtype=np.int64)
        positions = crcs.astype(np.float64) / 2**32
        shards = np.searchsorted(np.array(self._boundaries), positions, side="right")
        return np.minimum(shards, self.num_shards - 1)

    @functools.cached_property
    def _boundaries(self) -> list[float]:
        # Once per plan, not per record: a split of millions of records asks for it each time.
        total, bounds = 0.0, []
        for weight in self.weights[:-1]:
            total += weight
            bounds.append(total)
        return bounds


def plan_shards(estimated_bytes: int, num_records: int, options: ShardingOptions) -> ShardPlan:
    """Chooses the shard count and shares for a split; see the module docstring.

    Args:
      estimated_bytes: the split's expected size on disk (compressed if it will be).
      num_records: records in the split.
      options: the target size and reader count.

    Returns:
      The plan; it never has more shards than num_records / MIN_RECORDS_PER_SHARD
      (at least one), so no shard is left empty.
    """
    if num_records < 1:
        raise ValueError("A split with no records cannot be sharded.")
    if options.num_shards:
        weights = [1.0] * options.num_shards
    else:
        ratio = estimated_bytes / options.target_shard_bytes
        full = max(1, math.floor(ratio))
        remainder = ratio - full if ratio >= 1 else 0.0
        weights = [1.0] * full + ([remainder] if remainder >= _SPREAD_REMAINDER_BELOW else [])
    asked, adjusted = len(weights), ""
    if options.num_readers and options.num_readers > len(weights):
        weights = [1.0] * options.num_readers
        adjusted = (
            f"raised from {asked} to {len(weights)} shards: one per reader, "
            f"{options.num_readers} readers"
        )
    most = max(1, num_records // MIN_RECORDS_PER_SHARD)
    if len(weights) > most:
        wanted = f"{len(weights)}{' (one per reader)' if adjusted else ''}"
        weights = [1.0] * most
        adjusted = (
            f"capped at {most} shards, not {wanted}: {num_records:,} records fill "
            f"{most} of at least {MIN_RECORDS_PER_SHARD} records"
            if most != asked
            else ""
        )
    total = sum(weights)
    return ShardPlan(
        num_shards=len(weights),
        weights=tuple(w / total for w in weights),
        estimated_bytes=estimated_bytes,
        num_records=num_records,
        adjusted=adjusted,
    )
