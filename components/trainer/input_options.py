"""How ``make_dataset`` reads, shuffles, batches and places its batches: one frozen object.

Checked when made, each default written once here; light to import (no
TensorFlow), so a command line can check it first.
"""

from __future__ import annotations

import dataclasses

# Consecutive records a reader hands over at once (see ``dataset``'s module docstring).
DEFAULT_READ_BLOCK_SIZE = 16
# Compression types TFRecordDataset reads ("" is none); None infers it from the files.
COMPRESSIONS = ("GZIP", "ZLIB", "NONE", "")
# Prefetch onto the first GPU when one is visible and no multi-replica strategy is active.
AUTO = "auto"


@dataclasses.dataclass(frozen=True)
class InputOptions:
    """``make_dataset``'s tuning: what each setting does to speed and memory.

    Attributes:
      compression: "GZIP", "ZLIB" or "NONE"; None infers it from the file
        names (.gz is GZIP).
      shuffle_buffer_size: serialized records in the training shuffle buffer;
        None: 8 batches. Bigger mixes better and costs memory.
      read_block_size: consecutive records each shard reader hands over at
        once, and the unit the training shuffle moves. Larger is faster (less
        tf.data overhead per record); 1 shuffles single records.
      drop_remainder: drop the last, smaller batch of each pass (static batch
        shape, e.g. for XLA or TPUs).
      seed: seeds the shuffles, for a reproducible training order.
      device: where to prefetch batches: "auto" prefetches onto the first GPU
        when one is visible and no multi-replica strategy is active (Keras
        then distributes the dataset itself); None keeps them on the host;
        or a device name such as "/GPU:0".

    Raises:
      ValueError: for an unknown compression, or a read block or shuffle
        buffer below 1.
    """

    compression: str | None = None
    shuffle_buffer_size: int | None = None
    read_block_size: int = DEFAULT_READ_BLOCK_SIZE
    drop_remainder: bool = False
    seed: int | None = None
    device: str | None = AUTO

    def __post_init__(self):
        if self.compression is not None and self.compression.upper() not in COMPRESSIONS:
            raise ValueError(
                "compression must be GZIP, ZLIB, NONE or None (inferred), "
                f"got {self.compression!r}."
            )
        if self.read_block_size < 1:
            raise ValueError(f"read_block_size must be at least 1, got {self.read_block_size}.")
        if self.shuffle_buffer_size is not None and self.shuffle_buffer_size < 1:
            raise ValueError(
                f"shuffle_buffer_size must be at least 1 or None, got {self.shuffle_buffer_size}."
            )

    def shuffle_records(self, batch_size: int) -> int:
        """The records the training shuffle holds: the buffer asked for, or 8 batches."""
        return self.shuffle_buffer_size or 8 * batch_size
