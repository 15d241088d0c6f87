"""Trainer input pipelines compared: examples/s, and how long a consumer waits.

Generates tabular data (by default 400,000 examples of 26 features, and
100,000 of 200 features) as TFRecord shards, GZIP TFRecord shards and CSV
files, then reads each in one run with:

- per-record parse: sequential TFRecordDataset, ``parse_single_example`` per
  record, then batch (the naive pipeline);
- TFX's ``tf_dataset_factory`` (tfx_bsl's TFExampleRecord.TensorFlowDataset,
  what ``fn_args.data_accessor`` returns);
- ``tf.data.experimental.make_csv_dataset`` on the CSV copy;
- ``tfrecord_pipelines.components.trainer.make_dataset``: first epoch, then later epochs from
  its in-memory cache and from a file cache;
- the raw-read ceiling: make_dataset's parallel block reads and batching, no parse;
- the bare chain (TFRecordDataset, batch, one ``parse_example`` a batch),
  sequential (one tf.data thread, one parse thread), and the same chain on
  every core (one file a core at a time). Its CPU an example times the cores
  is the limit of a first pass, which reads, decompresses and parses every
  record: CPU, unlike wall time, is not taken by the other tenants of a
  shared machine.

Then a starvation test: a consumer that takes a fixed simulated step per
batch (a sleep: no CPU) and the share of its time spent waiting for the
next batch, for the naive pipeline and for make_dataset, with the step
overlapping the next batch's arrival (an accelerator) or not (a CPU). Not a
test: it prints figures and ratios measured in one run.

    .venv/bin/python benchmarks/input_pipeline.py --work output/bench-input
"""

from __future__ import annotations

import argparse
import gc
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

from tfrecord_pipelines.components.trainer import feature_spec_from_schema, make_dataset  # noqa: E402
from tfrecord_pipelines.components.trainer.input_options import (  # noqa: E402
    DEFAULT_READ_BLOCK_SIZE,
)

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


def _count(dataset: tf.data.Dataset) -> tuple[int, float, float]:
    """Reads a dataset of batches once; returns examples, seconds and the process's CPU
    seconds meanwhile.

    The batches are consumed inside TensorFlow (``Dataset.reduce``), as a
    train step consumes them, so the figure is the pipeline's throughput and
    not Python's cost of turning every feature into an eager tensor.
    """

    def add(count, batch):
        return count + tf.shape(tf.nest.flatten(batch)[0], out_type=tf.int64)[0]

    started, cpu = time.monotonic(), time.process_time()
    examples = int(dataset.reduce(tf.constant(0, tf.int64), add))
    return examples, time.monotonic() - started, time.process_time() - cpu


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


def _bare_chain(
    pattern: str, spec: dict, batch_size: int, compression: str, cores: int
) -> tf.data.Dataset:
    """Read, decompress, one parse_example a batch: sequentially, or ``cores`` files at once."""

    def chain(files):
        return (
            tf.data.TFRecordDataset(files, compression_type=compression)
            .batch(batch_size)
            .map(lambda records: tf.io.parse_example(records, spec))
        )

    files = sorted(tf.io.gfile.glob(pattern))
    options = tf.data.Options()
    if cores == 1:
        options.threading.private_threadpool_size = 1
        options.threading.max_intra_op_parallelism = 1
        return chain(files).with_options(options)
    options.threading.max_intra_op_parallelism = 1
    return (
        tf.data.Dataset.from_tensor_slices(files)
        .interleave(chain, cycle_length=cores, num_parallel_calls=cores, deterministic=False)
        .with_options(options)
    )


def _later_epoch(dataset: tf.data.Dataset) -> tuple[int, float, float]:
    """Reads a cached one-epoch dataset twice: the first pass fills the cache; times the second."""
    _count(dataset)
    return _count(dataset)


# Steps not counted: tracing the step, and the pipeline's start-up (opening the
# shards, autotuning its parallelism, filling the prefetch buffer) before its
# steady state, which is what the starvation test is about.
_WARM_UP_STEPS = 30


def _stamp_after(tensors) -> tf.Tensor:
    """A timestamp taken in the graph once every tensor in ``tensors`` (any nest) exists."""
    with tf.control_dependencies(tf.nest.flatten(tensors)):
        return tf.timestamp()


def _simulated_compute(seconds: float, after: tf.Tensor) -> tf.Tensor:
    """An op that starts once ``after`` exists and takes ``seconds`` and no CPU, as a step
    running on an accelerator does."""
    with tf.control_dependencies([after]):
        return tf.numpy_function(lambda: np.int32(time.sleep(seconds) or 0), [], tf.int32)


