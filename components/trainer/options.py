"""How the Trainer trains: batch sizes, caching, precision, epoch length, images.

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
# "auto" caches the train split in memory in its final form (transformed
# tabular batches, decoded images) when training reads it more than once and
# it is estimated to take less than this: a 224x224 RGB image is 150 KB
# (about 14,000 images); a row of 15 transformed features about 100 bytes
# (about 20 million rows).
AUTO_CACHE_MAX_BYTES = 2 * 1024**3
IMAGE_ARCHITECTURES = ("resnet", "mobilenet_v2", "efficientnet_b0")
CROP = "crop"
FLIP = "flip"
AUGMENTATIONS = (CROP, FLIP)


def check_image_settings(channels: int, augment: tuple[str, ...], prefix: str = "") -> None:
    """Raises ValueError naming the field if the channels or augmentations are unknown."""
    if channels not in (1, 3):
        raise ValueError(f"{prefix}channels must be 1 or 3, got {channels}.")
    unknown = set(augment) - set(AUGMENTATIONS)
    if unknown:
        raise ValueError(
            f"{prefix}augment takes {' and '.join(AUGMENTATIONS)}, got "
            f"{', '.join(sorted(unknown))}."
        )


@dataclasses.dataclass(frozen=True)
class TrainingOptions:
    """The Trainer's settings that are not the model's.

    Attributes:
      batch_size: global training batch (split across GPUs under
        MirroredStrategy). Bigger batches amortize the per-batch cost of
        parsing and of each step; on a GPU, 256 to 4096 for tabular data.
        None: from the training split's size (``training_length.auto_batch_size``:
        64, doubled up to 1024 while an epoch would take over 1,000 steps).
      eval_batch_size: validation batch; None: the training batch.
      cache: "auto" (in memory when the transformed or decoded train split
        fits in AUTO_CACHE_MAX_BYTES and is read more than once), "memory", "none", or a file path
        prefix on fast local disk for a split that does not fit in memory.
        A cache skips reading and parsing after the first epoch. Unless
        "none", the validation batches are held in memory too when they fit
        beside it (``caches.holds_validation``).
      mixed_precision: compute in float16 with float32 variables
        (``mixed_float16``): faster on GPUs with tensor cores, slower on CPUs.
      epochs: passes over the training split to train for, when the
        Trainer's train_steps is not set; neither set: at least one epoch
        and at least 1,000 steps (``training_length``).
      epoch_steps: training steps per Keras epoch: how often validation runs
        and the input stall is reported.
      steps_per_call: training (and validation) steps run in each call into
        the TensorFlow runtime (Keras' ``steps_per_execution``), so that the
        host's per-call cost (Keras' loop, callbacks, dispatch: about 1 ms of
        CPU here) is paid once for them all. None: an epoch's steps, since
        every callback the Trainer runs acts once an epoch (the host stall in
        ``input_stall.json`` shows what is left); 1: Keras' default.
      raw_examples: the Trainer reads ExampleGen's examples and applies the
        Transform graph in its input pipeline (Transform writes no
        transformed copy). Image pipelines do this: a copy would rewrite
        every image's bytes and lose ExampleGen's shard plan, since Beam's
        writer picks its own shard count (one file for small data).
      image_size: image tasks: the model's input side in pixels; None picks
        the median side of a sample of training images, within 32..224.
        Decoding cost grows with the source images, compute with this.
      image_channels: 3 (RGB) or 1 (grayscale).
      image_augment: training augmentations: "crop" (random crops, shifts
        and zooms up to 1/9) and/or "flip" (left-right; not for text or digits).
      image_model: "resnet" (a small residual network, fast to train from
        scratch), "mobilenet_v2" or "efficientnet_b0" (Keras applications,
        untrained: no weights are downloaded).
      data_service: a tf.data service dispatcher (``HOST:PORT``): the training
        input is read, parsed, transformed and decoded on its workers, so the
        trainer's CPUs only feed the accelerator (components/trainer/
        data_service.py). None: on the trainer. Not with a "memory" or file
        cache; "auto" then caches nothing.
    """

    batch_size: int | None = None
    eval_batch_size: int | None = None
    cache: str = CACHE_AUTO
    mixed_precision: bool = False
    epochs: float | None = None
    epoch_steps: int = 200
    steps_per_call: int | None = None
    raw_examples: bool = False
    image_size: int | None = None
    image_channels: int = 3
    image_augment: tuple[str, ...] = (CROP,)
    image_model: str = "resnet"
    data_service: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "image_augment", tuple(self.image_augment))
        for field in ("batch_size", "eval_batch_size", "epoch_steps", "steps_per_call"):
            if getattr(self, field) is not None and getattr(self, field) < 1:
                raise ValueError(f"{field} must be at least 1, got {getattr(self, field)}.")
        if self.epochs is not None and self.epochs <= 0:
            raise ValueError(f"epochs must be positive, got {self.epochs}.")
        if not self.cache:
            raise ValueError(
                "cache must be 'auto', 'none', 'memory' or a file path prefix, got ''."
            )
        if self.image_size is not None and self.image_size < 32:
            raise ValueError(f"image_size must be at least 32 pixels, got {self.image_size}.")
        check_image_settings(self.image_channels, self.image_augment, "image_")
        if self.data_service is not None:
            from tfrecord_pipelines.components.trainer.data_service import DataService

            DataService(self.data_service)  # raises ValueError naming a bad address
            if self.cache not in (CACHE_AUTO, CACHE_NONE):
                raise ValueError(
                    f"cache {self.cache!r} cannot be used with data_service: each worker would "
                    "cache only the shards it happened to read; use 'auto' or 'none'."
                )
        if self.image_model not in IMAGE_ARCHITECTURES:
            raise ValueError(
                f"image_model must be one of {', '.join(IMAGE_ARCHITECTURES)}, "
                f"got {self.image_model!r}."
            )

    def eval_batch(self, batch_size: int) -> int:
        """The validation batch: ``eval_batch_size``, or the training ``batch_size``."""
        return self.eval_batch_size or batch_size

    @property
    def steps_a_call(self) -> int:
        """The steps each call runs: ``steps_per_call``, or an epoch's."""
        return self.steps_per_call or self.epoch_steps

    def to_custom_config(self) -> dict[str, Any]:
        """Returns the JSON-serializable custom_config entry for these options."""
        return {CUSTOM_CONFIG_KEY: dataclasses.asdict(self)}

    @classmethod
    def from_custom_config(cls, custom_config: dict[str, Any] | None) -> TrainingOptions:
        """Reads the options back; the defaults where custom_config has none."""
        return cls(**(custom_config or {}).get(CUSTOM_CONFIG_KEY, {}))
