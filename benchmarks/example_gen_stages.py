"""ShardedExampleGen's CPU per row, stage by stage, on a table of real size.

Runs ShardedExampleGen's own steps one after the other in one process, each
timed alone (CPU = user + sys of the process): the CSV blocks parsed into
feature columns, their encoding into serialized tf.Examples, the split
assignment, the spill, the measure and plan, the dealing of records to shard
pieces (uncompressed), GZIP's cost (the same pieces compressed, minus the
uncompressed ones), and the merge of pieces into shards; then TFDV's
statistics of the same columns, generator by generator, with ExampleGen's
settings and with TFDV's defaults (see ``_statistics``). Then
``convert`` on the same table in a process of its own, for the whole
conversion's CPU. With ``--compare REF`` the same runs on revision REF's code
first (``revisions.checkout``). Not a test: it prints a table.

    .venv/bin/python benchmarks/example_gen_stages.py --rows 1500000 --compare HEAD~2
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("PYTHONWARNINGS", "ignore")
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)

LABEL = "label"
STAGES = (
    ("parse", "CSV blocks read and parsed into feature columns (pyarrow)"),
    ("encode", "columns to serialized tf.Examples, features in one order"),
    ("split", "split assignment (one hash call per batch)"),
    ("spill", "spill files written (records, sample, index)"),
    ("plan", "splits measured and planned"),
    ("deal", "records dealt to shard pieces, written uncompressed"),
    ("gzip", "GZIP: the same pieces compressed, less the uncompressed ones"),
    ("merge", "pieces joined into shards"),
)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Clock:
    """Sums CPU seconds by stage."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def stage(self, name: str):
        started = _cpu()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + _cpu() - started


def _converted(table: str, clock: _Clock):
    """The table's records through the converter's steps.

    Returns (rows, spilled files, each split's feature column batches).
    """
    from tfrecord_pipelines.components.example_gen.csv_blocks import plan_blocks
    from tfrecord_pipelines.components.example_gen.record_encoding import ExampleEncoder
    from tfrecord_pipelines.components.example_gen.sources import SourceOptions, plan_source
    from tfrecord_pipelines.components.example_gen.spill import SpillWriter
    from tfrecord_pipelines.components.example_gen.split_assignment import SplitAssigner

    assigner = SplitAssigner(("train", "eval"), (14, 1))
    plan = plan_source("csv", table, "*", assigner=assigner, options=SourceOptions(LABEL))
    converter = plan.converter
    converter.setup()
    encoder = ExampleEncoder()
    spill = SpillWriter(os.path.join(tempfile.mkdtemp(), "spill"), "bench")
    columns: dict[str, list] = {}
    rows = 0
    for block in (b for path in plan.files for b in plan_blocks(path, plan.block_bytes)):
        with clock.stage("parse"):
            data, _ = next(block.pieces())
            batch = converter._parse_columnar(data)  # noqa: SLF001 - the stage alone
        with clock.stage("encode"):
            records = encoder.encode(batch)
        with clock.stage("split"):
            splits = list(assigner.assign(records, None, batch))
        with clock.stage("spill"):
            for split in splits:
                spill.add(split.split, split.records)
        for split in splits:
            columns.setdefault(split.split, []).append(split.columns)
        rows += batch.num_rows
    with clock.stage("spill"):
        spilled = spill.close()
    return rows, spilled, columns


def _written(spilled, clock: _Clock) -> int:
    """Deals, compresses and merges the spilled records; returns the shards' bytes."""
    from tfrecord_pipelines.components.example_gen import sharded_writer
    from tfrecord_pipelines.components.example_gen.shard_plan import requested_sharding

    with clock.stage("plan"):
        plans = {}
        for split in {s.split for s in spilled}:
            measure = sharded_writer.measure_split(s for s in spilled if s.split == split)
            plans[split] = sharded_writer.plan_split(measure, requested_sharding(), "gzip")
    folder = tempfile.mkdtemp()
    shard_bytes = 0
    for compression in ("none", "gzip"):
        pieces: dict[tuple, list] = {}
        with clock.stage("deal" if compression == "none" else "gzip"):
            for one in spilled:
                writer = sharded_writer.PieceWriter(
                    os.path.join(folder, compression, one.split), compression, "bench"
                )
                writer.write(one.path, plans[one.split])
                for shard, piece in writer.close():
                    pieces.setdefault((one.split, shard), []).append(piece)
        if compression == "gzip":
            with clock.stage("merge"):
                for (split, shard), parts in pieces.items():
                    path = os.path.join(folder, f"{split}-{shard:05d}.gz")
                    sharded_writer.merge_pieces(parts, path, remove=True)
                    shard_bytes += os.path.getsize(path)
    clock.seconds["gzip"] -= clock.seconds["deal"]
    shutil.rmtree(folder)
    return shard_bytes


