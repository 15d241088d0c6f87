"""The daily state in a GCS bucket (fake-gcs-server on 127.0.0.1): a run reads what its window
needs, however many days were recorded, and two runs recording at the same moment lose
nothing, read nothing half-written and read a record written twice once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from object_store_servers import gcs_server

from conftest import REPO_ROOT

SCRIPT = str(REPO_ROOT / "tests" / "daily_state_script.py")
STATE = "gs://state/daily-state/daily"


@pytest.fixture(scope="module")
def bucket(tmp_path_factory):
    root = tmp_path_factory.mktemp("buckets")
    (root / "state").mkdir()
    with gcs_server(root) as url:
        yield url


def _start(url: str, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GCS_", "CLOUD_STORAGE_"))}
    env.update(STORAGE_EMULATOR_HOST=url, TF_USE_LEGACY_KERAS="1")
    return subprocess.Popen(
        [sys.executable, SCRIPT, *args],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run(url: str, *args: str) -> dict | None:
    process = _start(url, *args)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1]) if out.strip() else None


def test_a_run_reads_its_window_not_every_day_recorded(bucket):
    state = f"{STATE}-reads"
    _run(bucket, "populate", state, "40")
    chosen = _run(bucket, "choose", state, "41", "3")
    # Day 41 is not converted yet: the window holds 39 and 40; the span before is 40.
    assert (chosen["window"], chosen["previous"]) == ([39, 40], 40)
    assert chosen["base"] == chosen["baseline"] == chosen["cache"] == [38, 39, 40]
    # 40 conversions and 40 runs recorded: read the window's 2 spans (the span before is
    # one of them) and the one run record chosen for all three roles.
    assert chosen["opened"] == 3


def test_two_runs_recording_at_the_same_moment(bucket):
    state = f"{STATE}-race"
    _run(bucket, "populate", state, "4")
    racers = [_start(bucket, "race", state, name) for name in ("a", "b")]
    # Once both processes have imported TensorFlow, they are told to write at once.
    assert [racer.stdout.readline() for racer in racers] == ["ready\n"] * 2
    for racer in racers:
        racer.stdin.write("go\n")
        racer.stdin.flush()
    for racer in racers:
        out, err = racer.communicate(timeout=600)
        # A half-written record would fail a read with a JSON error.
        assert racer.returncode == 0, err[-3000:]
    chosen = _run(bucket, "choose", state, "7", "3")
    # Neither conversion lost (6 from a, 7 from b); span 5, written by both, once.
    assert chosen["window"] == [5, 6, 7]
    assert chosen["window_uris"][0] == "gs://root/shared/examples"
    records = _run(bucket, "records", state, "5")
    conversions_of_5, models = records["conversions"], records["models"]
    assert conversions_of_5 == 1
    # Both runs' models are recorded; the shared model may be recorded by each (two
    # objects, written at once), and the choice reads it once.
    assert {"gs://root/a/model", "gs://root/b/model", "gs://root/shared/model"} <= set(models)
    assert chosen["baseline_uri"] in {
        "gs://root/a/model",
        "gs://root/b/model",
        "gs://root/shared/model",
    }
