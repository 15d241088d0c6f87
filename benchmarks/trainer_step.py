"""The Trainer's cost per step against a bare Keras fit of the same model, in one run.

On a table of ``--rows`` rows (benchmarks/scale_table.py, a 0/1 label), runs
the project's pipeline as a user would (``python -m tfrecord_pipelines run
--data ... --label label --train-steps 1000 --batch-size 256``, and 2,000 steps) with
``--steps-per-call 1`` (Keras' default) and with the Trainer's own choice,
``--repeats`` times in turn, each run whole (``--no-cache``): a Trainer whose
upstream came from the cache would be the first component to run TensorFlow
in its process and pay for its start. For each it reads the Trainer
component's wall and CPU seconds from ML Metadata (the median of the
repeats, with their range), the accuracy with its 95% interval, and the last
epoch's input and host stall (of the first repeat).

Then, in a process of its own, a bare Keras fit of the same model
(``build_model`` on the run's Transform output): the transformed batches held
in memory, the same steps and batch, validation every 200 steps, a plain
SavedModel export; one step a call and the Trainer's steps a call. Its first
call's tracing is left out (a warm-up epoch and evaluation run first), so it
is the cheapest a fit of this model can be on this machine.

Last, a simulated accelerator: the same model with a 1 ms sleep in its step
(time on a device, no host CPU), to show whether the host's work between
calls leaves the device idle, with one step a call and with several.

    .venv/bin/python benchmarks/trainer_step.py --rows 200000
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path.insert(0, _HERE)

PIPELINE_NAME = "trainer-step"
STEPS = 1000
BATCH = 256
EPOCH_STEPS = 200
EVAL_STEPS = 20
DEVICE_STEP_S = 0.001


def _run_pipeline(table: str, output: str, steps_per_call: int | None, steps: int) -> dict:
    """One pipeline run; the Trainer's cost, accuracy and stalls from its metadata."""
    from pipeline_scale import _run

    command = [sys.executable, "-m", "tfrecord_pipelines", "run", "--data", table]
    command += ["--label", "label", "--name", PIPELINE_NAME, "--output", output]
    command += ["--train-steps", str(steps), "--batch-size", str(BATCH)]
    command += ["--steps-per-call", str(steps_per_call)] if steps_per_call else []
    command += ["--no-cache"]
    label = steps_per_call or "the Trainer's choice of"
    print(f"pipeline, {steps:,} steps, {label} steps a call ...", flush=True)
    _run(command, f"{output}-{steps}-{steps_per_call or 'auto'}.log")

    from tfrecord_pipelines.local.layout import LocalLayout
    from tfrecord_pipelines.local.run_record import PIPELINE_RUN_CONTEXT, open_store
    from tfrecord_pipelines.report.run_summary import summarize_run

    store = open_store(LocalLayout(output, PIPELINE_NAME).metadata_path)
    run_id = store.get_contexts_by_type(PIPELINE_RUN_CONTEXT)[-1].name
    summary = summarize_run(store, PIPELINE_NAME, run_id)
    (trainer,) = [c for c in summary.costs if c.node_id == "Trainer"]
    return {
        "wall": trainer.wall_seconds,
        "cpu": trainer.cpu_seconds,
        "accuracy": summary.metrics["sparse_categorical_accuracy"],
        "interval": summary.intervals["sparse_categorical_accuracy"][0],
        "input_stall": summary.input_stall,
        "host_stall": summary.host_stall,
        "steps_per_call": summary.steps_per_call,
        "verdict": summary.input_stall_verdict,
    }


def _latest(pattern: str) -> str:
    return max(glob.glob(pattern), key=lambda path: int(path.rstrip("/").split("/")[-1]))


def _on_simulated_device(model, device_s: float, steps_per_call: int):
    """``model`` with a sleep of ``device_s`` in its step: time on an accelerator, no host
    CPU, which the step waits for."""
    import numpy as np
    import tensorflow as tf

    from tfrecord_pipelines.components.trainer.input_stall import InputStallModel

    def on_device(x):
        pause = tf.numpy_function(lambda: np.float32(time.sleep(device_s) or 0), [], tf.float32)
        return x + 0 * tf.ensure_shape(pause, [])

    outputs = tf.keras.layers.Lambda(on_device)(model.outputs[0])
    simulated = InputStallModel(inputs=model.inputs, outputs=outputs)
    simulated.compile(optimizer="adam", loss=model.loss, steps_per_execution=steps_per_call)
    return simulated


