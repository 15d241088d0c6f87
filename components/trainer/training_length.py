"""How long the Trainer trains, from the data's size, and what it then saw.

Training length is asked for in steps (``train_steps``), in passes over the
training split (``epochs``), or not at all: then at least one epoch and at
least ``DEFAULT_MIN_STEPS`` steps, so small data still gets enough updates
and large data is seen whole. The training split's size comes from
ExampleGen's shard plan (``shard_plan.json`` beside the split folders), or,
for examples without one, from counting the records once.

What the model saw (steps, examples, epochs) is written to ``training.json``
in the model run folder, for the run summary and the report.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
from collections.abc import Sequence

import tensorflow as tf

from tfrecord_pipelines.components.example_gen.shard_plan_report import read_shard_plan
from tfrecord_pipelines.components.keys import SPLIT_FOLDER_PREFIX
from tfrecord_pipelines.components.storage import filesystem

# Without a train_steps or epochs: at least one epoch, and at least this many steps.
DEFAULT_MIN_STEPS = 1000
# The automatic batch: from the smallest, doubled while an epoch takes more
# steps than the target, up to the largest. Per batch, the input pipeline and
# each step pay a fixed cost (parsing and transforming a batch, handing it
# over, launching the step): at 64 examples a small tabular model's 2-3 ms
# step waited for input 15-20% of the time on 2 cores (benchmarks/pipeline_scale.py).
AUTO_BATCH_SIZES = (64, 1024)
AUTO_BATCH_EPOCH_STEPS = 1000
TRAINING_REPORT = "training.json"


@dataclasses.dataclass(frozen=True)
class TrainingLength:
    """The training a Trainer execution plans, and what it covers of the data.

    Attributes:
      steps: training steps (batches).
      batch_size: examples per step.
      train_records: examples in the training split.
      asked: how the length was set: "train_steps", "epochs" or "default".
    """

    steps: int
    batch_size: int
    train_records: int
    asked: str

    @property
    def examples(self) -> int:
        """Examples the model is trained on (counted again when seen again)."""
        return self.steps * self.batch_size

    @property
    def epochs(self) -> float:
        """Passes over the training split: below 1, part of the data is never seen."""
        return self.examples / self.train_records if self.train_records else 0.0

    def to_json(self) -> dict:
        """The report's fields, derived ones included."""
        return {
            **dataclasses.asdict(self),
            "examples": self.examples,
            "epochs": round(self.epochs, 4),
        }


def auto_batch_size(train_records: int) -> int:
    """The training batch for a split of ``train_records`` examples when none is chosen."""
    smallest, largest = AUTO_BATCH_SIZES
    batch = smallest
    while batch < largest and train_records > AUTO_BATCH_EPOCH_STEPS * batch:
        batch *= 2
    return batch


def plan_training(
    train_records: int, batch_size: int, *, train_steps: int | None, epochs: float | None
) -> TrainingLength:
    """The steps to train for: ``train_steps``, ``epochs`` over the split, or the default.

    Raises:
      ValueError: if both train_steps and epochs are given, or either is not positive.
    """
    if train_steps is not None and epochs is not None:
        raise ValueError("Give train_steps or epochs, not both.")
    if train_steps is not None:
        if train_steps < 1:
            raise ValueError(f"train_steps must be at least 1, got {train_steps}.")
        return TrainingLength(train_steps, batch_size, train_records, "train_steps")
    if epochs is not None:
        if epochs <= 0:
            raise ValueError(f"epochs must be positive, got {epochs}.")
        steps = max(1, math.ceil(epochs * train_records / batch_size))
        return TrainingLength(steps, batch_size, train_records, "epochs")
    one_epoch = max(1, math.ceil(train_records / batch_size))
    return TrainingLength(max(DEFAULT_MIN_STEPS, one_epoch), batch_size, train_records, "default")


def split_records(file_patterns: Sequence[str]) -> int:
    """Examples in the files of ``file_patterns`` (split folders' globs).

    Read from ExampleGen's shard plan where the artifact has one; otherwise
    the records are counted, which reads the files once.
    """
    total = 0
    for pattern in file_patterns:
        split_dir = os.path.dirname(pattern)
        report = read_shard_plan(os.path.dirname(split_dir))
        split = os.path.basename(split_dir).removeprefix(SPLIT_FOLDER_PREFIX)
        if report is not None and split in report.splits:
            total += report.splits[split].records
            continue
        total += _count_records(pattern)
    return total


def _count_records(pattern: str) -> int:
    files = filesystem.glob(pattern)
    logging.info("No shard plan beside %s: counting its records (one read).", pattern)
    compression = "GZIP" if files and files[0].endswith(".gz") else ""
    dataset = tf.data.TFRecordDataset(files, compression_type=compression, num_parallel_reads=8)
    return int(dataset.batch(1024).reduce(0, lambda n, batch: n + tf.shape(batch)[0]).numpy())


def write_training_report(model_run_dir: str, length: TrainingLength) -> None:
    """Writes what the training covers to ``training.json`` in the model run folder."""
    filesystem.make_folder(model_run_dir)
    with filesystem.open_file(os.path.join(model_run_dir, TRAINING_REPORT), "w") as f:
        json.dump(length.to_json(), f)


def read_training_report(model_run_dir: str) -> TrainingLength | None:
    """The ``TrainingLength`` a Trainer execution wrote, or None (e.g. a module file's run_fn)."""
    path = os.path.join(model_run_dir, TRAINING_REPORT)
    if not filesystem.exists(path):
        return None
    with filesystem.open_file(path) as f:
        report = json.load(f)
    return TrainingLength(**{f.name: report[f.name] for f in dataclasses.fields(TrainingLength)})
