"""Trainer input pipelines compared: examples/s, and how long a consumer waits.

Generates tabular data (by default 400,000 examples of 26 features, and
100,000 of 200 features) as TFRecord shards, GZIP TFRecord shards and CSV
files, then reads each in one run with:

- per-record parse: sequential TFRecordDataset, ``parse_single_example`` per
  record, then batch (the naive pipeline);
- TFX's ``tf_dataset_factory`` (tfx_bsl's TFExampleRecord.TensorFlowDataset,
  what ``fn_args.data_accessor`` returns);
- ``tf.data.experimental.make_csv_dataset`` on the CSV copy;
- ``components.trainer.make_dataset``: first epoch, then later epochs from
  its in-memory cache and from a file cache;
- the raw-read ceiling: make_dataset's parallel block reads and batching, no parse.

Then a starvation test: a consumer that takes a fixed simulated step per
batch (a sleep: no CPU) and the share of its time spent waiting for the
next batch, for the naive pipeline and for make_dataset. Not a test: it
prints figures and ratios measured in one run.

    .venv/bin/python benchmarks/input_pipeline.py --work output/bench-input
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402 - the environment above must be set first
import pyarrow as pa  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow_metadata.proto.v0 import schema_pb2  # noqa: E402
from tfx_bsl.coders import example_coder  # noqa: E402
from tfx_bsl.public import tfxio  # noqa: E402

from components.trainer import feature_spec_from_schema, make_dataset  # noqa: E402
from components.trainer.dataset import DEFAULT_READ_BLOCK_SIZE  # noqa: E402

LABEL = "label"


def _schema(num_features: int) -> schema_pb2.Schema:
    """Half float, half integer features, plus an integer label; all single-valued."""
    schema = schema_pb2.Schema()
    for i in range(num_features - 1):
        feature = schema.feature.add(name=f"f{i:03d}")
        feature.type = schema_pb2.FLOAT if i % 2 == 0 else schema_pb2.INT
    schema.feature.add(name=LABEL, type=schema_pb2.INT)
    for feature in schema.feature:
        feature.shape.dim.add(size=1)
        feature.presence.min_fraction = 1.0
    return schema


def _columns(schema: schema_pb2.Schema, rng: np.random.Generator, rows: int) -> dict:
    columns = {}
    for feature in schema.feature:
        if feature.type == schema_pb2.FLOAT:
            columns[feature.name] = rng.normal(size=rows).astype(np.float32)
        else:
            columns[feature.name] = rng.integers(0, 1000, size=rows, dtype=np.int64)
    columns[LABEL] = rng.integers(0, 2, size=rows, dtype=np.int64)
    return columns


def _write(work: str, schema: schema_pb2.Schema, examples: int, shards: int) -> dict:
    """Writes the same examples as TFRecord, GZIP TFRecord and CSV shards."""
    shutil.rmtree(work, ignore_errors=True)
    folders = {kind: os.path.join(work, kind) for kind in ("tfrecord", "gzip", "csv")}
    for folder in folders.values():
        os.makedirs(folder)
    encoder = example_coder.RecordBatchToExamplesEncoder()
    rng = np.random.default_rng(7)
    per_shard = examples // shards
    for shard in range(shards):
        columns = _columns(schema, rng, per_shard)
        offsets = pa.array(np.arange(per_shard + 1, dtype=np.int64))
        batch = pa.RecordBatch.from_arrays(
            [pa.LargeListArray.from_arrays(offsets, pa.array(v)) for v in columns.values()],
            names=list(columns),
        )
        records = encoder.encode(batch)
        name = f"data-{shard:05d}-of-{shards:05d}"
        for kind, options in (("tfrecord", None), ("gzip", "GZIP")):
            suffix = ".gz" if options else ""
            with tf.io.TFRecordWriter(
                os.path.join(folders[kind], name + suffix), options=options
            ) as writer:
                for record in records:
                    writer.write(record)
        table = np.column_stack(
            [v.astype(np.float64) if v.dtype == np.float32 else v for v in columns.values()]
        )
        formats = ["%.6g" if v.dtype == np.float32 else "%d" for v in columns.values()]
        np.savetxt(
            os.path.join(folders["csv"], name + ".csv"),
            table,
            fmt=formats,
            delimiter=",",
            header=",".join(columns),
            comments="",
        )
    return {kind: os.path.join(folder, "data-*") for kind, folder in folders.items()}


def _count(dataset: tf.data.Dataset) -> tuple[int, float]:
    """Reads a dataset of batches once; returns examples and seconds.

    The batches are consumed inside TensorFlow (``Dataset.reduce``), as a
    train step consumes them, so the figure is the pipeline's throughput and
    not Python's cost of turning every feature into an eager tensor.
    """

    def add(count, batch):
        return count + tf.shape(tf.nest.flatten(batch)[0], out_type=tf.int64)[0]

    started = time.monotonic()
    examples = int(dataset.reduce(tf.constant(0, tf.int64), add))
    return examples, time.monotonic() - started


def _naive(pattern: str, spec: dict, batch_size: int, compression: str) -> tf.data.Dataset:
    files = sorted(tf.io.gfile.glob(pattern))
    return (
        tf.data.TFRecordDataset(files, compression_type=compression)
        .map(lambda record: tf.io.parse_single_example(record, spec))
        .batch(batch_size)
    )


def _tfx_factory(pattern: str, schema, batch_size: int) -> tf.data.Dataset:
    source = tfxio.TFExampleRecord(file_pattern=sorted(tf.io.gfile.glob(pattern)), schema=schema)
    return source.TensorFlowDataset(
        tfxio.TensorFlowDatasetOptions(batch_size=batch_size, label_key=LABEL, num_epochs=1)
    )


def _raw_ceiling(pattern: str, batch_size: int, compression: str) -> tf.data.Dataset:
    files = sorted(tf.io.gfile.glob(pattern))
    return (
        tf.data.Dataset.from_tensor_slices(files)
        .interleave(
            lambda f: tf.data.TFRecordDataset(f, compression_type=compression).batch(
                DEFAULT_READ_BLOCK_SIZE
            ),
            cycle_length=len(files),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=False,
        )
        .rebatch(batch_size)
        .prefetch(tf.data.AUTOTUNE)
    )


def _later_epoch(dataset: tf.data.Dataset) -> tuple[int, float]:
    """Reads a cached one-epoch dataset twice: the first pass fills the cache; times the second."""
    _count(dataset)
    return _count(dataset)


# Steps not counted: tracing the step, and the pipeline's start-up (opening the
# shards, autotuning its parallelism, filling the prefetch buffer) before its
# steady state, which is what the starvation test is about.
_WARM_UP_STEPS = 30


def _consume(dataset: tf.data.Dataset, step_seconds: float, batches: int) -> tuple[float, float]:
    """Seconds a consumer spent waiting for batches, and in all, over ``batches`` steps.

    Each step, inside one tf.function as a Keras train step: stamp, take the
    next batch, stamp, "compute" (sleep step_seconds, using no CPU, like a
    step running on an accelerator), stamp. The stamps are taken in the
    graph, as the Trainer's input-stall metric takes them, so the figure is
    the pipeline's delay and not Python's cost of calling the function.
    """
    iterator = iter(dataset)

    @tf.function
    def step():
        start = tf.timestamp()
        with tf.control_dependencies([start]):
            batch = next(iterator)
        with tf.control_dependencies(tf.nest.flatten(batch)):
            ready = tf.timestamp()
        with tf.control_dependencies([ready]):
            done = tf.py_function(lambda: time.sleep(step_seconds) or 0, [], tf.int32)
        with tf.control_dependencies([done]):
            end = tf.timestamp()
        return ready - start, end - start

    for _ in range(_WARM_UP_STEPS):
        step()
    waiting = total = 0.0
    for _ in range(batches):
        wait, elapsed = (float(t) for t in step())
        waiting += wait
        total += elapsed
    return waiting, total


def _waiting_share(dataset: tf.data.Dataset, step_seconds: float, batches: int) -> float:
    """Share of a consumer's step time spent waiting for its batch."""
    waiting, total = _consume(dataset, step_seconds, batches)
    return waiting / total


