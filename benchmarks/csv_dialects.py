"""The converter's CPU per row on CSV as users hand it: plain, semicolon, gzip, zstd, bz2.

Generates one CSV table (numbers, text with commas and quotes), writes it as
each shape, and converts each with ``convert`` (ShardedExampleGen's executor,
Beam's in-process DirectRunner, GZIP shards) in its own process, timing the
conversion alone (after the imports). With ``--compare REF`` the plain CSV is
converted by revision REF's code too (``revisions.checkout``), interleaved
with this tree's, so before and after come from one run on one machine. A
compressed file is one unit, read by one worker as it decompresses, so on a
single large file the codec's cost shows whole; a folder of several
compressed files spreads over the workers.

    .venv/bin/python benchmarks/csv_dialects.py --size-mb 200 --compare c9c8aa0
"""

from __future__ import annotations

import argparse
import bz2
import csv
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import revisions
from revisions import REPO_ROOT

_CHILD = """
import json, resource, sys, time
from tfrecord_pipelines.components.example_gen.convert import convert
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.local.beam_args import local_beam_args
source, dest = sys.argv[1], sys.argv[2]
options = dict(source_format="csv", sharding=ShardingOptions(), compression="gzip",
               label_key="label")
def cpu():
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
started_cpu, started = cpu(), time.monotonic()
try:
    from tfrecord_pipelines.components.example_gen.settings import ExampleGenSettings
except ImportError:  # --compare with a revision from before ExampleGenSettings (2026-11-28)
    rows = convert(source, dest, **options, beam_pipeline_args=local_beam_args())["records_written"]
else:
    settings = ExampleGenSettings(**options)
    rows = convert(source, dest, settings, beam_pipeline_args=local_beam_args()).records_written
print(json.dumps({"wall": time.monotonic() - started, "cpu": cpu() - started_cpu, "rows": rows}))
"""


def _write_table(path: Path, size_bytes: int) -> int:
    rng = random.Random(5)
    # As a CSV writer quotes them: the delimiters inside quotes, quotes doubled.
    notes = ["plain", '"a, b"', '"say ""hi"""', "x" * 30]
    rows = 0
    with open(path, "w", newline="") as f:
        f.write("id,amount,count,colour,note,label\n")
        while f.tell() < size_bytes:
            lines = []
            for _ in range(10_000):
                note = rng.choice(notes)
                quoted = (
                    f'"{note.replace(chr(34), chr(34) * 2)}"'
                    if any(c in note for c in ',"')
                    else note
                )
                lines.append(
                    f"{rows},{rng.uniform(0, 1000):.3f},{rng.randint(0, 50)},"
                    f"{rng.choice(['red', 'green', 'blue'])},{quoted},{rng.randint(0, 1)}\n"
                )
                rows += 1
            f.write("".join(lines))
    return rows


def _shapes(work: Path, size_bytes: int) -> dict[str, Path]:
    plain = work / "plain"
    plain.mkdir(parents=True)
    _write_table(plain / "table.csv", size_bytes)
    data = (plain / "table.csv").read_bytes()
    shapes = {"plain": plain}
    for name, suffix, write in (
        ("gzip", ".csv.gz", lambda d: gzip.compress(d, 6)),
        ("zstd", ".csv.zst", lambda d: __import__("zstandard").ZstdCompressor().compress(d)),
        ("bz2", ".csv.bz2", lambda d: bz2.compress(d, 9)),
    ):
        folder = work / name
        folder.mkdir()
        (folder / f"table{suffix}").write_bytes(write(data))
        shapes[name] = folder
    semicolon = work / "semicolon"
    semicolon.mkdir()
    # Swap the delimiter outside quotes only: the table's quoted notes hold commas.
    with (
        open(plain / "table.csv", newline="") as src,
        open(semicolon / "table.csv", "w", newline="") as out,
    ):
        csv.writer(out, delimiter=";", lineterminator="\n").writerows(csv.reader(src))
    shapes["semicolon"] = semicolon
    return shapes


def _convert(source: Path, dest: Path, env: dict[str, str] | None = None) -> dict:
    """Converts in a process of its own; returns its wall and CPU seconds and rows."""
    shutil.rmtree(dest, ignore_errors=True)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(source), str(dest)],
        env={**(env or os.environ), "TF_USE_LEGACY_KERAS": "1"},
        capture_output=True, text=True, cwd=REPO_ROOT,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"conversion of {source} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"    {source.name}: {result}", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200, help="plain CSV size (MB)")
    parser.add_argument("--compare", metavar="REF", help="git revision to convert the plain CSV")
    parser.add_argument("--repeat", type=int, default=2, help="runs of the plain CSV each side")
    parser.add_argument("--work", help="scratch folder (default: a temporary one)")
    args = parser.parse_args()
    with ExitStack() as stack:
        work = Path(args.work or stack.enter_context(tempfile.TemporaryDirectory()))
        print(f"Writing a {args.size_mb} MB CSV and its shapes in {work} ...", flush=True)
        shapes = _shapes(work / "data", args.size_mb * 10**6)
        trees = revisions.trees(stack, args.compare)
        results: dict[str, list[dict]] = {}
        for attempt in range(args.repeat):
            for tree, (_, env) in trees.items():
                name = "plain" if tree == "now" else f"plain ({tree})"
                results.setdefault(name, []).append(_convert(shapes["plain"], work / "out", env))
            print(f"  plain, run {attempt + 1}/{args.repeat} done", flush=True)
        sizes = {name: sum(p.stat().st_size for p in f.iterdir()) for name, f in shapes.items()}
        for name in ("semicolon", "gzip", "zstd", "bz2"):
            results[name] = [_convert(shapes[name], work / "out")]
            print(f"  {name} done", flush=True)
    base = statistics.median(r["cpu"] / r["rows"] for r in results["plain"])
    print(f"\n{results['plain'][0]['rows']:,} rows; median of the runs; CPU = user + sys\n")
    print("| input | file MB | rows | wall s | CPU s | CPU µs/row | vs plain |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, runs in results.items():
        wall = statistics.median(r["wall"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        per_row = statistics.median(r["cpu"] / r["rows"] for r in runs)
        size = sizes[name.split(" ")[0]] / 10**6
        print(
            f"| {name} | {size:,.0f} | {runs[0]['rows']:,} | {wall:.1f} | {cpu:.1f} | "
            f"{per_row * 1e6:.1f} | {per_row / base:.2f}x |"
        )


if __name__ == "__main__":
    main()
