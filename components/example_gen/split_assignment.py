"""Which split each record goes to: a stable hash, computed for a whole batch at once.

TFX's ExampleGen hashes each record in Python as it passes (``_PartitionFn``);
here a batch of records (or of key values, with ``partition_feature_name``)
is hashed in one call to pandas' SipHash with its fixed key, so the
assignment is the same in every run, process and runner. A record's bucket is
its hash modulo the sum of the splits' ``hash_buckets``; the buckets are
dealt to the splits in order, as TFX does.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pyarrow as pa
from pandas.util import hash_array
from tfx.proto import example_gen_pb2


class SplitRecords(NamedTuple):
    """A batch of one split's records, as a converter yields them.

    Attributes:
      split: the split's name.
      records: serialized tf.Examples.
      columns: the same rows as the feature columns they were encoded from,
        for statistics without decoding the records again; None if the
        converter has none.
    """

    split: str
    records: list[bytes]
    columns: pa.RecordBatch | None = None


@dataclasses.dataclass(frozen=True)
class SplitAssigner:
    """The splits and how records are dealt to them.

    Attributes:
      names: split names, in the output config's order.
      hash_buckets: each split's share of the buckets.
      key: a feature whose value decides the split (rows sharing it stay
        together), or None to hash the whole record.
    """

    names: tuple[str, ...]
    hash_buckets: tuple[int, ...]
    key: str | None = None

    def __post_init__(self):
        if not self.names or len(self.names) != len(self.hash_buckets):
            raise ValueError(f"Give one hash_buckets weight per split, got {self.hash_buckets}.")
        if any(b < 1 for b in self.hash_buckets):
            raise ValueError(f"hash_buckets must be positive, got {self.hash_buckets}.")

    @classmethod
    def from_output_config(cls, output_config: example_gen_pb2.Output) -> SplitAssigner:
        """Returns the assigner of a TFX output config with a split_config."""
        splits = output_config.split_config.splits
        return cls(
            names=tuple(s.name for s in splits),
            hash_buckets=tuple(s.hash_buckets for s in splits),
            key=output_config.split_config.partition_feature_name or None,
        )

    def split_indices(self, hashed: np.ndarray) -> np.ndarray:
        """Returns each row's split index, given the rows' hashed values (records or keys)."""
        values = np.empty(len(hashed), dtype=object)
        values[:] = hashed
        # categorize=False: the same hashes, without first finding the unique
        # values (a second hash of every record, all of them distinct).
        buckets = hash_array(values, categorize=False) % np.uint64(sum(self.hash_buckets))
        bounds = np.cumsum(self.hash_buckets)
        return np.searchsorted(bounds, buckets.astype(np.int64), side="right")

    def assign(
        self,
        records: list[bytes],
        keys: np.ndarray | None = None,
        columns: pa.RecordBatch | None = None,
    ):
        """Yields a ``SplitRecords`` for each split that receives records.

        Args:
          records: serialized examples.
          keys: the key feature's value per record (text), when ``key`` is set.
          columns: the records' feature columns, dealt to the splits alike.
        """
        if not records:
            return
        indices = self.split_indices(keys if self.key else records)
        everything = np.empty(len(records), dtype=object)
        everything[:] = records
        for index, name in enumerate(self.names):
            chosen = indices == index
            if chosen.any():
                yield SplitRecords(
                    name,
                    everything[chosen].tolist(),
                    None if columns is None else columns.filter(pa.array(chosen)),
                )
