"""What the Trainer keeps in memory between epochs: its caches, sized before they are made."""

from __future__ import annotations

import math
import os

import tensorflow as tf

from tfrecord_pipelines.components.trainer.options import (
    AUTO_CACHE_MAX_BYTES,
    CACHE_AUTO,
    CACHE_MEMORY,
    CACHE_NONE,
)
from tfrecord_pipelines.components.trainer.training_length import TrainingLength


def tensor_bytes(feature_spec: dict) -> int:
    """Roughly the bytes one record's parsed features take in memory.

    Fixed-length features by their shape and type (a string counted as 32
    bytes); variable-length ones as 8 values.
    """
    total = 0
    for feature in feature_spec.values():
        size = 32 if feature.dtype == tf.string else feature.dtype.size
        values = math.prod(feature.shape) if isinstance(feature, tf.io.FixedLenFeature) else 8
        total += size * max(values, 1)
    return total


def resolve_cache(
    cache: str, bytes_per_record: int, run_id: str, length: TrainingLength
) -> str | None:
    """Turns the cache option into make_dataset's cache argument for this run.

    "auto" caches in memory when training reads the train split more than
    once and its records, at ``bytes_per_record`` in their cached form, take
    less than ``AUTO_CACHE_MAX_BYTES``.
    """
    if cache == CACHE_NONE:
        return None
    if cache == CACHE_MEMORY:
        return CACHE_MEMORY
    if cache == CACHE_AUTO:
        if length.epochs <= 1:
            return None  # nothing is read twice: a cache would only cost its memory
        estimated = length.train_records * bytes_per_record
        return CACHE_MEMORY if estimated < AUTO_CACHE_MAX_BYTES else None
    # A folder: each run caches in its own sub-folder, so no run reads another's cache.
    return os.path.join(cache, run_id, "train")


def holds_validation(
    cache: str,
    bytes_per_record: int,
    validation_records: int | None,
    validations: int,
    train_cache: str | None,
    length: TrainingLength,
) -> bool:
    """Whether the validation batches are kept in memory after the first validation.

    Keras starts the validation input afresh every epoch, so each validation
    reads, parses and transforms the same first batches again. They are held
    unless the cache option is "none", validation runs once, its records are
    not counted (no ``eval_steps``: the whole eval split each time) or, at
    ``bytes_per_record`` in their cached form, they do not fit in what the
    train split's memory cache leaves of ``AUTO_CACHE_MAX_BYTES``.
    """
    if cache == CACHE_NONE or validation_records is None or validations <= 1:
        return False
    in_memory = length.train_records * bytes_per_record if train_cache == CACHE_MEMORY else 0
    return validation_records * bytes_per_record + in_memory < AUTO_CACHE_MAX_BYTES


def held(evaluation: tf.data.Dataset, steps: int) -> tf.data.Dataset:
    """The first ``steps`` batches of ``evaluation`` (an endless dataset), kept in memory
    from the first pass on."""
    # take() of an endless dataset has a known length: the cache is complete once a pass
    # has read ``steps`` batches, the most Keras asks for. Of a dataset of unknown length
    # it would be dropped unless a pass read past its end.
    return evaluation.take(steps).cache()
