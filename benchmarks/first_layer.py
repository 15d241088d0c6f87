"""The built-in model's first layer: one-hot categories multiplied (Dense) or looked up.

The same model twice in one process: 11 float inputs and 4 categories (5, 20
and 100 values, and ``--widths`` values for the last; each with Transform's
out-of-vocabulary bucket), then Dense layers of 64 and 32 and a softmax over
2 classes, compiled as ``build_model`` compiles it (Adam, an epoch's steps a
call). Its first layer is either ``Dense`` over the concatenated one-hot
vectors (``CategoryEncoding``, the model until 2026-12-03) or ``LookupDense``
(the same function, its rows looked up). Each fits 1,000 steps of 256 from
batches held in memory after a warm-up epoch (its tracing left out); the
script prints each one's CPU and wall seconds, in turn, ``--repeats`` times.

    .venv/bin/python benchmarks/first_layer.py --widths 1000 20000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

FLOATS = 11
CATEGORIES = (5, 20, 100)
BATCH = 256
STEPS = 1000
EPOCH_STEPS = 200


def _model(widths: list[int], lookup: bool):
    import tensorflow as tf

    from tfrecord_pipelines.components.trainer.lookup_dense import LookupDense
    from tfrecord_pipelines.components.trainer.model import TABULAR_LEARNING_RATE

    inputs = [tf.keras.Input((1,), name=f"f{i}") for i in range(FLOATS)]
    inputs += [tf.keras.Input((1,), name=f"c{i}", dtype=tf.int64) for i in range(len(widths))]
    one_hot_widths = [None] * FLOATS + widths
    if lookup:
        x = LookupDense(64, one_hot_widths, activation="relu")(inputs)
    else:
        parts = [
            x if width is None else tf.keras.layers.CategoryEncoding(width, "one_hot")(x)
            for x, width in zip(inputs, one_hot_widths, strict=True)
        ]
        x = tf.keras.layers.Dense(64, activation="relu")(tf.keras.layers.concatenate(parts))
    x = tf.keras.layers.Dense(32, activation="relu")(x)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(2, activation="softmax")(x))
    model.compile(
        optimizer=tf.keras.optimizers.Adam(TABULAR_LEARNING_RATE),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(),
        metrics=[tf.keras.metrics.SparseCategoricalAccuracy()],
        steps_per_execution=EPOCH_STEPS,
    )
    return model


def _batches(widths: list[int]):
    import tensorflow as tf

    rows = BATCH * 50
    features = {f"f{i}": tf.random.normal([rows, 1], seed=i) for i in range(FLOATS)}
    for i, width in enumerate(widths):
        features[f"c{i}"] = tf.random.uniform([rows, 1], 0, width, tf.int64, seed=100 + i)
    labels = tf.cast(features["f0"][:, 0] + features["f1"][:, 0] > 0, tf.int64)
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(BATCH).cache().repeat()


def _fit_seconds(model, batches) -> tuple[float, float]:
    model.fit(batches, steps_per_epoch=EPOCH_STEPS, epochs=1, verbose=0)
    times, wall = os.times(), time.perf_counter()
    model.fit(batches, steps_per_epoch=EPOCH_STEPS, epochs=STEPS // EPOCH_STEPS, verbose=0)
    done = os.times()
    cpu = done.user + done.system - times.user - times.system
    return cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[1000, 20000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.repeats < 1 or min(args.widths) < 1:
        parser.error("--repeats and --widths must be at least 1")
    print(f"{os.cpu_count()} cores; {STEPS:,} steps of {BATCH}, {EPOCH_STEPS} a call", flush=True)
    for values in args.widths:
        # Each category's vocabulary and its out-of-vocabulary bucket.
        widths = [size + 1 for size in (*CATEGORIES, values)]
        batches = _batches(widths)
        models = {"Dense over one-hots": _model(widths, False), "LookupDense": _model(widths, True)}
        seconds = {name: [] for name in models}
        for _ in range(args.repeats):
            for name, model in models.items():
                seconds[name].append(_fit_seconds(model, batches))
        print(f"\nlast category of {values:,} values (first layer {sum(widths) + FLOATS} wide):")
        for name, runs in seconds.items():
            cpu = statistics.median(c for c, _ in runs)
            wall = statistics.median(w for _, w in runs)
            spread = ", ".join(f"{c:.2f}" for c, _ in runs)
            print(f"  {name:<22} CPU {cpu:6.2f} s  wall {wall:6.2f} s  (CPU of each: {spread})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
