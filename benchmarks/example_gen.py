"""ExampleGen's cost per row against the bare columnar chain, in one run on the same files.

Generates a CSV (9 columns, 6 bad rows planted in a copy), a Parquet copy and
JPEGs, then converts them, each converter in its own process so that its CPU
time (user + sys, its worker processes included) and peak memory are its own:

- the bare chain, the ceiling (on the clean copy): pyarrow.csv reads 32 MiB blocks, tfx_bsl
  encodes them, one SipHash call per batch picks the split, TensorFlow's
  TFRecord writer writes (GZIP, and uncompressed), in one process, no Beam;
- ShardedExampleGen (``convert``): GZIP, gzip:1, uncompressed, GZIP with
  TFDV's statistics of each split computed in the same pass (as the
  pipeline's ExampleGen computes them: ``convert --statistics``), and GZIP on
  the DirectRunner's multi_processing mode with two workers;
- TFX's CsvExampleGen (same in-process DirectRunner; it reads the clean copy:
  one malformed row fails its whole run);
- Parquet: ShardedExampleGen (GZIP) on the Parquet copy;
- images: a plain loop (read each file, wrap it in a tf.Example, write one
  TFRecord file) against ShardedExampleGen on the same JPEGs;
- Spark (``--engine spark``) on local[1] and local[2]: CSV, Parquet, images.
  Its start-up (the session, and TensorFlow imported by each Python worker)
  is timed apart; its CPU is the whole process tree's (the JVM and the
  Python workers included), measured before the session stops.

Times and CPU (the process's and its reaped workers') start after the
imports (TensorFlow, TFX, Beam: about 15 s of CPU in every process). Peak RSS
is the largest of the process and its workers. Not a test: it prints a table
of figures and ratios.

    .venv/bin/python benchmarks/example_gen.py --size-mb 1024 --work output/bench-example-gen

``--table FOLDER`` converts a folder of CSV files instead (the CSV
converters only), e.g. the 16-column table of ``pipeline_scale.py``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

COLUMNS = ["id", "amount", "count", "colour", "note", "ratio", "city", "score", "label"]
BAD_ROWS = [
    "1,2,3",
    "x,1.0,2,red,n,0.5,paris,1,0",
    "5,abc,2,red,n,0.5,paris,1,0",
    "6,1.0,2.5,red,n,0.5,paris,1,0",
    "7,1.0,2,red,n,0.5,paris,1,",
    "8,1.0,2,red,n,0.5,paris,1,0,extra",
]
_CITIES = ["paris", "lima", "oslo", "cairo", "quito", "hanoi"]
IN_MEMORY = ["--direct_running_mode=in_memory"]
TWO_WORKERS = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
# name: (input, how it runs)
CONVERTERS = {
    "bare chain, gzip": ("csv", "bare:gzip"),
    "bare chain, none": ("csv", "bare:none"),
    "ShardedExampleGen, gzip": ("csv", "sharded:gzip:1w"),
    "ShardedExampleGen, gzip, statistics": ("csv", "described:gzip:1w"),
    "ShardedExampleGen, gzip:1": ("csv", "sharded:gzip:1:1w"),
    "ShardedExampleGen, none": ("csv", "sharded:none:1w"),
    "ShardedExampleGen, gzip, 2 workers": ("csv", "sharded:gzip:2w"),
    "CsvExampleGen (TFX), gzip": ("csv", "tfx"),
    "ShardedExampleGen, Parquet, gzip": ("parquet", "sharded:gzip:1w"),
    "plain loop, images": ("images", "plain"),
    "ShardedExampleGen, images, none": ("images", "sharded:none:1w"),
    "Spark local[1], gzip": ("csv", "spark:gzip:local[1]"),
    "Spark local[2], gzip": ("csv", "spark:gzip:local[2]"),
    "Spark local[2], Parquet, gzip": ("parquet", "spark:gzip:local[2]"),
    "Spark local[2], images, none": ("images", "spark:none:local[2]"),
}


def _row(rng: random.Random, index: int) -> str:
    return (
        f"{index},{rng.uniform(0, 1e4):.3f},{rng.randint(0, 99)},"
        f"{rng.choice(['red', 'green', 'blue'])},"
        f"{''.join(rng.choices('abcdefghijklmnopqrstuvwxyz', k=16))},"
        f"{rng.random():.5f},{rng.choice(_CITIES)},{rng.randint(0, 1000)},{rng.randint(0, 1)}\n"
    )


def _generate_csv(clean_dir: str, dirty_dir: str, size_bytes: int) -> int:
    """Writes the CSV twice (clean, and with BAD_ROWS spread in); returns good rows."""
    rng = random.Random(11)
    os.makedirs(clean_dir, exist_ok=True)
    os.makedirs(dirty_dir, exist_ok=True)
    rows = written = 0
    bad = list(BAD_ROWS)
    header = ",".join(COLUMNS) + "\n"
    with (
        open(os.path.join(clean_dir, "data.csv"), "w") as clean,
        open(os.path.join(dirty_dir, "data.csv"), "w") as dirty,
    ):
        clean.write(header)
        dirty.write(header)
        while written < size_bytes:
            chunk = "".join(_row(rng, rows + i) for i in range(100_000))
            rows += 100_000
            written += len(chunk)
            clean.write(chunk)
            dirty.write(chunk)
            if bad:
                dirty.write(bad.pop() + "\n")
        for line in bad:
            dirty.write(line + "\n")
    return rows


def _generate_parquet(clean_dir: str, parquet_dir: str) -> None:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    os.makedirs(parquet_dir, exist_ok=True)
    reader = pacsv.open_csv(os.path.join(clean_dir, "data.csv"))
    with pq.ParquetWriter(os.path.join(parquet_dir, "data.parquet"), reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch, row_group_size=1_000_000)


def _generate_images(folder: str, count: int) -> None:
    import numpy as np

    sys.path.insert(0, _HERE)
    from image_input import CLASSES, _draw

    rng = np.random.default_rng(7)
    for i in range(count):
        os.makedirs(os.path.join(folder, f"class{i % CLASSES}"), exist_ok=True)
        with open(os.path.join(folder, f"class{i % CLASSES}", f"{i:06d}.jpg"), "wb") as f:
            f.write(_draw(rng, i % CLASSES))


# --- what each child process runs ---------------------------------------------------


def _bare_chain(source: str, dest: str, compression: str) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import tensorflow as tf
    from pandas.util import hash_array
    from tfx_bsl.coders import example_coder

    from tfrecord_pipelines.components.data_source import read_header
    from tfrecord_pipelines.components.data_source.csv_types import infer_column_types
    from tfrecord_pipelines.components.example_gen.csv_source import ARROW_READ_TYPES as read_types
    from tfrecord_pipelines.components.example_gen.record_encoding import as_feature_column

    paths = sorted(glob.glob(os.path.join(source, "*.csv")))  # the generated, or --table's
    header = read_header(paths)
    types = infer_column_types(paths, header)
    readers = (
        pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(block_size=32 * 2**20),
            parse_options=pacsv.ParseOptions(invalid_row_handler=lambda row: "skip"),
            convert_options=pacsv.ConvertOptions(
                column_types={n: read_types[t] for n, t in types.items()}, null_values=[""]
            ),
        )
        for path in paths
    )
    encoder = example_coder.RecordBatchToExamplesEncoder()
    options = tf.io.TFRecordOptions(compression_type="GZIP" if compression == "gzip" else "")
    os.makedirs(dest, exist_ok=True)
    writers = [tf.io.TFRecordWriter(os.path.join(dest, f"split-{i}"), options) for i in (0, 1)]
    rows = 0
    for batch in (batch for reader in readers for batch in reader):
        columns = [as_feature_column(batch.column(n), types[n]) for n in header]
        records = encoder.encode(pa.RecordBatch.from_arrays(columns, names=header))
        values = np.empty(len(records), dtype=object)
        values[:] = records
        in_eval = (hash_array(values) % np.uint64(3)) == 2
        for record, split in zip(records, in_eval, strict=True):
            writers[split].write(record)
        rows += len(records)
    for writer in writers:
        writer.close()
    return rows


def _convert(
    source: str,
    dest: str,
    source_format: str,
    compression: str,
    beam_pipeline_args: list[str] | None = None,
    spark_master: str | None = None,
    statistics: bool = False,
) -> dict:
    """Converts as the command line does: on Beam with ``beam_pipeline_args``, or on Spark's
    ``spark_master``."""
    from tfrecord_pipelines.components.example_gen.convert import convert
    from tfrecord_pipelines.components.example_gen.settings import (
        ExampleGenSettings,
        SparkOptions,
    )
    from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions

    settings = ExampleGenSettings(
        source_format=source_format,
        sharding=ShardingOptions(num_readers=10 if source_format == "images" else None),
        compression=compression,
        label_key="label" if source_format != "images" else None,
        engine="spark" if spark_master else "beam",
        spark=SparkOptions(master=spark_master),
    )
    report = convert(
        source, dest, settings, overwrite=True, beam_pipeline_args=beam_pipeline_args,
        statistics=statistics,
    )  # fmt: skip
    return {
        "rows": report.records_written,
        "quarantined": report.quarantined_by_reason,
        "shard_mib": {
            name: [round(s.bytes / 2**20, 1) for s in split.shards]
            for name, split in report.splits.items()
        },
    }


def _sharded(
    source: str, dest: str, source_format: str, compression: str, workers: str,
    statistics: bool = False,
) -> dict:  # fmt: skip
    from tfrecord_pipelines.local.beam_args import local_beam_args

    # As convert passes them: TFX not packaged for workers that do not exist.
    beam_args = local_beam_args(TWO_WORKERS if workers == "2w" else IN_MEMORY)
    return _convert(
        source, dest, source_format, compression, beam_pipeline_args=beam_args,
        statistics=statistics,
    )  # fmt: skip


def _csv_example_gen(source: str, dest: str) -> int:
    from tfx.components.example_gen import utils
    from tfx.components.example_gen.csv_example_gen.executor import Executor
    from tfx.dsl.components.base.base_beam_executor import BaseBeamExecutor
    from tfx.proto import example_gen_pb2
    from tfx.types import standard_artifacts
    from tfx.utils import proto_utils

    from tfrecord_pipelines.local.beam_args import local_beam_args

    examples = standard_artifacts.Examples()
    examples.uri = dest
    input_config = utils.make_default_input_config()
    output_config = utils.make_default_output_config(input_config)
    context = BaseBeamExecutor.Context(
        beam_pipeline_args=local_beam_args(IN_MEMORY), tmp_dir=dest + "-tmp"
    )
    Executor(context).Do(
        {},
        {"examples": [examples]},
        {
            "input_base": source,
            "input_config": proto_utils.proto_to_json(input_config),
            "output_config": proto_utils.proto_to_json(output_config),
            "output_data_format": example_gen_pb2.FORMAT_TF_EXAMPLE,
            "output_file_format": example_gen_pb2.FORMAT_TFRECORDS_GZIP,
        },
    )
    import tensorflow as tf

    files = tf.io.gfile.glob(os.path.join(dest, "Split-*", "*"))
    dataset = tf.data.TFRecordDataset(files, compression_type="GZIP")
    return int(dataset.reduce(0, lambda n, _: n + 1))


def _plain_image_loop(source: str, dest: str) -> int:
    import tensorflow as tf

    os.makedirs(dest, exist_ok=True)
    count = 0
    with tf.io.TFRecordWriter(os.path.join(dest, "images.tfrecord")) as writer:
        for root, _, names in sorted(os.walk(source)):
            for name in sorted(names):
                with open(os.path.join(root, name), "rb") as f:
                    encoded = f.read()
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "image": tf.train.Feature(
                                bytes_list=tf.train.BytesList(value=[encoded])
                            ),
                            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[0])),
                        }
                    )
                )
                writer.write(example.SerializeToString())
                count += 1
    return count


def _warm_worker(_) -> int:
    # What every conversion task imports first (TensorFlow): Spark's start-up, not its work.
    from tfrecord_pipelines.components.example_gen.spark import convert_stage  # noqa: F401

    return os.getpid()


def _warm_workers(spark) -> None:
    """Starts each Python worker and imports TensorFlow in it, as the first task would."""
    from tfrecord_pipelines.components.example_gen.spark.tasks import run_tasks

    cores = spark.sparkContext.defaultParallelism
    run_tasks(spark, list(range(cores * 2)), _warm_worker, "warm up")


def _tree() -> list:
    import psutil

    me = psutil.Process()
    return [me, *me.children(recursive=True)]


def _tree_cpu() -> float:
    """CPU of this process and every live descendant, with what each has reaped."""
    total = 0.0
    for process in _tree():
        try:
            t = process.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except Exception:  # noqa: BLE001 - gone while measured
            continue
    return total


def _peak_rss_mb() -> dict:
    """Peak RSS: the driver (Python + its JVM) and the largest executor Python worker."""
    driver, worker = 0, 0
    for process in _tree():
        try:
            with open(f"/proc/{process.pid}/status") as f:
                peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
            if process.pid == os.getpid() or process.name() == "java":
                driver += peak
            else:
                worker = max(worker, peak)
        except Exception:  # noqa: BLE001 - gone while measured
            continue
    return {"rss_mb": driver / 1024, "worker_rss_mb": worker / 1024}


def _spark(source: str, dest: str, source_format: str, compression: str, master: str) -> dict:
    """Converts on Spark; the session's start and the workers' imports are timed apart."""
    from tfrecord_pipelines.components.example_gen.spark.session import spark_session

    started, cpu_started = time.monotonic(), _tree_cpu()
    with spark_session(master) as spark:
        _warm_workers(spark)
        startup, startup_cpu = time.monotonic() - started, _tree_cpu() - cpu_started
        details = _convert(source, dest, source_format, compression, spark_master=master)
        seconds = time.monotonic() - started - startup
        cpu = _tree_cpu() - cpu_started - startup_cpu
        memory = _peak_rss_mb()
    return {
        "seconds": seconds,
        "cpu": cpu,
        **memory,
        "startup_s": startup,
        "startup_cpu": startup_cpu,
        **details,
    }


def _cpu_seconds() -> float:
    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def _child(how: str, source: str, dest: str, source_format: str) -> None:
    # Imported before the clocks start: every converter pays the same ~15 s of
    # imports once per process, which is not the cost of converting.
    import tensorflow  # noqa: F401
    from tfx.components.example_gen.csv_example_gen import executor  # noqa: F401

    from tfrecord_pipelines.components.example_gen import convert  # noqa: F401

    kind, *rest = how.split(":")
    if kind == "spark":
        print(json.dumps(_spark(source, dest, source_format, rest[0], rest[1])))
        return
    details = {}
    started, cpu_started = time.monotonic(), _cpu_seconds()
    if kind == "bare":
        rows = _bare_chain(source, dest, rest[0])
    elif kind in ("sharded", "described"):
        compression, workers = ":".join(rest[:-1]), rest[-1]
        details = _sharded(
            source, dest, source_format, compression, workers, statistics=kind == "described"
        )
        rows = details.pop("rows")
    elif kind == "tfx":
        rows = _csv_example_gen(source, dest)
    else:
        rows = _plain_image_loop(source, dest)
    peak_kib = max(
        resource.getrusage(who).ru_maxrss
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    seconds, cpu = time.monotonic() - started, _cpu_seconds() - cpu_started
    result = {"rows": rows, "seconds": seconds, "cpu": cpu, "rss_mb": peak_kib / 1024}
    print(json.dumps({**result, **details}))


# --- the parent: runs each converter in its own process, prints the table -----------


def _tree_bytes(folder: str) -> int:
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(folder)
        for name in names
        if "quarantine" not in root
    )


def _measure(how: str, source: str, dest: str, source_format: str) -> dict:
    shutil.rmtree(dest, ignore_errors=True)
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        how,
        source,
        dest,
        source_format,
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    process = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False, env=env)
    if process.returncode:
        raise SystemExit(f"{how} on {source} failed (exit {process.returncode})")
    result = json.loads(process.stdout.strip().splitlines()[-1])
    result["out_mb"] = _tree_bytes(dest) / 1e6
    return result


def _table(results: dict[str, dict], inputs: dict[str, dict]) -> None:
    print(
        "\n| converter | input | records | wall s | records/s | MB/s of input | CPU s "
        "| CPU s per M records | peak RSS MB | output MB |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    spark = {name: r for name, r in results.items() if "startup_s" in r}
    for name, r in results.items():
        source = CONVERTERS[name][0]
        mb = inputs[source]["mb"]
        print(
            f"| {name} | {source} ({mb:,.0f} MB) | {r['rows']:,} | {r['seconds']:,.1f} "
            f"| {r['rows'] / r['seconds']:,.0f} | {mb / r['seconds']:,.1f} | {r['cpu']:,.1f} "
            f"| {r['cpu'] / r['rows'] * 1e6:,.1f} | {r['rss_mb']:,.0f} | {r['out_mb']:,.1f} |"
        )
    if spark:
        print(
            "\nSpark, apart: start-up (session, and TensorFlow imported in its worker "
            "daemon) and peak memory of driver (Python + JVM) and of the largest Python worker"
        )
        print(
            "\n| converter | start-up s | start-up CPU s | driver peak RSS MB "
            "| worker peak RSS MB |"
        )
        print("| --- | ---: | ---: | ---: | ---: |")
        for name, r in spark.items():
            print(
                f"| {name} | {r['startup_s']:,.1f} | {r['startup_cpu']:,.1f} "
                f"| {r['rss_mb']:,.0f} | {r['worker_rss_mb']:,.0f} |"
            )


def _ratio(results, a: str, b: str, field: str) -> str:
    if a not in results or b not in results:
        return "n/a"
    ra, rb = results[a], results[b]
    if field == "cpu_per_row":
        return f"{(ra['cpu'] / ra['rows']) / (rb['cpu'] / rb['rows']):.2f}"
    return f"{(ra['rows'] / ra['seconds']) / (rb['rows'] / rb['seconds']):.2f}"


def _ratios(results: dict[str, dict]) -> None:
    sharded, gzip1 = "ShardedExampleGen, gzip", "ShardedExampleGen, gzip:1"
    print("\nRatios (same run):")
    for label, a, b, field in (
        ("CPU per row, ShardedExampleGen gzip / bare chain gzip", sharded,
         "bare chain, gzip", "cpu_per_row"),
        ("CPU per row, ShardedExampleGen gzip with statistics / bare chain gzip (target <= 1.2)",
         "ShardedExampleGen, gzip, statistics", "bare chain, gzip", "cpu_per_row"),
        ("CPU per row, ShardedExampleGen none / bare chain none", "ShardedExampleGen, none",
         "bare chain, none", "cpu_per_row"),
        ("rows/s, 2 workers / 1 worker (wall clock)", "ShardedExampleGen, gzip, 2 workers",
         sharded, "speed"),
        ("rows/s, ShardedExampleGen gzip / CsvExampleGen", sharded,
         "CsvExampleGen (TFX), gzip", "speed"),
        ("rows/s, Parquet / CSV (both gzip)", "ShardedExampleGen, Parquet, gzip", sharded, "speed"),
        ("images/s, ShardedExampleGen / plain loop", "ShardedExampleGen, images, none",
         "plain loop, images", "speed"),
        ("rows/s, gzip:1 / gzip (level 6)", gzip1, sharded, "speed"),
        ("rows/s, Spark 2 cores / 1 core (target >= 1.7)", "Spark local[2], gzip",
         "Spark local[1], gzip", "speed"),
        ("rows/s, Spark 2 cores / CsvExampleGen (target >= 15)", "Spark local[2], gzip",
         "CsvExampleGen (TFX), gzip", "speed"),
        ("rows/s, Spark 2 cores / Beam 1 worker (target >= 1.6)", "Spark local[2], gzip",
         sharded, "speed"),
        ("rows/s, Spark 2 cores / Beam 2 workers", "Spark local[2], gzip",
         "ShardedExampleGen, gzip, 2 workers", "speed"),
        ("CPU per row, Spark 2 cores / bare chain gzip (target <= 1.5)", "Spark local[2], gzip",
         "bare chain, gzip", "cpu_per_row"),
        ("CPU per row, Spark 1 core / bare chain gzip", "Spark local[1], gzip",
         "bare chain, gzip", "cpu_per_row"),
        ("images/s, Spark 2 cores / plain loop (target >= 0.5)", "Spark local[2], images, none",
         "plain loop, images", "speed"),
        ("rows/s, Spark Parquet / Spark CSV (2 cores)", "Spark local[2], Parquet, gzip",
         "Spark local[2], gzip", "speed"),
    ):  # fmt: skip
        print(f"  {label}: {_ratio(results, a, b, field)}")
    if gzip1 in results and sharded in results:
        growth = results[gzip1]["out_mb"] / results[sharded]["out_mb"]
        print(f"  output bytes, gzip:1 / gzip: {growth:.2f}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(*sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="CSV size to generate (MB)")
    parser.add_argument("--images", type=int, default=5000, help="JPEGs to generate")
    parser.add_argument("--work", default="output/bench-example-gen", help="scratch folder")
    parser.add_argument(
        "--table", metavar="FOLDER",
        help="convert this folder of CSV files (a 'label' column, no planted bad rows) instead "
        "of the generated CSV; only the CSV converters run",
    )  # fmt: skip
    parser.add_argument(
        "--only", action="append", choices=sorted(CONVERTERS), metavar="CONVERTER",
        help="run only these converters (repeatable; default: all)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.table:
        _measure_all(args, {"clean": args.table, "csv": args.table}, planted=0)
        return

    folders = {
        name: os.path.join(args.work, name) for name in ("clean", "csv", "parquet", "images")
    }
    csv_file = os.path.join(folders["csv"], "data.csv")
    size = os.path.getsize(csv_file) if os.path.exists(csv_file) else 0
    if not args.size_mb * 10**6 <= size < (args.size_mb + 1) * 10**6 * 1.1:
        for name in ("clean", "csv", "parquet"):
            shutil.rmtree(folders[name], ignore_errors=True)
        print(f"Generating {args.size_mb:,} MB of CSV and a Parquet copy ...", flush=True)
        _generate_csv(folders["clean"], folders["csv"], args.size_mb * 10**6)
        _generate_parquet(folders["clean"], folders["parquet"])
    images = sum(len(names) for _, _, names in os.walk(folders["images"]))
    if images != args.images:
        shutil.rmtree(folders["images"], ignore_errors=True)
        print(f"Generating {args.images:,} JPEGs ...", flush=True)
        _generate_images(folders["images"], args.images)
    _measure_all(args, folders, planted=len(BAD_ROWS))


def _measure_all(args: argparse.Namespace, folders: dict[str, str], planted: int) -> None:
    """Runs each converter asked for whose input is in ``folders``; prints the tables."""
    inputs = {name: {"mb": _tree_bytes(folder) / 1e6} for name, folder in folders.items()}
    results = {}
    for name, (source, how) in CONVERTERS.items():
        if (args.only and name not in args.only) or source not in folders:
            continue
        # Neither TFX's CsvExampleGen nor the bare chain survives a malformed row.
        folder = folders["clean"] if how == "tfx" or how.startswith("bare") else folders[source]
        print(f"{name} ...", flush=True)
        results[name] = _measure(how, folder, os.path.join(args.work, "out"), source)
        r = results[name]
        print(
            f"  {r['rows']:,} records in {r['seconds']:,.1f} s, {r['cpu']:,.1f} CPU s", flush=True
        )
    shutil.rmtree(os.path.join(args.work, "out"), ignore_errors=True)
    shutil.rmtree(os.path.join(args.work, "out-tmp"), ignore_errors=True)
    print(f"\n{os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}")
    _table(results, inputs)
    _ratios(results)
    for name, r in results.items():
        if "shard_mib" in r and CONVERTERS[name][0] == "csv":
            print(f"{name}: shards (MiB, target 128) {r['shard_mib']}; quarantined "
                  f"{r['quarantined']} ({planted} rows planted)")  # fmt: skip


if __name__ == "__main__":
    main()
