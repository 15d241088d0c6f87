"""The input-stall metric tells an input-bound run from a compute-bound one."""

import json
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from conftest import REPO_ROOT
from tfrecord_pipelines.components.trainer.input_stall import (
    InputStallModel,
    InputStallReport,
    verdict,
)

WIDTH = 32


def _model(hidden: int, layers: int) -> InputStallModel:
    inputs = tf.keras.Input(shape=(WIDTH,), name="x")
    x = inputs
    for _ in range(layers):
        x = tf.keras.layers.Dense(hidden, activation="relu")(x)
    model = InputStallModel(inputs=inputs, outputs=tf.keras.layers.Dense(1)(x))
    model.compile(optimizer="sgd", loss="mse")
    return model


def _batches(batch: int) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensors(({"x": tf.ones([batch, WIDTH])}, tf.ones([batch, 1])))


def _sleep(seconds: float):
    def slow(features, label):
        pause = tf.py_function(lambda: time.sleep(seconds) or 0, [], tf.int32)
        with tf.control_dependencies([pause]):
            return {"x": tf.identity(features["x"])}, tf.identity(label)

    return slow


def test_a_slow_input_pipeline_reads_as_input_bound(tmp_path):
    model = _model(hidden=8, layers=1)
    slow = _batches(8).repeat().map(_sleep(0.03))
    history = model.fit(
        slow,
        epochs=2,
        steps_per_epoch=10,
        validation_data=_batches(8).repeat().map(_sleep(0.03)),
        validation_steps=4,
        callbacks=[InputStallReport(str(tmp_path))],
        verbose=0,
    )
    assert all(share > 0.5 for share in history.history["input_stall"])
    assert all(share > 0.5 for share in history.history["val_input_stall"])
    report = json.loads((tmp_path / "input_stall.json").read_text())
    assert [e["epoch"] for e in report["epochs"]] == [0, 1]
    assert {e["verdict"] for e in report["epochs"]} == {"input-bound"}


def test_a_prefetched_cached_input_reads_as_compute_bound():
    model = _model(hidden=1024, layers=4)
    fast = _batches(512).cache().repeat().prefetch(tf.data.AUTOTUNE)
    history = model.fit(fast, epochs=2, steps_per_epoch=15, verbose=0)
    # The first epoch includes tracing; the second is steady state.
    assert 0 <= history.history["input_stall"][-1] < 0.2
    assert verdict(history.history["input_stall"][-1]) == "compute-bound"


@pytest.mark.parametrize("share, expected", [(0.02, "compute-bound"), (0.4, "input-bound")])
def test_verdict(share, expected):
    assert verdict(share) == expected


_MIRRORED = """
import os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from tfrecord_pipelines.components.trainer.input_stall import InputStallModel
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    inputs = tf.keras.Input(shape=(4,), name="x")
    model = InputStallModel(inputs=inputs, outputs=tf.keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
data = tf.data.Dataset.from_tensors(({"x": tf.ones([8, 4])}, tf.ones([8, 1]))).repeat()
history = model.fit(data, epochs=2, steps_per_epoch=5, validation_data=data,
                    validation_steps=2, verbose=0)
import json
print(json.dumps({"replicas": strategy.num_replicas_in_sync, **history.history}))
"""


def test_input_stall_under_mirrored_strategy():
    result = subprocess.run(
        [sys.executable, "-c", _MIRRORED],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["replicas"] == 2
    shares = outcome["input_stall"] + outcome["val_input_stall"]
    assert len(shares) == 4
    assert all(0 <= share <= 1 for share in shares)
