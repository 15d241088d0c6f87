"""Requests a bucket answers while the command line resolves ``--data``: a Hive Parquet folder
on fake-gcs-server (127.0.0.1), through ``compile``.

    .venv/bin/python benchmarks/data_listing.py [--days 7] [--regions 2] [--compare REF]

Counts the requests in the server's own log (each one a round trip to a real bucket),
by kind, for this tree and, with ``--compare``, revision REF's code on the same folder.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import revisions

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))


def _write_hive(bucket: Path, days: int, regions: int) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = 0
    for day in range(1, days + 1):
        for region in range(regions):
            folder = bucket / "hive" / f"day=2026-11-{day:02d}" / f"region=r{region}"
            folder.mkdir(parents=True)
            table = pa.table(
                {"x": [0.5 * i for i in range(100)], "label": [i % 2 for i in range(100)]}
            )
            pq.write_table(table, folder / "part-0.parquet")
            files += 1
    return files


def _compile(tree: Path, env: dict, endpoint: str, output: Path, log: Path) -> dict:
    before = log.read_text().count("\n")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tfrecord_pipelines", "compile", "--data", "gs://lake/hive/",
         "--label", "label", "--output", str(output)],
        env={**env, "STORAGE_EMULATOR_HOST": endpoint, "TF_USE_LEGACY_KERAS": "1"},
        cwd=tree, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"compile failed:\n{done.stderr[-3000:]}")
    from object_store_servers import is_listing, logged_requests

    kinds = collections.Counter(
        "list" if is_listing(path) else "object metadata or read"
        for _, path in logged_requests(log, before)
    )
    return {"requests": sum(kinds.values()), **kinds, "wall": time.monotonic() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--regions", type=int, default=2)
    parser.add_argument("--compare", metavar="REF", help="also measure revision REF's code")
    args = parser.parse_args()
    from object_store_servers import gcs_server

    with tempfile.TemporaryDirectory() as scratch, contextlib.ExitStack() as stack:
        buckets = Path(scratch) / "buckets"
        files = _write_hive(buckets / "lake", args.days, args.regions)
        log = Path(scratch) / "server.log"
        endpoint = stack.enter_context(gcs_server(buckets, request_log=log))
        results = {
            name: _compile(
                tree, env, endpoint.removeprefix("http://"), Path(scratch) / "p.yaml", log
            )
            for name, (tree, env) in revisions.trees(stack, args.compare).items()
        }
    print(f"\ncompile --data gs://lake/hive/ ({files} Parquet files, {args.days} day=, "
          f"{args.regions} region= folders each)\n")  # fmt: skip
    print("| code | requests | list | object metadata or read | wall s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, r in results.items():
        print(f"| {name} | {r['requests']} | {r.get('list', 0)} | "
              f"{r.get('object metadata or read', 0)} | {r['wall']:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