def _consume_on_accelerator(
    dataset: tf.data.Dataset, step_seconds: float, batches: int
) -> tuple[float, float, float]:
    """Seconds an accelerator waited for batches, in all, and computing, over ``batches`` steps.

    A GPU step runs asynchronously to the host, which meanwhile takes the
    next batch: here, in one tf.function, each step "computes" on batch i
    while batch i+1 is taken, and the step waits for data only when batch
    i+1 arrives after the computation on batch i ends. Stamps are taken in
    the graph, so Python's cost of calling the function is not counted.
    """
    iterator = iter(dataset)

    @tf.function
    def run(steps):
        batch = next(iterator)
        waiting = computing = tf.constant(0.0, tf.float64)
        started = previous_end = tf.timestamp()
        for _ in tf.range(steps):
            compute_start = _stamp_after(batch)
            compute_end = _stamp_after(_simulated_compute(step_seconds, after=compute_start))
            following = next(iterator)
            ready = _stamp_after(following)
            waiting += tf.maximum(ready - compute_end, 0.0)
            computing += compute_end - compute_start
            previous_end = compute_end
            batch = following
        return waiting, previous_end - started, computing

    run(tf.constant(_WARM_UP_STEPS))
    waiting, total, computing = (float(t) for t in run(tf.constant(batches)))
    # A tf.function's reference cycles would keep the iterator, and its
    # threads, alive and taking CPU from the consumers measured after it.
    iterator = run = None
    gc.collect()
    return waiting, total, computing


def _consume_synchronously(
    dataset: tf.data.Dataset, step_seconds: float, batches: int
) -> tuple[float, float]:
    """Seconds a host-synchronous consumer spent waiting for batches, and in all.

    Each step, inside one tf.function as a Keras train step on a CPU: stamp,
    take the next batch, stamp, compute, stamp. Taking the batch is on the
    step's critical path, so its fixed cost (tf.data's IteratorGetNext)
    counts as waiting even when the batch was ready.
    """
    iterator = iter(dataset)

    @tf.function
    def step():
        start = tf.timestamp()
        with tf.control_dependencies([start]):
            batch = next(iterator)
        ready = _stamp_after(batch)
        end = _stamp_after(_simulated_compute(step_seconds, after=ready))
        return ready - start, end - start

    for _ in range(_WARM_UP_STEPS):
        step()
    waiting = total = 0.0
    for _ in range(batches):
        wait, elapsed = (float(t) for t in step())
        waiting += wait
        total += elapsed
    iterator = step = None
    gc.collect()
    return waiting, total


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
    rates, best, cpu_us = {}, {}, {}

    def record(name: str, measure) -> None:
        """Runs ``measure`` (-> examples, seconds, CPU seconds) args.repeats times; keeps the
        median rate and says how many cores it kept busy (CPU over wall time)."""
        runs, busy, cost = [], [], []
        for _ in range(args.repeats):
            count, seconds, cpu = measure()
            if count != examples:
                raise SystemExit(f"error: {name} read {count:,} examples, expected {examples:,}")
            runs.append(count / seconds)
            busy.append(cpu / seconds)
            cost.append(1e6 * cpu / count)
        rates[name] = float(np.median(runs))
        best[name] = max(runs)
        cpu_us[name] = float(np.median(cost))
        spread = f" (runs: {', '.join(f'{r:,.0f}' for r in runs)})" if len(runs) > 1 else ""
        print(
            f"  {name}: {rates[name]:,.0f} examples/s{spread}, "
            f"{float(np.median(busy)):.2f} cores busy, {cpu_us[name]:.2f} CPU-us an example",
            flush=True,
        )

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
            f"bare chain, sequential ({kind})",
            lambda p=pattern, c=compression: _count(_bare_chain(p, spec, batch, c, 1)),
        )
        record(
            f"bare chain, {os.cpu_count()} cores ({kind})",
            lambda p=pattern, c=compression: _count(_bare_chain(p, spec, batch, c, os.cpu_count())),
        )
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
    return {"rates": rates, "best": best, "cpu_us": cpu_us, "patterns": patterns, "spec": spec}