def _bare_child(root: str, steps_per_call: int, device_s: float) -> None:
    """Prints, as JSON, a bare fit's CPU and wall seconds (warm), its stalls."""
    import tensorflow as tf
    import tensorflow_transform as tft

    from tfrecord_pipelines.components.task import Task, transformed_name
    from tfrecord_pipelines.components.trainer.dataset import make_dataset
    from tfrecord_pipelines.components.trainer.model import build_model
    from tfrecord_pipelines.components.trainer.training_length import split_records

    output = tft.TFTransformOutput(_latest(f"{root}/Transform/transform_graph/*"))
    # As the Trainer reads them: ExampleGen's examples, the Transform graph in the input.
    examples = _latest(f"{root}/ShardedExampleGen/examples/*")
    task = Task(label="label")
    raw_spec = output.raw_feature_spec()
    needed = {*task.model_inputs(raw_spec), task.label}
    spec = {name: feature for name, feature in raw_spec.items() if name in needed}
    transform = output.transform_features_layer()
    # With a simulated device, no hidden layers: the step's time is the device's sleep.
    hidden = () if device_s else (64, 32)
    model = build_model(output, task, hidden_units=hidden, steps_per_call=steps_per_call)
    if device_s:
        model = _on_simulated_device(model, device_s, steps_per_call)

    def batches(split: str, training: bool, cache: str | None) -> tf.data.Dataset:
        return make_dataset(
            f"{examples}/Split-{split}/*",
            spec,
            BATCH,
            training=training,
            label_key=transformed_name(task.label),
            transform=transform,
            cache=cache,
        )

    # The batches held in memory: the whole train split, and the validation's 20 batches.
    train = batches("train", True, "memory")
    evaluation = batches("eval", False, None).take(EVAL_STEPS).cache()
    # Warm-up: a whole pass fills the caches, and traces the train and test functions.
    model.fit(
        train,
        epochs=1,
        steps_per_epoch=split_records([f"{examples}/Split-train/*"]) // BATCH + 1,
        verbose=0,
    )
    model.evaluate(evaluation, steps=EVAL_STEPS, verbose=0)
    cpu, wall = time.process_time(), time.monotonic()
    history = model.fit(
        train,
        epochs=STEPS // EPOCH_STEPS,
        steps_per_epoch=EPOCH_STEPS,
        validation_data=evaluation,
        validation_steps=EVAL_STEPS,
        verbose=0,
    )
    fit_cpu, fit_wall = time.process_time() - cpu, time.monotonic() - wall
    export = os.path.join(root, "..", "..", f"bare-export-{steps_per_call}-{device_s}")
    if not device_s:  # the simulated device's sleep is no layer to save
        # As the Trainer saves its model: without Keras' traces of every layer's call.
        tf.keras.Model(model.inputs, model.outputs).save(export, save_traces=False)
    print(
        json.dumps(
            {
                "fit_cpu": fit_cpu,
                "fit_wall": fit_wall,
                "cpu": time.process_time() - cpu,
                "wall": time.monotonic() - wall,
                "input_stall": history.history["input_stall"][-1],
                "host_stall": history.history["host_stall"][-1],
            }
        )
    )


