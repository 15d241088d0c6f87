"""What SpanWindow reads of the daily state as recorded days pile up, in a GCS bucket.

Starts fake-gcs-server on 127.0.0.1, records ``--days`` days in a bucket
(each day a conversion of its span and a run over a window of 3 spans, as
SpanWindow and RecordRun write them), then, each in a process of its own as
a pod would, chooses what day N+1 builds on (its window of ``--window``
spans, the span before, the base model, the baseline and the analyzer
cache), and reads the state as runs read it before 2026-11-28: every record.
Prints the records opened, the server's requests, wall and CPU seconds.
Not a test.

    .venv/bin/python benchmarks/daily_state_reads.py --days 30 1000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "daily_state_script.py"
sys.path.insert(0, str(ROOT / "tests"))

# Every record, as SpanWindow read them before (daily_state's full readers).
_READ_ALL = """
import json, sys, time
from tfrecord_pipelines.components.storage import object_stores
object_stores.configure(sys.argv[1:])
from tfrecord_pipelines.components.daily import daily_state
from tfrecord_pipelines.components.storage import filesystem
opened = []
open_file = filesystem.open_file
filesystem.open_file = lambda path, mode="r": opened.append(path) or open_file(path, mode)
wall, cpu = time.monotonic(), time.process_time()
daily_state.conversions(sys.argv[1]), daily_state.runs(sys.argv[1])
print(json.dumps({"opened": len(opened), "wall": time.monotonic() - wall,
                  "cpu": time.process_time() - cpu}))
"""


def _parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, nargs="+", default=[30, 1000])
    parser.add_argument("--window", type=int, default=30, help="spans of day N+1's window")
    args = parser.parse_args(argv)
    if min(args.days) < 2 or args.window < 1:
        parser.error("--days must be 2 or more, --window 1 or more")
    return args


def _python(url: str, *args: str) -> dict | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GCS_", "CLOUD_STORAGE_"))}
    env.update(STORAGE_EMULATOR_HOST=url, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    out = done.stdout.strip()
    return json.loads(out.splitlines()[-1]) if out else None


def main(argv=None) -> None:
    args = _parse_args(argv)
    from object_store_servers import gcs_server, logged_requests

    print(
        "| days recorded | reader | records opened | requests | wall s | CPU s |\n"
        "| ---: | --- | ---: | ---: | ---: | ---: |"
    )
    with tempfile.TemporaryDirectory() as scratch:
        buckets = Path(scratch, "buckets")
        (buckets / "state").mkdir(parents=True)
        log = Path(scratch, "requests.log")
        with gcs_server(buckets, request_log=log) as url:
            for days in args.days:
                state = f"gs://state/days-{days}"
                started = time.monotonic()
                _python(url, str(SCRIPT), "populate", state, str(days))
                print(f"<!-- {days} days recorded in {time.monotonic() - started:.0f} s -->")
                for reader, command in (
                    ("now: the window's", [str(SCRIPT), "choose", state, str(days + 1),
                                           str(args.window)]),
                    ("before: every record", ["-c", _READ_ALL, state]),
                ):  # fmt: skip
                    before = len(logged_requests(log))
                    found = _python(url, *command)
                    requests = len(logged_requests(log)) - before
                    print(
                        f"| {days:,} | {reader} | {found['opened']:,} | {requests:,} | "
                        f"{found['wall']:.2f} | {found['cpu']:.2f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
