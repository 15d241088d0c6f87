"""Input stall and host stall: what holds the training steps back.

It answers the question every GPU run should answer: is it input-bound (the
accelerator waits for the CPU's tf.data pipeline), host-bound (it waits for
the host's work between calls: Keras' loop, callbacks, dispatch) or
device-bound (its own steps take the time)? An input stall well above 0: the
input pipeline is the bottleneck (more parallel reads or parse threads,
caching, fewer features, or more CPU on the node). A host stall well above 0:
too few steps run in each call for the host's per-call cost (more steps a
call, fewer per-step callbacks). Both near 0: a faster input or host would
not help.

How it is measured, on the host, per step. ``fit`` and ``evaluate`` stamp
each batch with the moment the input pipeline produced it (a last map stage
on a thread of its own, so the stamp is taken when the batch is ready to be
taken, not when it is taken). The step is stamped when Keras asks for it.
Waiting is the time from the ask to the batch's production, when the batch
came later than it was asked for; 0 when it was ready. Everything else, the
handing over of a ready batch, the per-step dispatch and Keras' own loop
between steps included, is the step's own time: a faster input could not
remove it. Of it, the time from one call's last step's end to the next
call's start is the host's (``host_stall``, its share of step time): with
several steps a call (Keras' ``steps_per_execution``) it is paid once a call.
The share is the summed waiting over the summed step time, per
epoch, for training (``input_stall``) and validation (``val_input_stall``),
from each epoch's second step on. The first step's wait is the pipeline's
start (opening the files, filling the first buffers), paid again at every
validation, since Keras starts the validation pipeline afresh each epoch so
that each sees the same batches: it is reported apart, in seconds
(``input_start_s``, ``val_input_start_s``), as a cost of the epoch, not a sign
that the model waits for its input. Twenty validation steps of a few
milliseconds each would otherwise call any model input-bound.
On a GPU the host runs ahead of the device until the device's queue is full,
so a device-bound run shows shares near 0, and an input-bound or host-bound
one the share of time the device sat idle.

Counting from the ask to the batch's arrival instead (this module until
2026-11-28) counted the dispatch and hand-over as waiting: 35-43% on an
input that costs nothing with a small model (docs/benchmarks/input-stall.md).
An epoch of fewer than ``MIN_STEPS`` steps is too short to tell: its first
steps still fill the pipeline's buffers.
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
# The share of step time the steps waited for the host between calls (module docstring).
HOST_NAME = "host_stall"
# The first step's wait, the input pipeline's start, in seconds.
START_NAME = "input_start_s"
REPORT_FILE = "input_stall.json"
# Above this share a run is reported as input-bound.
INPUT_BOUND_SHARE = 0.10
# Above this share of the host's time between calls, a run that is not input-bound is
# reported as host-bound: the device sat idle that share of the time, whatever it costs.
HOST_BOUND_SHARE = 0.10
INPUT_BOUND = "input-bound"
HOST_BOUND = "host-bound"
DEVICE_BOUND = "device-bound"
# Fewer steps in an epoch than this: no verdict (the pipeline's start weighs too much).
MIN_STEPS = 20
TOO_SHORT = "too short to tell"
# The element ``fit`` and ``evaluate`` hand to the steps: the batch and its production time.
_BATCH = "batch"
_READY_AT = "input_stall_ready_at"


def _rows(batch) -> tf.Tensor:
    """The batch's rows (its first tensor's first dimension); 1 for an unbatched element."""
    leaf = tf.nest.flatten(batch)[0]
    if isinstance(leaf, tf.SparseTensor):
        return leaf.dense_shape[0]
    if isinstance(leaf, tf.RaggedTensor):
        return leaf.nrows()
    return tf.shape(leaf)[0] if leaf.shape.rank else tf.constant(1, tf.int32)


def _stamp(*element):
    batch = element[0] if len(element) == 1 else element
    # One stamp a row: a distribution strategy splits it with the batch.
    return {_BATCH: batch, _READY_AT: tf.fill([_rows(batch)], tf.timestamp())}


def stamped(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``dataset`` with each batch stamped with when it was produced (module docstring).

    The stamp is taken by a map of one parallel call: on a thread of its own, as
    the batch leaves the pipeline, so a batch that waits in a buffer was ready. A
    prefetch after it keeps the stamping stage from adding a wait of its own when
    its thread is briefly not scheduled.
    """
    return dataset.map(_stamp, num_parallel_calls=1, deterministic=True).prefetch(tf.data.AUTOTUNE)


