"""Input stall: the share of training time spent waiting for the next batch.

It answers the question every GPU run should answer: is it input-bound (the
accelerator waits for the CPU's tf.data pipeline) or compute-bound? Near 0:
compute-bound, a faster input pipeline would not help. Well above 0: the
input pipeline is the bottleneck (more parallel reads or parse threads,
caching, fewer features, or more CPU on the node).

How it is measured, on the host, per step: the time from Keras asking for
the step (just before the iterator's ``get_next``) to the batch's arrival is
waiting; from the batch's arrival to the step's outputs is computing. The
share is the summed waiting over the summed step time, per epoch, for
training (``input_stall``) and validation (``val_input_stall``). On a GPU the
host runs ahead of the device until the device's queue is full, so a
compute-bound run shows a share near 0, and an input-bound one the share of
time the device sat idle.
"""

from __future__ import annotations

import json
import logging
import os

import tensorflow as tf

from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.components.trainer.data_service import (
    DataService,
    DataServiceError,
    registered_workers,
)

METRIC_NAME = "input_stall"
REPORT_FILE = "input_stall.json"
# Above this share a run is reported as input-bound.
INPUT_BOUND_SHARE = 0.10


class InputStall(tf.keras.metrics.Metric):
    """Share of step time spent waiting for the next batch (0..1)."""

    def __init__(self, name: str = METRIC_NAME, **kwargs):
        super().__init__(name=name, dtype=tf.float64, **kwargs)
        self.waiting = self.add_weight("waiting", initializer="zeros", dtype=tf.float64)
        self.elapsed = self.add_weight("elapsed", initializer="zeros", dtype=tf.float64)
        # When the current step was asked for; set outside the replicas, read in each.
        self.step_start = self.add_weight(
            "step_start",
            initializer="zeros",
            dtype=tf.float64,
            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
        )

    def start_step(self) -> None:
        """Stamps the moment a step (or a run of steps) is asked for."""
        self.step_start.assign(tf.timestamp())

    def update_state(self, batch_ready: tf.Tensor, step_end: tf.Tensor) -> None:
        """Adds one step: when its batch arrived and when its outputs were ready."""
        start = self.step_start.read_value()
        self.waiting.assign_add(batch_ready - start)
        self.elapsed.assign_add(step_end - start)
        # With several steps per call, the next step is asked for now.
        self.step_start.assign(step_end)

    def result(self) -> tf.Tensor:
        return tf.math.divide_no_nan(self.waiting, self.elapsed)


