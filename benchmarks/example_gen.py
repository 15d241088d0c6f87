"""Converts the same CSV with ShardedExampleGen and TFX's CsvExampleGen, in one run.

Prints rows/s and MB/s for each, the shard plan ShardedExampleGen achieved
(sizes against the target) and its quarantine against the planted bad rows.
CsvExampleGen fails a whole run on one malformed row, so it reads a copy of
the CSV without the planted rows. Not a test: it prints figures.

    .venv/bin/python benchmarks/example_gen.py --size-mb 1024 --work output/bench
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

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


def _row(rng: random.Random, index: int) -> str:
    return (
        f"{index},{rng.uniform(0, 1e4):.3f},{rng.randint(0, 99)},"
        f"{rng.choice(['red', 'green', 'blue'])},"
        f"{''.join(rng.choices('abcdefghijklmnopqrstuvwxyz', k=16))},"
        f"{rng.random():.5f},{rng.choice(_CITIES)},{rng.randint(0, 1000)},{rng.randint(0, 1)}\n"
    )


def _generate(clean_dir: str, dirty_dir: str, size_bytes: int) -> int:
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


def _run_sharded(source: str, dest: str, target: int) -> dict:
    from components.example_gen.convert import convert
    from components.example_gen.shard_plan import ShardingOptions
    from pipelines.local_runner import DEFAULT_BEAM_ARGS

    return convert(
        source,
        dest,
        source_format="csv",
        sharding=ShardingOptions(target_shard_bytes=target),
        compression="gzip",
        label_key="label",
        beam_pipeline_args=list(DEFAULT_BEAM_ARGS),
    )


def _run_csv_example_gen(source: str, dest: str) -> None:
    from tfx.components.example_gen import utils
    from tfx.components.example_gen.csv_example_gen.executor import Executor
    from tfx.dsl.components.base.base_beam_executor import BaseBeamExecutor
    from tfx.proto import example_gen_pb2
    from tfx.types import standard_artifacts
    from tfx.utils import proto_utils

    from pipelines.local_runner import DEFAULT_BEAM_ARGS

    examples = standard_artifacts.Examples()
    examples.uri = dest
    input_config = utils.make_default_input_config()
    output_config = utils.make_default_output_config(input_config)
    context = BaseBeamExecutor.Context(
        beam_pipeline_args=list(DEFAULT_BEAM_ARGS), tmp_dir=dest + "-tmp"
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


def _split_files(folder: str) -> list[int]:
    return sorted(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(folder)
        for name in names
        if "Split-" in root
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="CSV size to generate (MB)")
    parser.add_argument("--shard-mb", type=int, default=128, help="target shard size (MiB)")
    parser.add_argument("--work", default="output/bench-example-gen", help="scratch folder")
    args = parser.parse_args()

    clean, dirty = os.path.join(args.work, "clean"), os.path.join(args.work, "dirty")
    for out in ("sharded", "csv_example_gen", "csv_example_gen-tmp"):
        shutil.rmtree(os.path.join(args.work, out), ignore_errors=True)
    print(f"Generating {args.size_mb} MB of CSV in {args.work} ...", flush=True)
    rows = _generate(clean, dirty, args.size_mb * 10**6)
    mb = os.path.getsize(os.path.join(clean, "data.csv")) / 1e6
    print(f"{rows:,} rows, {mb:,.0f} MB; {len(BAD_ROWS)} bad rows planted in a copy", flush=True)

    print("ShardedExampleGen ...", flush=True)
    started = time.monotonic()
    report = _run_sharded(dirty, os.path.join(args.work, "sharded"), args.shard_mb * 2**20)
    sharded_s = time.monotonic() - started
    print("CsvExampleGen ...", flush=True)
    started = time.monotonic()
    _run_csv_example_gen(clean, os.path.join(args.work, "csv_example_gen"))
    tfx_s = time.monotonic() - started

    shards = {name: len(split["shards"]) for name, split in report["splits"].items()}
    tfx_files = _split_files(os.path.join(args.work, "csv_example_gen"))
    print("\n| converter | seconds | rows/s | MB/s of CSV | output files (train + eval) |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, seconds, layout in (
        ("ShardedExampleGen", sharded_s, f"{shards['train']} + {shards['eval']}"),
        ("CsvExampleGen", tfx_s, f"{len(tfx_files)}"),
    ):
        print(
            f"| {name} | {seconds:,.0f} | {rows / seconds:,.0f} | {mb / seconds:,.1f} | {layout} |"
        )
    print(f"\nShardedExampleGen speed / CsvExampleGen speed: {tfx_s / sharded_s:.2f}")
    target = args.shard_mb * 2**20
    for name, split in report["splits"].items():
        sizes = ", ".join(f"{s['bytes'] / target:.2f}" for s in split["shards"])
        print(f"Split-{name}: {len(split['shards'])} shards of {sizes} x target")
    print(f"CsvExampleGen files (MiB): {', '.join(f'{b / 2**20:.0f}' for b in tfx_files)}")
    print(
        f"Quarantined {report['quarantined']} rows of {len(BAD_ROWS)} planted "
        f"({report['quarantined_by_reason']}); wrote {report['records_written']:,} "
        f"of {rows:,} good rows"
    )


if __name__ == "__main__":
    main()
