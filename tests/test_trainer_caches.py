"""What the Trainer keeps in memory between epochs: the train split, the validation batches."""

import os

import pytest
import tensorflow as tf

from tfrecord_pipelines.components.trainer.caches import (
    held,
    holds_validation,
    resolve_cache,
    tensor_bytes,
)
from tfrecord_pipelines.components.trainer.dataset import make_dataset
from tfrecord_pipelines.components.trainer.input_stall import InputStallModel
from tfrecord_pipelines.components.trainer.options import AUTO_CACHE_MAX_BYTES
from tfrecord_pipelines.components.trainer.training_length import plan_training

SPEC = {"x": tf.io.FixedLenFeature([2], tf.float32), "label": tf.io.FixedLenFeature([], tf.int64)}


def test_auto_cache_holds_the_transformed_split_in_memory_when_it_is_read_again():
    spec = {
        "amount_xf": tf.io.FixedLenFeature([1], tf.float32),
        "colour_xf": tf.io.FixedLenFeature([], tf.int64),
        "tags_xf": tf.io.VarLenFeature(tf.int64),
        "label_xf": tf.io.FixedLenFeature([], tf.int64),
    }
    assert tensor_bytes(spec) == 4 + 8 + 8 * 8 + 8
    # 700,000 rows of 84 bytes, trained on for 1.46 passes: cached, whatever the shards weigh.
    twice = plan_training(700_000, 1024, train_steps=None, epochs=None)
    assert twice.epochs > 1 and resolve_cache("auto", 84, "7", twice) == "memory"
    # Read once: a cache would only cost memory.
    once = plan_training(700_000, 1024, train_steps=600, epochs=None)
    assert resolve_cache("auto", 84, "7", once) is None
    # Past the limit, none; asked for, whatever the size.
    big = AUTO_CACHE_MAX_BYTES // 700_000 + 1
    assert resolve_cache("auto", big, "7", twice) is None
    assert resolve_cache("memory", big, "7", twice) == "memory"


def test_validation_batches_are_held_when_validation_runs_again_and_they_fit():
    length = plan_training(700_000, 1024, train_steps=None, epochs=None)
    batches = 20 * 1024  # 20 validation steps of 1,024
    assert holds_validation("auto", 84, batches, 4, "memory", length)
    assert holds_validation("/fast/disk", 84, batches, 4, "/fast/disk/run/train", length)
    # Asked for no cache; one validation; the whole eval split each time (no eval_steps).
    assert not holds_validation("none", 84, batches, 4, None, length)
    assert not holds_validation("auto", 84, batches, 1, None, length)
    assert not holds_validation("auto", 84, None, 4, None, length)
    # 20 batches of 1,024 decoded 224x224 images (3 GiB) do not fit; with the train split
    # in memory, what it leaves is the limit.
    image = 224 * 224 * 3
    assert not holds_validation("auto", image, batches, 4, None, length)
    leaves = AUTO_CACHE_MAX_BYTES - 700_000 * 1000  # beside 700,000 rows of 1,000 bytes
    assert holds_validation("auto", 1000, leaves // 1000 - 1, 4, "memory", length)
    assert not holds_validation("auto", 1000, leaves // 1000 + 1, 4, "memory", length)
    assert holds_validation("auto", 1000, leaves // 1000 + 1, 4, None, length)


def _write_shards(folder) -> str:
    for shard in range(3):
        with tf.io.TFRecordWriter(os.path.join(folder, f"eval-{shard}.gz"), "GZIP") as writer:
            for i in range(40):
                feature = {
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i, shard])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
    return os.path.join(folder, "eval-*.gz")


class _RemoveFiles(tf.keras.callbacks.Callback):
    """Removes the eval shards once the first validation has read them."""

    def __init__(self, pattern: str):
        super().__init__()
        self.pattern = pattern

    def on_epoch_end(self, epoch, logs=None):
        for path in tf.io.gfile.glob(self.pattern):
            os.remove(path)


@pytest.mark.parametrize("steps_per_call", [1, 4])
@pytest.mark.parametrize("holding", [True, False], ids=["held", "read each epoch"])
def test_held_validation_batches_are_read_from_the_shards_once(tmp_path, steps_per_call, holding):
    pattern = _write_shards(str(tmp_path))
    evaluation = make_dataset(pattern, SPEC, 8, training=False, label_key="label")
    if holding:
        evaluation = held(evaluation, 5)
    train = tf.data.Dataset.from_tensors(({"x": tf.ones([8, 2])}, tf.ones([8], tf.int64)))
    inputs = tf.keras.Input(shape=(2,), name="x")
    model = InputStallModel(inputs=inputs, outputs=tf.keras.layers.Dense(2)(inputs))
    model.compile(
        optimizer="sgd",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=steps_per_call,
    )

    def fit():
        return model.fit(
            train.repeat(),
            epochs=3,
            steps_per_epoch=4,
            validation_data=evaluation,
            validation_steps=5,
            callbacks=[_RemoveFiles(pattern)],
            verbose=0,
        )

    if not holding:  # the shards are gone by the second validation
        with pytest.raises(tf.errors.NotFoundError):
            fit()
        return
    history = fit()
    assert len(history.history["val_loss"]) == 3 and not tf.io.gfile.glob(pattern)
    # The batches they held are the shards' first five, in order, and they are stamped
    # anew at each validation: the stall is measured from the second on too.
    rows = [int(x) for features, _ in evaluation for x in features["x"][:, 0]]
    assert len(rows) == 40 and rows[:8] == list(range(8))
    assert len(history.history["val_input_stall"]) == 3
