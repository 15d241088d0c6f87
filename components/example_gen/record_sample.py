"""A sample of a split's records that is the same however an engine grouped them.

The shard plan estimates GZIP's ratio on a sample of each split's records.
A sample of the first records of each bundle or task would depend on how
the engine grouped the records, and so would the plan; this one does not.
It holds every record whose CRC32 is below a threshold, and the threshold is
halved until the sample fits its budget. Samples merge by taking the lower
threshold and halving again as needed; since a part of the records never
needs a lower threshold than the whole, the merged sample is the one the
whole split would give, whatever the order or grouping: Beam and Spark plan
the same shards.
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np

# Bytes of records a sample keeps: enough for GZIP's ratio within a few percent.
SAMPLE_BYTES = 1024 * 1024
_ALL = 2**32


def crc32s(records: list[bytes]) -> np.ndarray:
    """Each record's CRC32 (uint32)."""
    return np.fromiter(map(zlib.crc32, records), dtype=np.uint32, count=len(records))


@dataclasses.dataclass
class RecordSample:
    """Records whose CRC32 is below ``threshold``, at most ``SAMPLE_BYTES`` of them.

    Attributes:
      threshold: records with a smaller CRC32 are in the sample.
      records: ``(crc32, record)`` pairs.
      size: the records' bytes.
    """

    threshold: int = _ALL
    records: list[tuple[int, bytes]] = dataclasses.field(default_factory=list)
    size: int = 0

    def add(self, records: list[bytes], crcs: np.ndarray | None = None) -> None:
        """Adds the records whose CRC32 (``crcs``, when already computed) is below the
        threshold."""
        if crcs is None:
            crcs = crc32s(records)
        crcs = crcs.astype(np.int64)
        for index in np.flatnonzero(crcs < self.threshold).tolist():
            self.records.append((int(crcs[index]), records[index]))
            self.size += len(records[index])
        self._fit()

    def merge(self, other: RecordSample) -> None:
        """Makes this the sample of both samples' records."""
        self.threshold = min(self.threshold, other.threshold)
        self.records = [r for r in self.records + other.records if r[0] < self.threshold]
        self.size = sum(len(record) for _, record in self.records)
        self._fit()

    def sorted_records(self) -> list[bytes]:
        """The records, in an order that depends only on which they are."""
        return [record for _, record in sorted(self.records)]

    def _fit(self) -> None:
        while self.size > SAMPLE_BYTES:
            self.threshold //= 2
            self.records = [r for r in self.records if r[0] < self.threshold]
            self.size = sum(len(record) for _, record in self.records)
