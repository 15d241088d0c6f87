"""How the Trainer trains: batch sizes, caching, precision, epoch length.

Travels in the Trainer's ``custom_config`` beside the ``Task``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

CUSTOM_CONFIG_KEY = "training"
CACHE_AUTO = "auto"
CACHE_NONE = "none"
CACHE_MEMORY = "memory"
# The cache settings that are not a folder.
CACHE_MODES = (CACHE_AUTO, CACHE_NONE, CACHE_MEMORY)
# "auto" caches the transformed train split in memory when its files take
# less than this on disk (parsed tensors take several times more).
AUTO_CACHE_MAX_FILE_BYTES = 100 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class TrainingOptions:
    """The Trainer's settings that are not the model's.

    Attributes:
      batch_size: global training batch (split across GPUs under
        MirroredStrategy). Bigger batches amortize the per-batch cost of
        parsing and of each step; on a GPU, 256 to 4096 for tabular data.
      eval_batch_size: validation batch.
      cache: "auto" (in memory when the transformed train split is small,
        see AUTO_CACHE_MAX_FILE_BYTES), "memory", "none", or a file path
        prefix on fast local disk for a split that does not fit in memory.
        A cache skips reading and parsing after the first epoch.
      mixed_precision: compute in float16 with float32 variables
        (``mixed_float16``): faster on GPUs with tensor cores, slower on CPUs.
      epoch_steps: training steps per Keras epoch: how often validation runs
        and the input stall is reported.
    """

    batch_size: int = 64
    eval_batch_size: int = 64
    cache: str = CACHE_AUTO
    mixed_precision: bool = False
    epoch_steps: int = 200

    def __post_init__(self):
        for field in ("batch_size", "eval_batch_size", "epoch_steps"):
            if getattr(self, field) < 1:
                raise ValueError(f"{field} must be at least 1, got {getattr(self, field)}.")
        if not self.cache:
            raise ValueError(
                "cache must be 'auto', 'none', 'memory' or a file path prefix, got ''."
            )

    def to_custom_config(self) -> dict[str, Any]:
        """Returns the JSON-serializable custom_config entry for these options."""
        return {CUSTOM_CONFIG_KEY: dataclasses.asdict(self)}

    @classmethod
    def from_custom_config(cls, custom_config: dict[str, Any] | None) -> TrainingOptions:
        """Reads the options back; the defaults where custom_config has none."""
        return cls(**(custom_config or {}).get(CUSTOM_CONFIG_KEY, {}))
