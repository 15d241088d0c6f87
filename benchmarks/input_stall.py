"""What the input-stall measure reads on inputs of known cost: nothing, and a sleep per batch.

For each model (two Dense layers of a width) and batch size, ``fit`` runs on
one batch held in memory, repeated and prefetched (an input that costs
nothing), then on the same batch behind a map that sleeps a multiple of the
free step. Each is measured two ways in the same run:

- **stamped** (the Trainer's measure since 2026-11-28): waiting is the time
  from the step's ask to the batch's production, 0 when it was ready;
- **before**: the measure as it was until then (``input_stall.py`` at
  ``--before``, default c11067c, read from git and imported beside the new):
  waiting is the time from the ask to the batch's arrival in the step,
  dispatch and hand-over included, over the steps' time inside the graph.

On the sleeping input the expected share is the part of the sleep the
step's own work does not cover: (sleep - free step) / sleep. Not a test: it
prints figures measured in one run.

    .venv/bin/python benchmarks/input_stall.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

WIDTH = 32


def _parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="steps an epoch (default 300)")
    parser.add_argument("--sleep-steps", type=float, default=3.0, help="sleep, in free steps")
    parser.add_argument("--before", default="c11067c", help="the commit of the measure before")
    args = parser.parse_args(argv)
    if args.steps < 20 or args.sleep_steps <= 1:
        parser.error("--steps must be 20 or more and --sleep-steps more than 1")
    return args


def _model_before(commit: str):
    """``InputStallModel`` as ``components/trainer/input_stall.py`` had it at ``commit``."""
    import importlib.util
    import subprocess
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source = subprocess.run(
        ["git", "show", f"{commit}:components/trainer/input_stall.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = os.path.join(tempfile.mkdtemp(), "input_stall_before.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("input_stall_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.InputStallModel


def main(argv=None) -> None:
    args = _parse_args(argv)
    import tensorflow as tf

    from tfrecord_pipelines.components.trainer.input_stall import InputStallModel

    ArrivalModel = _model_before(args.before)

    def model(kind, hidden: int):
        inputs = tf.keras.Input(shape=(WIDTH,), name="x")
        x = inputs
        for _ in range(2):
            x = tf.keras.layers.Dense(hidden, activation="relu")(x)
        built = kind(inputs=inputs, outputs=tf.keras.layers.Dense(1)(x))
        built.compile(optimizer="adam", loss="mse")
        return built

    def batches(batch: int, sleep: float):
        data = tf.data.Dataset.from_tensors(
            ({"x": tf.ones([batch, WIDTH])}, tf.ones([batch, 1]))
        ).repeat()
        if sleep:

            def slow(features, label):
                pause = tf.py_function(lambda: time.sleep(sleep) or 0, [], tf.int32)
                with tf.control_dependencies([pause]):
                    return {"x": tf.identity(features["x"])}, tf.identity(label)

            data = data.map(slow)
        return data.prefetch(tf.data.AUTOTUNE)

    def measure(built, batch: int, sleep: float, steps: int):
        history = built.fit(batches(batch, sleep), epochs=2, steps_per_epoch=steps, verbose=0)
        step = float(built.input_stall.elapsed.numpy()) / steps
        return history.history["input_stall"][-1], step

    print(
        "| model | batch | input | expected | now | before | step, ms |\n"
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |"
    )
    for hidden, batch in ((32, 64), (256, 64), (256, 1024), (1024, 1024)):
        stamped, arrival = model(InputStallModel, hidden), model(ArrivalModel, hidden)
        free_now, step = measure(stamped, batch, 0.0, args.steps)
        free_before, _ = measure(arrival, batch, 0.0, args.steps)
        name = f"2 x Dense({hidden})"
        print(
            f"| {name} | {batch:,} | nothing | 0% | {100 * free_now:.1f}% | "
            f"{100 * free_before:.1f}% | {1000 * step:.2f} |"
        )
        sleep = args.sleep_steps * step
        # A sleep needs fewer steps: the epoch is sleep-bound.
        slow_steps = max(20, args.steps // int(args.sleep_steps * 4))
        slow_now, slow_step = measure(stamped, batch, sleep, slow_steps)
        slow_before, _ = measure(arrival, batch, sleep, slow_steps)
        print(
            f"| {name} | {batch:,} | sleep {1000 * sleep:.1f} ms | "
            f"{100 * (sleep - step) / sleep:.0f}% | {100 * slow_now:.1f}% | "
            f"{100 * slow_before:.1f}% | {1000 * slow_step:.2f} |"
        )


if __name__ == "__main__":
    main()