def _measure_shape(work: str, num_features: int, examples: int, args) -> dict:
    schema = _schema(num_features)
    spec = feature_spec_from_schema(schema)
    print(f"\n## {examples:,} examples x {num_features} features, {args.shards} shards", flush=True)
    patterns = _write(work, schema, examples, args.shards)
    sizes = {
        kind: sum(os.path.getsize(f) for f in tf.io.gfile.glob(p)) / 2**20
        for kind, p in patterns.items()
    }
    print("on disk: " + ", ".join(f"{k} {v:,.0f} MiB" for k, v in sizes.items()), flush=True)
    batch = args.batch_size
    rates = {}

    def record(name: str, measure) -> None:
        """Runs ``measure`` (-> examples, seconds) args.repeats times; keeps the median rate."""
        runs = []
        for _ in range(args.repeats):
            count, seconds = measure()
            if count != examples:
                raise SystemExit(f"error: {name} read {count:,} examples, expected {examples:,}")
            runs.append(count / seconds)
        rates[name] = float(np.median(runs))
        spread = f" (runs: {', '.join(f'{r:,.0f}' for r in runs)})" if len(runs) > 1 else ""
        print(f"  {name}: {rates[name]:,.0f} examples/s{spread}", flush=True)

    for kind, compression in (("tfrecord", ""), ("gzip", "GZIP")):
        pattern = patterns[kind]

        def cached(cache, pattern=pattern):
            dataset = make_dataset(pattern, spec, batch, label_key=LABEL, cache=cache, num_epochs=1)
            return _later_epoch(dataset)

        def file_cached(kind=kind):
            cache = os.path.join(work, f"cache-{kind}", "train")
            shutil.rmtree(os.path.dirname(cache), ignore_errors=True)
            os.makedirs(os.path.dirname(cache))
            return cached(cache)

        def first_epoch(pattern=pattern):
            return _count(make_dataset(pattern, spec, batch, label_key=LABEL, num_epochs=1))

        record(
            f"per-record parse ({kind})",
            lambda p=pattern, c=compression: _count(_naive(p, spec, batch, c)),
        )
        record(
            f"TFX tf_dataset_factory ({kind})",
            lambda p=pattern: _count(_tfx_factory(p, schema, batch)),
        )
        record(f"make_dataset, first epoch ({kind})", first_epoch)
        record(f"make_dataset, memory cache ({kind})", lambda: cached("memory"))
        record(f"make_dataset, file cache ({kind})", file_cached)
        record(
            f"raw-read ceiling ({kind})",
            lambda p=pattern, c=compression: _count(_raw_ceiling(p, batch, c)),
        )

    def csv():
        return _count(
            tf.data.experimental.make_csv_dataset(
                patterns["csv"],
                batch_size=batch,
                label_name=LABEL,
                num_epochs=1,
                num_parallel_reads=tf.data.AUTOTUNE,
            )
        )

    record("make_csv_dataset (csv)", csv)
    return {"rates": rates, "patterns": patterns, "spec": spec}