def _bare(root: str, steps_per_call: int, device_s: float = 0.0) -> dict:
    command = [sys.executable, __file__, "--bare-child", root, str(steps_per_call), str(device_s)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode:
        raise SystemExit(f"bare fit failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _row(name: str, cpu: float, wall: float, extra: str = "") -> None:
    print(
        f"  {name:<44} {cpu:7.2f} {wall:7.2f} {1000 * cpu / STEPS:8.2f}  {extra}",
        flush=True,
    )


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def _spread(runs: list[dict], key: str = "cpu") -> str:
    values = [run[key] for run in runs]
    return f"CPU {min(values):.2f}-{max(values):.2f} over {len(values)}"


def _repeated(table: str, output: str, repeats: int) -> dict:
    """Every pipeline run, ``repeats`` times in turn: {(steps a call, steps): [runs]}."""
    runs = {(calls, steps): [] for calls in (1, None) for steps in (STEPS, 2 * STEPS)}
    for _ in range(repeats):
        for (calls, steps), done in runs.items():
            done.append(_run_pipeline(table, output, calls, steps))
    return runs


def _print_trainer(runs: dict, chosen: int) -> None:
    for calls in (1, None):
        run, longer = runs[calls, STEPS], runs[calls, 2 * STEPS]
        first = run[0]
        low, high = first["interval"]
        name = f"{calls or chosen} steps a call"
        cpu, wall = _median(run, "cpu"), _median(run, "wall")
        _row(
            f"Trainer component, {name}",
            cpu,
            wall,
            f"{_spread(run)}; accuracy {first['accuracy']:.4f} [{low:.4f}, {high:.4f}]; "
            f"input stall {100 * first['input_stall']:.1f}%, host stall "
            f"{100 * first['host_stall']:.1f}% ({first['verdict']})",
        )
        steps_cpu = _median(longer, "cpu") - cpu
        steps_wall = _median(longer, "wall") - wall
        _row(
            f"  of which {STEPS:,} steps ({name})",
            steps_cpu,
            steps_wall,
            f"the {2 * STEPS:,}-step runs: {_spread(longer)}",
        )
        _row(f"  of which fixed ({name})", cpu - steps_cpu, wall - steps_wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", default=os.path.join(_ROOT, "output", "bench-trainer-step"))
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    from pipeline_scale import _table

    table = _table(args.rows, args.work, binary=True)
    output = os.path.join(args.work, f"run-{args.rows}")
    # Each at STEPS and twice as many: the difference is the cost of STEPS more steps
    # (their validations included), the rest the Trainer's fixed cost.
    runs = _repeated(table, output, args.repeats)
    chosen = runs[None, STEPS][0]["steps_per_call"]
    root = f"{output}/pipeline_root/{PIPELINE_NAME}"
    bare = {n: [_bare(root, n) for _ in range(args.repeats)] for n in (1, chosen)}
    device = {n: _bare(root, n, DEVICE_STEP_S) for n in (1, chosen)}

    print(f"\n{args.rows:,} rows, {STEPS:,} steps of {BATCH}, validation every {EPOCH_STEPS}:")
    print(f"  {'':<44} {'CPU s':>7} {'wall s':>7} {'CPU ms/step':>8}  (medians)")
    _print_trainer(runs, chosen)
    for n, done in bare.items():
        _row(
            f"bare Keras fit + export, {n} steps a call",
            _median(done, "cpu"),
            _median(done, "wall"),
            f"{_spread(done)}; fit alone {_median(done, 'fit_cpu'):.2f} CPU-s; "
            f"host stall {100 * done[0]['host_stall']:.1f}%",
        )
    ours = _median(runs[None, STEPS], "cpu")
    ours_steps = _median(runs[None, 2 * STEPS], "cpu") - ours
    print(
        f"  Trainer ({chosen} a call) / bare fit (1 a call), CPU: "
        f"{ours / _median(bare[1], 'cpu'):.2f}x; its steps alone: "
        f"{ours_steps / _median(bare[1], 'fit_cpu'):.2f}x the bare fit's"
    )
    print(f"\nSimulated accelerator, a {1000 * DEVICE_STEP_S:.0f} ms device step:")
    all_steps = STEPS + EVAL_STEPS * STEPS // EPOCH_STEPS
    for n, run in device.items():
        busy = 1 - run["input_stall"] - run["host_stall"]
        print(
            f"  {n:>4} steps a call: {1000 * run['fit_wall'] / all_steps:.2f} ms a step "
            f"(wall, validation's included), host stall {100 * run['host_stall']:.1f}%, "
            f"device busy {100 * busy:.1f}%"
        )


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--bare-child":
        _bare_child(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        main()