def _report(rates: dict, best: dict, cpu_us: dict) -> None:
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
        chain, ours = f"bare chain, sequential ({kind})", f"make_dataset, first epoch ({kind})"
        # The CPU an example costs is what the other tenants of a shared machine cannot
        # change; every core spending it on the chain is the limit.
        limit = os.cpu_count() * 1e6 / cpu_us[chain]
        print(
            f"The cores' limit of a first pass: {limit:,.0f} examples/s, {os.cpu_count()} cores "
            f"at the bare chain's {cpu_us[chain]:.2f} CPU-us an example "
            f"({rates[f'bare chain, {os.cpu_count()} cores ({kind})']:,.0f} examples/s measured "
            f"on them). make_dataset's first epoch: {cpu_us[ours]:.2f} CPU-us an example "
            f"({cpu_us[ours] / cpu_us[chain]:.2f}x the chain's), {100 * first / limit:.0f}% of "
            f"the limit (best run {100 * best[ours] / limit:.0f}%); TFX's factory "
            f"{cpu_us[f'TFX tf_dataset_factory ({kind})']:.2f} CPU-us an example, "
            f"{100 * tfx_rate / limit:.0f}% of the limit."
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

    # What the pipeline needs per batch: its delivery to this consumer taking
    # no time (the consumer's own host work included), the median of 3 runs.
    per_batch = float(
        np.median([_consume_on_accelerator(ours(), 0.0, batches)[1] / batches for _ in range(3)])
    )
    first_epoch = batch_size / measured["rates"]["make_dataset, first epoch (tfrecord)"]

    def always_ready():
        return ours().take(1).cache().repeat()

    def naive():
        return _naive(patterns["tfrecord"], spec, batch_size, "").repeat()

    def waits(consume, dataset, compute_seconds):
        waiting, total = consume(dataset, compute_seconds, batches)[:2]
        return 100 * waiting / total

    def on_accelerator(step_seconds):
        """make_dataset on the accelerator, the sleep trimmed until the step lasts step_seconds.

        A sleep overshoots, the more so while the pipeline keeps both cores
        busy: each try takes the last one's overshoot off the sleep (or adds
        what it fell short), until the step lasts 0 to 3% longer than asked.
        """
        sleep = step_seconds
        for _ in range(6):
            waiting, total, computing = _consume_on_accelerator(ours(), sleep, batches)
            overshoot = computing / batches - step_seconds
            if 0 <= overshoot < 0.03 * step_seconds:
                break
            sleep = max(sleep - overshoot, 0.0)
        return sleep, 100 * waiting / total, computing / batches

    print(
        "\nStarvation: a consumer computes (sleeps, using no CPU) a fixed step per batch, "
        f"after {_WARM_UP_STEPS} warm-up steps. make_dataset's time per batch is "
        f"{1000 * per_batch:.2f} ms, delivered to this consumer taking no time "
        f"({1000 * first_epoch:.2f} ms at the first-epoch rate above). "
        "Accelerator: the step overlaps taking the next batch, as a GPU step runs "
        "asynchronously to the host. Host-synchronous: taking the batch is part of the step, "
        "as on a CPU. The floor is one batch held in memory, always ready."
    )
    print(
        "| step / time per batch | step, measured | naive waits | make_dataset waits "
        "| floor | host-synchronous: make_dataset waits | floor |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for factor in (1.0, 1.5, 3.0):
        sleep, ours_waits, step = on_accelerator(factor * per_batch)
        print(
            f"| {factor:.1f} | {1000 * step:.2f} ms ({step / per_batch:.2f}x) "
            f"| {waits(_consume_on_accelerator, naive(), sleep):.1f}% "
            f"| {ours_waits:.2f}% "
            f"| {waits(_consume_on_accelerator, always_ready(), sleep):.2f}% "
            f"| {waits(_consume_synchronously, ours(), sleep):.2f}% "
            f"| {waits(_consume_synchronously, always_ready(), sleep):.2f}% |",
            flush=True,
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
    parser.add_argument("--starvation-batches", type=int, default=1000)
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of each reader; the median is reported"
    )
    args = parser.parse_args()
    # Each consumer is a new tf.function; TensorFlow's retracing warning would bury the table.
    tf.get_logger().setLevel("ERROR")
    print(
        f"{os.cpu_count()} CPUs; TensorFlow {tf.__version__}; batch {args.batch_size}; "
        f"median of {args.repeats} runs each"
    )
    narrow = _measure_shape(os.path.join(args.work, "narrow"), args.features, args.examples, args)
    _report(narrow["rates"], narrow["best"], narrow["cpu_us"])
    _starvation(narrow, args.batch_size, args.starvation_batches)
    wide = _measure_shape(
        os.path.join(args.work, "wide"), args.wide_features, args.wide_examples, args
    )
    _report(wide["rates"], wide["best"], wide["cpu_us"])
    print(f"\nGenerated data: {os.path.abspath(args.work)}")


if __name__ == "__main__":
    main()