def _unstamped(data):
    """(the batch, when it was produced or None) of what a step received."""
    if isinstance(data, dict) and set(data) == {_BATCH, _READY_AT}:
        ready = data[_READY_AT]
        # Empty on a replica given no rows: then it waited for nothing.
        latest = tf.reduce_max(tf.concat([ready, tf.zeros([1], ready.dtype)], 0))
        return data[_BATCH], latest
    return data, None


class InputStall(tf.keras.metrics.Metric):
    """Share of step time spent waiting for the next batch (0..1)."""

    def __init__(self, name: str = METRIC_NAME, **kwargs):
        super().__init__(name=name, dtype=tf.float64, **kwargs)
        self.waiting = self.add_weight("waiting", initializer="zeros", dtype=tf.float64)
        self.elapsed = self.add_weight("elapsed", initializer="zeros", dtype=tf.float64)
        # The host's time between one call's last step and the next call's start; summed
        # over the replicas, as ``elapsed`` is.
        self.between_calls = self.add_weight("between_calls", initializer="zeros", dtype=tf.float64)
        # The epoch's first wait: its pipeline's start, kept out of the share.
        self.start_wait = self.add_weight(
            "start_wait",
            initializer="zeros",
            dtype=tf.float64,
            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
        )
        # When the current step was asked for; set outside the replicas, read in each.
        self.step_start = self.add_weight(
            "step_start",
            initializer="zeros",
            dtype=tf.float64,
            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
        )
        # When the last step's outputs were ready (0: no step yet this epoch).
        self.last_end = self.add_weight(
            "last_end",
            initializer="zeros",
            dtype=tf.float64,
            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
        )

    def start_step(self) -> None:
        """Stamps the moment a step (or a run of steps) is asked for."""
        self.step_start.assign(tf.timestamp())

    def update_state(self, batch_ready: tf.Tensor, step_end: tf.Tensor) -> None:
        """Adds one step: when its batch was ready and when its outputs were."""
        start = self.step_start.read_value()
        last = self.last_end.read_value()
        wait = tf.maximum(batch_ready - start, 0.0)
        first = last <= 0
        # The host's time between two calls (Keras' loop, callbacks, dispatch) is step time
        # too, not waiting; 0 between two steps of one call.
        between = tf.where(first, tf.zeros_like(start), start - last)
        self.between_calls.assign_add(between)
        self.start_wait.assign_add(tf.where(first, wait, tf.zeros_like(wait)))
        self.waiting.assign_add(tf.where(first, tf.zeros_like(wait), wait))
        self.elapsed.assign_add(tf.where(first, tf.zeros_like(wait), step_end - start + between))
        self.last_end.assign(step_end)
        # With several steps per call, the next step is asked for now.
        self.step_start.assign(step_end)

    def result(self) -> tf.Tensor:
        return tf.math.divide_no_nan(self.waiting, self.elapsed)

    def host_share(self) -> tf.Tensor:
        """The share of step time the steps waited for the host between calls (0..1)."""
        return tf.math.divide_no_nan(self.between_calls, self.elapsed)

    def start_seconds(self) -> tf.Tensor:
        """The epoch's first step's wait: the input pipeline's start."""
        return self.start_wait.read_value()