def _report(rates: dict) -> None:
    for kind in ("tfrecord", "gzip"):
        first = rates[f"make_dataset, first epoch ({kind})"]
        tfx_rate = rates[f"TFX tf_dataset_factory ({kind})"]
        ceiling = rates[f"raw-read ceiling ({kind})"]
        print(f"\n| {kind} | examples/s | x TFX factory | x make_csv_dataset | % of raw read |")
        print("| --- | ---: | ---: | ---: | ---: |")
        names = [n for n in rates if n.endswith(f"({kind})")] + ["make_csv_dataset (csv)"]
        for name in names:
            rate = rates[name]
            print(
                f"| {name} | {rate:,.0f} | {rate / tfx_rate:.2f} | "
                f"{rate / rates['make_csv_dataset (csv)']:.2f} | {100 * rate / ceiling:.0f}% |"
            )
        print(
            f"make_dataset first epoch: {first / tfx_rate:.1f}x TFX's factory (target >= 4), "
            f"{first / rates['make_csv_dataset (csv)']:.1f}x make_csv_dataset (target >= 3), "
            f"{100 * first / ceiling:.0f}% of the raw-read ceiling (target >= 45%); "
            f"memory cache {rates[f'make_dataset, memory cache ({kind})'] / first:.1f}x and "
            f"file cache {rates[f'make_dataset, file cache ({kind})'] / first:.1f}x the first "
            "epoch (target >= 2)."
        )


def _starvation(measured: dict, batch_size: int, batches: int) -> None:
    patterns, spec = measured["patterns"], measured["spec"]

    def ours():
        return make_dataset(patterns["tfrecord"], spec, batch_size, label_key=LABEL)

    # What the pipeline needs per batch: the same consumer, taking no time itself.
    _, total = _consume(ours(), 0.0, batches)
    per_batch = total / batches
    print(
        f'\nStarvation: a consumer that "computes" (sleeps) a fixed step per batch. '
        f"make_dataset delivers a batch of {batch_size} every {1000 * per_batch:.1f} ms to a "
        "consumer that takes no time."
    )
    print(
        "The floor is the same consumer on one batch held in memory, always ready: what taking "
        "a ready batch costs the step itself, not a wait on the pipeline."
    )
    print(
        "| step / make_dataset's time per batch | step ms | naive waits | make_dataset waits "
        "| floor (batch always ready) | make_dataset above the floor |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for factor in (1.0, 1.5, 3.0):
        step = factor * per_batch
        naive = _waiting_share(
            _naive(patterns["tfrecord"], spec, batch_size, "").repeat(), step, batches
        )
        always_ready = ours().take(1).cache().repeat()
        floor = _waiting_share(always_ready, step, batches)
        waits = _waiting_share(ours(), step, batches)
        print(
            f"| {factor:.1f} | {1000 * step:.1f} | {100 * naive:.1f}% | {100 * waits:.2f}% "
            f"| {100 * floor:.2f}% | {100 * (waits - floor):.2f}% |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="output/bench-input", help="folder for generated data")
    parser.add_argument("--examples", type=int, default=400_000)
    parser.add_argument("--features", type=int, default=26)
    parser.add_argument("--wide-examples", type=int, default=100_000)
    parser.add_argument("--wide-features", type=int, default=200)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--starvation-batches", type=int, default=300)
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of each reader; the median is reported"
    )
    args = parser.parse_args()
    print(
        f"{os.cpu_count()} CPUs; TensorFlow {tf.__version__}; batch {args.batch_size}; "
        f"median of {args.repeats} runs each"
    )
    narrow = _measure_shape(os.path.join(args.work, "narrow"), args.features, args.examples, args)
    _report(narrow["rates"])
    _starvation(narrow, args.batch_size, args.starvation_batches)
    wide = _measure_shape(
        os.path.join(args.work, "wide"), args.wide_features, args.wide_examples, args
    )
    _report(wide["rates"])
    print(f"\nGenerated data: {os.path.abspath(args.work)}")


if __name__ == "__main__":
    main()
