"""Two runs on one output folder: the second stops at once, naming the first.

That a killed run's lock blocks nothing is shown by every test in test_crash_recovery.
"""

from __future__ import annotations

import sqlite3

import pytest

from conftest import run_summary
from running_pipeline import FAST, PENGUINS, finish, lock_holder, start_run, wait_for

pytestmark = pytest.mark.faults


def test_second_run_on_the_same_output_stops_at_once_naming_the_first(tmp_path):
    output = tmp_path / "out"
    args = ("--output", str(output), *FAST)
    first = start_run(*args)
    wait_for(first, lambda: lock_holder(output).get("pid") == first.pid, "the first run's lock")
    status, text = finish(start_run(*args))
    # The second gave up while the first still ran, with one line naming it.
    assert first.poll() is None
    assert status == 1
    assert text.strip().splitlines() == [
        f"error: {output} is in use by another run (process {first.pid} on "
        f"{lock_holder(output)['host']}, started {lock_holder(output)['started']}: "
        f"python -m tfrecord_pipelines run {' '.join(args)}); wait for it to finish or pass "
        "another --output."
    ]
    status, text = finish(first)
    assert status == 0, text[-3000:]
    # The first run's store is sound and its summary is its own.
    with sqlite3.connect(output / "metadata" / PENGUINS / "metadata.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert run_summary(output, PENGUINS, text).pushed_model is not None