class InputStallModel(tf.keras.Model):
    """A Keras model (build it like a functional one) that reports its input stall.

    ``fit`` and ``evaluate`` report ``input_stall`` (training) and
    ``val_input_stall`` (validation) beside the other metrics, so they reach
    every callback, the TensorBoard logs included. Datasets are stamped
    (``stamped``); other inputs are measured from the ask to the batch's
    arrival, dispatch included.
    Export the layers for serving as a plain ``tf.keras.Model(model.inputs,
    model.outputs)``: the metric is training instrumentation, not part of the
    model.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.input_stall = InputStall()

    def _stamps(self, data):
        if self._cluster_coordinator or not isinstance(data, tf.data.Dataset):
            return data
        return stamped(data)

    def _stamping(self, args: tuple, kwargs: dict, *names: str) -> tuple[tuple, dict]:
        """``args`` and ``kwargs`` with the datasets among ``names`` (Keras' parameter names,
        in its positional order from the first) stamped."""
        args = list(args)
        for position, name in enumerate(names):
            if name is None:
                continue
            if name in kwargs:
                kwargs = {**kwargs, name: self._stamps(kwargs[name])}
            elif position < len(args):
                args[position] = self._stamps(args[position])
        return tuple(args), kwargs

    def fit(self, *args, **kwargs):
        # Keras' fit(x, y, batch_size, epochs, verbose, callbacks, validation_split,
        # validation_data, ...): None stands for the parameters between, never stamped.
        args, kwargs = self._stamping(args, kwargs, "x", *[None] * 6, "validation_data")
        return super().fit(*args, **kwargs)

    def evaluate(self, *args, **kwargs):
        # fit's validation reads the data handler fit built from its stamped
        # validation_data: stamping x again would trace a map for nothing each epoch.
        if not kwargs.get("_use_cached_eval_dataset"):
            args, kwargs = self._stamping(args, kwargs, "x")
        return super().evaluate(*args, **kwargs)

    def make_train_function(self, force=False):
        if self.train_function is not None and not force:
            return self.train_function
        keras_function = self._keras_function(super().make_train_function)
        self._build_optimizer()
        self.train_function = self._stamped(keras_function)
        if self.train_function is not keras_function and not self.run_eagerly:
            # Keras' TensorBoard callback draws this function's graph: the steps run in ours.
            self.train_tf_function = self.train_function
        return self.train_function

    def _build_optimizer(self) -> None:
        """Creates the optimizer's slots now: created on the first call instead, they make
        tf.function trace the train function twice (once creating variables, once not),
        0.6 of a CPU-second for a small model."""
        build = getattr(self.optimizer, "build", None)
        if build is not None and not getattr(self.optimizer, "_built", False):
            build(self.trainable_variables)

    def make_test_function(self, force=False):
        if self.test_function is not None and not force:
            return self.test_function
        self.test_function = self._stamped(self._keras_function(super().make_test_function))
        return self.test_function

    def _keras_function(self, make):
        """Keras' function of one step a call, whatever ``steps_per_execution`` says (then
        looped by ``_stamped``); its own for Keras' autotuning, eager runs and remote steps."""
        if (
            self._one_step_a_call()
            or self.autotune_steps_per_execution
            or self.run_eagerly
            or self._cluster_coordinator
        ):
            return make(force=True)
        calls = self._steps_per_execution
        steps = calls.numpy()
        # Assigned, not replaced: a variable set as an attribute would be tracked as a weight.
        calls.assign(1)
        try:
            return make(force=True)
        finally:
            calls.assign(steps)

    def _stamped(self, function):
        if self._cluster_coordinator:
            return function  # Steps run on remote workers; there is no host wait to stamp.
        if self.run_eagerly:

            def eager_steps(iterator):
                self.input_stall.start_step()
                return function(iterator)

            return eager_steps
        # Keras' one-step function holds no Python control flow on tensors: traced as its
        # Python function inside this one, AutoGraph does not convert Keras' step function
        # and per-replica reduction, about 0.9 of a day's 3 Trainer CPU-seconds
        # (docs/benchmarks/daily-window.md). Several steps a call loop over it in a
        # while_loop written here, not in Keras' AutoGraph loop: 1.2 CPU-s for the first
        # epoch against Keras' 1.8 (and 0.8 for one step a call).
        if self.autotune_steps_per_execution:
            # Keras' own loop, whose count its tuner changes between calls.
            step, calls = function, None
        else:
            step = function.python_function
            calls = None if self._one_step_a_call() else self._steps_per_execution
            if calls is not None:
                # A function of its own, called before the loop and in its body: traced
                # once, not once for each (0.12 CPU-s less for a first epoch of 200).
                step = tf.function(step, autograph=False)

        def stamped_steps(iterator):
            self.input_stall.start_step()
            outputs = step(iterator)
            if calls is None:
                return outputs
            return tf.while_loop(
                lambda done, _: done < calls,
                lambda done, _: (done + 1, step(iterator)),
                (tf.constant(1, calls.dtype), outputs),
            )[1]

        return tf.function(stamped_steps, reduce_retracing=True, autograph=False)

    def _one_step_a_call(self) -> bool:
        """Whether Keras builds its train and test functions for one step a call: its own
        test (tf_keras' ``make_train_function`` and ``make_test_function``)."""
        return self._steps_per_execution is None or (
            self._steps_per_execution.numpy().item() == 1 and not self.autotune_steps_per_execution
        )

    # Not converted by AutoGraph: the steps hold no Python control flow on tensors, and
    # converting Keras' train and test steps, everything they call included, was most
    # of a small model's training time (measured in docs/benchmarks/startup.md).
    @tf.autograph.experimental.do_not_convert
    def train_step(self, data):
        # The step ends when its weights are updated, not when its logs exist: the logs
        # need the forward pass alone, the backward pass and the update come after.
        return self._timed(super().train_step, data, self.trainable_variables)

    @tf.autograph.experimental.do_not_convert
    def test_step(self, data):
        return self._timed(super().test_step, data)

    def _timed(self, step, data, updated=()):
        data, ready_at = _unstamped(data)
        # Explicit dependencies: the stamps are taken after the batch arrived
        # and after the step's outputs exist, whatever the graph's op order.
        with tf.control_dependencies(tf.nest.flatten(data, expand_composites=True)):
            arrived = tf.timestamp()
        with tf.control_dependencies([arrived]):
            logs = step(data)
        # Each weight read after its update (tf.function orders a variable's reads and
        # writes as written).
        done = tf.nest.flatten(logs) + [weight.read_value() for weight in updated]
        with tf.control_dependencies(done):
            step_end = tf.timestamp()
        self.input_stall.update_state(arrived if ready_at is None else ready_at, step_end)
        return {
            **logs,
            METRIC_NAME: self.input_stall.result(),
            HOST_NAME: self.input_stall.host_share(),
            START_NAME: self.input_stall.start_seconds(),
        }


