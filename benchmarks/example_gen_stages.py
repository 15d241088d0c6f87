"""ShardedExampleGen's CPU per row, stage by stage, on a table of real size.

Runs ShardedExampleGen's own steps one after the other in one process, each
timed alone (CPU = user + sys of the process): the CSV blocks parsed into
feature columns, tfx_bsl's encoder, the canonical re-serialization, the split
assignment, the spill, the measure and plan, the dealing of records to shard
pieces (uncompressed), GZIP's cost (the same pieces compressed, minus the
uncompressed ones), and the merge of pieces into shards. Then
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
    ("encode", "tfx_bsl's encoder: columns to serialized tf.Examples"),
    ("canonical", "each record re-serialized in one feature order"),
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
    """The table's records through the converter's steps; returns (rows, spilled)."""
    from tfx_bsl.coders import example_coder

    from tfrecord_pipelines.components.example_gen.csv_blocks import plan_blocks
    from tfrecord_pipelines.components.example_gen.record_encoding import ExampleEncoder
    from tfrecord_pipelines.components.example_gen.sources import SourceOptions, plan_source
    from tfrecord_pipelines.components.example_gen.spill import SpillWriter
    from tfrecord_pipelines.components.example_gen.split_assignment import SplitAssigner

    assigner = SplitAssigner(("train", "eval"), (14, 1))
    plan = plan_source("csv", table, "*", assigner=assigner, options=SourceOptions(LABEL))
    converter = plan.converter
    converter.setup()
    raw, canonical = example_coder.RecordBatchToExamplesEncoder(), ExampleEncoder()
    spill = SpillWriter(os.path.join(tempfile.mkdtemp(), "spill"), "bench")
    rows = 0
    for block in (b for path in plan.files for b in plan_blocks(path, plan.block_bytes)):
        with clock.stage("parse"):
            data, _ = next(block.pieces())
            batch = converter._parse_columnar(data)  # noqa: SLF001 - the stage alone
        with clock.stage("encode"):
            raw.encode(batch)
        with clock.stage("canonical"):
            records = canonical.encode(batch)
        with clock.stage("split"):
            splits = list(assigner.assign(records, None, batch))
        with clock.stage("spill"):
            for split in splits:
                spill.add(split.split, split.records)
        rows += batch.num_rows
    with clock.stage("spill"):
        spilled = spill.close()
    # The canonical encoder encodes too.
    clock.seconds["canonical"] -= clock.seconds["encode"]
    return rows, spilled


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


def _child(table: str) -> None:
    clock = _Clock()
    rows, spilled = _converted(table, clock)
    shard_bytes = _written(spilled, clock)
    print(
        json.dumps(
            {"rows": rows, "stages": clock.seconds, "shard_bytes": shard_bytes}
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