class InputStallModel(tf.keras.Model):
    """A Keras model (build it like a functional one) that reports its input stall.

    ``fit`` and ``evaluate`` report ``input_stall`` (training) and
    ``val_input_stall`` (validation) beside the other metrics, so they reach
    every callback, the TensorBoard logs included. Export the layers for
    serving as a plain ``tf.keras.Model(model.inputs, model.outputs)``: the
    metric is training instrumentation, not part of the model.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.input_stall = InputStall()

    def make_train_function(self, force=False):
        if self.train_function is not None and not force:
            return self.train_function
        self.train_function = self._stamped(super().make_train_function(force=True))
        return self.train_function

    def make_test_function(self, force=False):
        if self.test_function is not None and not force:
            return self.test_function
        self.test_function = self._stamped(super().make_test_function(force=True))
        return self.test_function

    def _stamped(self, function):
        if self._cluster_coordinator:
            return function  # Steps run on remote workers; there is no host wait to stamp.

        def stamped(iterator):
            self.input_stall.start_step()
            return function(iterator)

        return stamped if self.run_eagerly else tf.function(stamped, reduce_retracing=True)

    # Not converted by AutoGraph: the steps hold no Python control flow on tensors, and
    # converting Keras' train and test steps, everything they call included, was most
    # of a small model's training time (measured in docs/benchmarks/startup.md).
    @tf.autograph.experimental.do_not_convert
    def train_step(self, data):
        return self._timed(super().train_step, data)

    @tf.autograph.experimental.do_not_convert
    def test_step(self, data):
        return self._timed(super().test_step, data)

    def _timed(self, step, data):
        # Explicit dependencies: the stamps are taken after the batch arrived
        # and after the step's outputs exist, whatever the graph's op order.
        with tf.control_dependencies(tf.nest.flatten(data, expand_composites=True)):
            batch_ready = tf.timestamp()
        with tf.control_dependencies([batch_ready]):
            logs = step(data)
        with tf.control_dependencies(tf.nest.flatten(logs)):
            step_end = tf.timestamp()
        self.input_stall.update_state(batch_ready, step_end)
        return {**logs, METRIC_NAME: self.input_stall.result()}


def verdict(share: float) -> str:
    """Says what an input-stall share means for the run."""
    return "input-bound" if share > INPUT_BOUND_SHARE else "compute-bound"


def advice(share: float, data_service_workers: int | None = None) -> str:
    """Says what to do about an input-stall share, in one sentence."""
    if share <= INPUT_BOUND_SHARE:
        return (
            "The input keeps up: a faster run needs a faster train step (a bigger batch, "
            "--mixed-precision on GPUs, more accelerators), not more input work."
        )
    if data_service_workers is not None:
        return (
            f"The accelerator waits for batches with {data_service_workers} tf.data service "
            "worker(s): add workers (they scale out the reading, parsing and decoding)."
        )
    return (
        "The accelerator waits for batches: give the Trainer more CPU cores, cache the "
        "parsed input (--cache), use bigger batches, or move the input work to tf.data "
        "service workers (--data-service)."
    )


def last_epoch_share(output_dir: str) -> float | None:
    """Returns the last epoch's input stall from an ``InputStallReport`` in output_dir.

    None if there is no report (or it holds no epoch).
    """
    path = os.path.join(output_dir, REPORT_FILE)
    if not filesystem.exists(path):
        return None
    with filesystem.open_file(path) as f:
        epochs = json.load(f)["epochs"]
    return epochs[-1][METRIC_NAME] if epochs else None


class InputStallReport(tf.keras.callbacks.Callback):
    """Logs each epoch's input stall and writes them all to ``<output_dir>/input_stall.json``.

    With a data_service, each epoch also says how many of its workers were
    registered at the epoch's end: an input-bound run with few workers wants
    more of them, not a bigger trainer.
    """

    def __init__(self, output_dir: str, data_service: DataService | None = None):
        super().__init__()
        self._path = os.path.join(output_dir, REPORT_FILE)
        self._epochs: list[dict] = []
        self._service = data_service

    def _workers(self) -> int | None:
        try:
            return len(registered_workers(self._service))
        except DataServiceError as e:
            logging.warning("%s", e)
            return None

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        if METRIC_NAME not in logs:
            return
        share = float(logs[METRIC_NAME])
        entry = {"epoch": epoch, METRIC_NAME: share, "verdict": verdict(share)}
        if f"val_{METRIC_NAME}" in logs:
            entry[f"val_{METRIC_NAME}"] = float(logs[f"val_{METRIC_NAME}"])
        source = "input read on the trainer"
        if self._service:
            entry["data_service_workers"] = self._workers()
            source = (
                f"input from the tf.data service at {self._service.address}, "
                f"{entry['data_service_workers']} worker(s)"
            )
        self._epochs.append(entry)
        logging.info(
            "Epoch %d: %.1f%% of step time waiting for input (%s; %s).",
            epoch + 1,
            100 * share,
            entry["verdict"],
            source,
        )
        report = {
            "epochs": self._epochs,
            "input_bound_above": INPUT_BOUND_SHARE,
            "data_service": self._service.address if self._service else None,
        }
        filesystem.make_folder(os.path.dirname(self._path))
        with filesystem.open_file(self._path, "w") as f:
            json.dump(report, f, indent=2)