def verdict(share: float, steps: int | None = None, host_share: float = 0.0) -> str:
    """Says what holds an epoch of ``steps`` steps back: the input (an input-stall share
    above ``INPUT_BOUND_SHARE``), else the host between calls (a host-stall share above
    ``HOST_BOUND_SHARE``), else the device's steps themselves."""
    if steps is not None and steps < MIN_STEPS:
        return TOO_SHORT
    if share > INPUT_BOUND_SHARE:
        return INPUT_BOUND
    return HOST_BOUND if host_share > HOST_BOUND_SHARE else DEVICE_BOUND


def advice(
    share: float,
    data_service_workers: int | None = None,
    steps: int | None = None,
    host_share: float = 0.0,
) -> str:
    """Says what to do about an epoch's input-stall and host-stall shares, in one sentence."""
    told = verdict(share, steps, host_share)
    if told == TOO_SHORT:
        return (
            f"The epoch had {steps} steps, too few to tell: its first steps wait for the "
            f"input pipeline to start whatever it costs; measure over {MIN_STEPS} steps or "
            "more (--epoch-steps)."
        )
    if told == HOST_BOUND:
        return (
            "The steps wait for the host between calls (Keras' loop, callbacks, dispatch): "
            "run more steps a call (--steps-per-call), or bigger batches."
        )
    if told == DEVICE_BOUND:
        return (
            "The input and the host keep up: a faster run needs a faster train step (a bigger "
            "batch, --mixed-precision on GPUs, more accelerators), not more input work."
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


def read_report(output_dir: str) -> dict | None:
    """The ``InputStallReport`` in output_dir (its ``epochs`` and ``steps_per_call``), or
    None if there is none."""
    path = os.path.join(output_dir, REPORT_FILE)
    if not filesystem.exists(path):
        return None
    with filesystem.open_file(path) as f:
        return json.load(f)


def last_epoch(output_dir: str) -> dict | None:
    """The last epoch of an ``InputStallReport`` in output_dir: its ``input_stall``,
    ``host_stall``, ``steps`` and ``verdict``. None if there is no report (or it holds no
    epoch)."""
    return final_epoch(read_report(output_dir))


def final_epoch(report: dict | None) -> dict | None:
    """The last epoch of a report ``read_report`` read, or None."""
    return report["epochs"][-1] if report and report["epochs"] else None


def last_epoch_share(output_dir: str) -> float | None:
    """The last epoch's input stall from an ``InputStallReport`` in output_dir, or None."""
    epoch = last_epoch(output_dir)
    return epoch[METRIC_NAME] if epoch else None


class InputStallReport(tf.keras.callbacks.Callback):
    """Logs each epoch's input stall and writes them all to ``<output_dir>/input_stall.json``.

    With a data_service, each epoch also says how many of its workers were
    registered at the epoch's end: an input-bound run with few workers wants
    more of them, not a bigger trainer.
    """

    def __init__(
        self,
        output_dir: str,
        data_service: DataService | None = None,
        steps_per_call: int | None = None,
    ):
        super().__init__()
        self._path = os.path.join(output_dir, REPORT_FILE)
        self._steps_per_call = steps_per_call
        self._epochs: list[dict] = []
        self._service = data_service
        # The hooks below read only the batch's index: no logs copied to numpy.
        self._supports_tf_logs = True
        self._steps = {"train": 0, "test": 0}

    def on_epoch_begin(self, epoch: int, logs=None) -> None:
        self._steps["train"] = 0

    def on_train_batch_end(self, batch: int, logs=None) -> None:
        # With several steps per execution, ``batch`` is the last step's index.
        self._steps["train"] = batch + 1

    def on_test_begin(self, logs=None) -> None:
        self._steps["test"] = 0

    def on_test_batch_end(self, batch: int, logs=None) -> None:
        self._steps["test"] = batch + 1

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
        host = float(logs.get(HOST_NAME, 0.0))
        steps = self._steps["train"]
        entry = {
            "epoch": epoch,
            METRIC_NAME: share,
            HOST_NAME: host,
            START_NAME: float(logs.get(START_NAME, 0.0)),
            "steps": steps,
            "verdict": verdict(share, steps, host),
        }
        if f"val_{METRIC_NAME}" in logs:
            for name in (METRIC_NAME, HOST_NAME, START_NAME):
                entry[f"val_{name}"] = float(logs.get(f"val_{name}", 0.0))
            entry["val_steps"] = self._steps["test"]
            entry["val_verdict"] = verdict(
                entry[f"val_{METRIC_NAME}"], self._steps["test"], entry[f"val_{HOST_NAME}"]
            )
        source = "input read on the trainer"
        if self._service:
            entry["data_service_workers"] = self._workers()
            source = (
                f"input from the tf.data service at {self._service.address}, "
                f"{entry['data_service_workers']} worker(s)"
            )
        self._epochs.append(entry)
        logging.info(
            "Epoch %d: %.1f%% of step time waiting for input and %.1f%% for the host between "
            "calls (%s; %s), after %.3f s for the input pipeline's start.",
            epoch + 1,
            100 * share,
            100 * host,
            entry["verdict"],
            source,
            entry[START_NAME],
        )
        report = {
            "epochs": self._epochs,
            "steps_per_call": self._steps_per_call,
            "input_bound_above": INPUT_BOUND_SHARE,
            "host_bound_above": HOST_BOUND_SHARE,
            "data_service": self._service.address if self._service else None,
        }
        filesystem.make_folder(os.path.dirname(self._path))
        with filesystem.open_file(self._path, "w") as f:
            json.dump(report, f, indent=2)