def _statistics(columns: dict[str, list]) -> dict[str, float]:
    """CPU seconds of each TFDV generator on each split's columns, as ExampleGen feeds them.

    The generators run in this process (``add_input`` on each batch, then
    ``extract_output``), not in a Beam pipeline, so the figure is the
    generator's own work. TFDV's top-k of strings is a Beam transform in
    ExampleGen's pass; here its in-memory form (the sketch-based one TFDV
    uses for in-memory statistics) stands for it. "ours" are ExampleGen's
    settings (``statistics.stats_options``, the label's values counted);
    "default" are ``tfdv.StatsOptions()``'s.
    """
    # TFDV's own list of generators for a StatsOptions (not public API: a
    # benchmark, not shipped; it fails loudly if TFDV moves it).
    import tensorflow_data_validation as tfdv
    from tensorflow_data_validation.statistics import stats_impl

    from tfrecord_pipelines.components.example_gen import statistics

    settings = {
        "ours": statistics.stats_options("csv", [LABEL]),
        "default": tfdv.StatsOptions(),
    }
    seconds: dict[str, float] = {}
    for setting, options in settings.items():
        for generator in stats_impl.get_generators(options, in_memory=True):
            name = f"{setting}: {type(generator).__name__}"
            if isinstance(generator, statistics.ValueCounts):
                name = f"{setting}: ValueCounts[{LABEL}]"
            started = _cpu()
            for batches in columns.values():
                accumulator = generator.create_accumulator()
                for batch in batches:
                    accumulator = generator.add_input(accumulator, batch)
                generator.extract_output(generator.compact(accumulator))
            seconds[name] = seconds.get(name, 0.0) + _cpu() - started
    return seconds


def _child(table: str) -> None:
    clock = _Clock()
    rows, spilled, columns = _converted(table, clock)
    shard_bytes = _written(spilled, clock)
    statistics = _statistics(columns)
    print(
        json.dumps(
            {"rows": rows, "stages": clock.seconds, "shard_bytes": shard_bytes,
             "statistics": statistics}
        )
    )  # fmt: skip


def _convert_cpu(table: str, env: dict) -> float:
    """CPU seconds of ``convert`` on the table in a process of its own, imports included."""
    dest = tempfile.mkdtemp()
    command = [sys.executable, "-m", "tfrecord_pipelines", "convert", table, dest + "/out"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command + ["--label", LABEL], env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(dest)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _measure(table: str, env: dict) -> dict:
    child = subprocess.run(
        [sys.executable, __file__, "--child", table], env=env, check=True,
        capture_output=True, text=True,
    )  # fmt: skip
    measured = json.loads(child.stdout.strip().splitlines()[-1])
    measured["convert"] = _convert_cpu(table, env)
    return measured


def _print(results: dict[str, dict]) -> None:
    names = list(results)
    rows = results[names[-1]]["rows"]
    print(f"\n{rows:,} rows; CPU µs per row (user + sys):\n")
    print("| stage | " + " | ".join(names) + " |")
    print("| --- | " + " | ".join("---:" for _ in names) + " |")

    def line(label: str, values: list[float]) -> None:
        print(f"| {label} | " + " | ".join(f"{1e6 * v / rows:.2f}" for v in values) + " |")

    for stage, what in STAGES:
        line(f"{stage}: {what}", [r["stages"].get(stage, 0.0) for r in results.values()])
    line("**sum of the stages**", [sum(r["stages"].values()) for r in results.values()])
    line("`convert`, whole process (imports included)", [r["convert"] for r in results.values()])
    print("\nStatistics of the same columns, by generator, CPU µs per row:\n")
    print("| generator | " + " | ".join(names) + " |")
    print("| --- | " + " | ".join("---:" for _ in names) + " |")
    generators = dict.fromkeys(g for r in results.values() for g in r.get("statistics", {}))
    for generator in generators:
        line(generator, [r.get("statistics", {}).get(generator, 0.0) for r in results.values()])
    for setting in ("ours", "default"):
        line(f"**{setting}, all generators**", [
            sum(v for g, v in r.get("statistics", {}).items() if g.startswith(setting + ":"))
            for r in results.values()
        ])  # fmt: skip
    for name, result in results.items():
        print(f"{name}: shards {result['shard_bytes'] / 2**20:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_500_000)
    parser.add_argument("--work", default="output/bench-example-gen-stages")
    parser.add_argument("--compare", metavar="REF", help="also measure revision REF's code")
    parser.add_argument("--child", metavar="TABLE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return
    import revisions
    from scale_table import write_table

    table = os.path.abspath(os.path.join(args.work, f"table-{args.rows}"))
    if not os.path.isdir(table):
        print(f"writing {args.rows:,} rows to {table} ...", flush=True)
        write_table(args.rows, table + ".partial", binary=True)
        os.rename(table + ".partial", table)
    results = {}
    with contextlib.ExitStack() as stack:
        for name, (_, env) in revisions.trees(stack, args.compare).items():
            print(f"measuring {name} ...", flush=True)
            started = time.monotonic()
            results[name] = _measure(table, env)
            print(f"  {time.monotonic() - started:.0f} s", flush=True)
    _print(results)


if __name__ == "__main__":
    main()
