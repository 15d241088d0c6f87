"""How long the Trainer trains by default, and what it reports it saw."""

import json

import pytest
import tensorflow as tf

from tfrecord_pipelines.components.example_gen.shard_plan_report import (
    ShardFile,
    ShardPlanReport,
    SplitOutcome,
)
from tfrecord_pipelines.components.trainer.training_length import (
    DEFAULT_MIN_STEPS,
    TrainingLength,
    auto_batch_size,
    plan_training,
    read_training_report,
    split_records,
    write_training_report,
)


def test_default_covers_small_data_many_times_and_large_data_once():
    small = plan_training(229, 64, train_steps=None, epochs=None)
    assert (small.steps, small.asked) == (DEFAULT_MIN_STEPS, "default")
    assert small.epochs == pytest.approx(1000 * 64 / 229)
    large = plan_training(10_000_000, 1024, train_steps=None, epochs=None)
    assert large.steps == 9766  # ceil(10,000,000 / 1024): every example once
    assert large.examples >= 10_000_000 and large.epochs == pytest.approx(1.0, abs=0.001)
    # An epoch shorter than the minimum: the minimum, a little over one epoch.
    assert plan_training(1_000_000, 1024, train_steps=None, epochs=None).steps == 1000


def test_epochs_become_steps_and_train_steps_are_kept():
    assert plan_training(1000, 64, train_steps=None, epochs=3).steps == 47  # ceil(3000 / 64)
    assert plan_training(1000, 64, train_steps=None, epochs=0.5).steps == 8
    fixed = plan_training(1_000_000, 64, train_steps=1000, epochs=None)
    assert (fixed.steps, fixed.asked, fixed.examples) == (1000, "train_steps", 64_000)
    assert fixed.epochs == pytest.approx(0.064)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"train_steps": 10, "epochs": 1}, "Give train_steps or epochs, not both."),
        ({"train_steps": 0, "epochs": None}, "train_steps must be at least 1, got 0."),
        ({"train_steps": None, "epochs": 0}, "epochs must be positive, got 0."),
    ],
)
def test_bad_lengths_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        plan_training(100, 10, **kwargs)


@pytest.mark.parametrize(
    "records, batch",
    [(229, 64), (64_000, 64), (64_001, 128), (100_000, 128), (1_000_000, 1024), (10**8, 1024)],
)
def test_auto_batch_doubles_until_an_epoch_takes_at_most_1000_steps(records, batch):
    assert auto_batch_size(records) == batch


def _write_records(path, count, compression=""):
    options = tf.io.TFRecordOptions(compression_type=compression)
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for i in range(count):
            writer.write(b"record %d" % i)


def test_split_size_comes_from_the_shard_plan_without_reading_shards(tmp_path):
    split = tmp_path / "Split-train"
    split.mkdir()
    _write_records(split / "data-00000-of-00001.gz", 3, "GZIP")
    # The plan, not the files, is believed: reading them would cost a pass.
    splits = {
        name: SplitOutcome(1, "", 0, records, (ShardFile("x", records, 0),), records, 0)
        for name, records in (("train", 1234), ("eval", 56))
    }
    plan = ShardPlanReport(0, None, None, 2**27, 10, None, "GZIP", 1290, 1290, 0, {}, splits)
    (tmp_path / "shard_plan.json").write_text(json.dumps(plan.to_json()))
    assert split_records([f"{split}/*"]) == 1234


def test_split_size_is_counted_without_a_shard_plan(tmp_path):
    split = tmp_path / "Split-train"
    split.mkdir()
    _write_records(split / "a.gz", 700, "GZIP")
    _write_records(split / "b.gz", 5, "GZIP")
    other = tmp_path / "plain"
    other.mkdir()
    _write_records(other / "c", 11)
    assert split_records([f"{split}/*", f"{other}/*"]) == 716


def test_report_round_trips(tmp_path):
    length = TrainingLength(steps=10, batch_size=64, train_records=1280, asked="epochs")
    write_training_report(str(tmp_path), length)
    assert read_training_report(str(tmp_path)) == length
    written = json.loads((tmp_path / "training.json").read_text())
    assert written["examples"] == 640 and written["epochs"] == 0.5
    assert read_training_report(str(tmp_path / "none")) is None
