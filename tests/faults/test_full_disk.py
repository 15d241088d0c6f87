"""Runs and conversions whose output fills a small disk (a tmpfs) or cannot be written."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ml_metadata.proto import metadata_store_pb2

from conftest import REPO_ROOT, run_cli
from example_data import write_csv
from running_pipeline import FAST, PENGUINS, executions_by_node, run, run_states
from tfrecord_pipelines.local.disk_space import tree_bytes

pytestmark = pytest.mark.faults

_State = metadata_store_pb2.Execution


@contextlib.contextmanager
def small_disk(folder: Path, size_bytes: int, read_only: bool = False):
    """Mounts a tmpfs of ``size_bytes`` on ``folder`` (root, as in CI), unmounted after."""
    folder.mkdir(parents=True, exist_ok=True)
    options = f"size={size_bytes}" + (",ro" if read_only else "")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.fail(f"The full-disk tests mount a tmpfs and need root: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _resize(folder: Path, size_bytes: int) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size_bytes}", str(folder)], check=True)


def _assert_one_line_disk_error(text: str, output: Path) -> None:
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text[-3000:]
    assert errors[0].startswith(f"error: No space left on the disk of {output}")
    assert "free of" in errors[0] and "needs about" in errors[0]
    assert "Traceback" not in text


def _serving_versions(output: Path) -> list[str]:
    folder = output / "serving_model" / PENGUINS
    return sorted(os.listdir(folder)) if folder.is_dir() else []


def test_disk_full_while_pushing_publishes_no_model_and_a_rerun_finishes(tmp_path):
    # What a complete run takes on this machine, measured, then a disk a little smaller:
    # the run fails in its last writes, the Pusher's copies and their record.
    with small_disk(tmp_path / "big", 64 * 2**20) as disk:
        status, text = run("--output", str(disk / "out"), *FAST)
        assert status == 0, text[-3000:]
        model_bytes = tree_bytes(str(next((disk / "out" / "serving_model" / PENGUINS).iterdir())))
        # What the disk accounts (whole pages per file), not the files' sizes.
        complete_run_bytes = shutil.disk_usage(disk).used
    size = complete_run_bytes - model_bytes // 2
    with small_disk(tmp_path / "small", size) as disk:
        output = disk / "out"
        status, text = run("--output", str(output), *FAST)
        assert status == 1
        _assert_one_line_disk_error(text, output)
        executions = executions_by_node(output)
        assert executions["Evaluator"][0].last_known_state == _State.COMPLETE
        assert executions["Pusher"][0].last_known_state != _State.COMPLETE
        # No model reached the serving folder, staged or not.
        assert _serving_versions(output) == []
        # With room again, the same run finishes and reuses all but the Pusher.
        _resize(disk, 64 * 2**20)
        status, text = run("--output", str(output), *FAST)
        assert status == 0, text[-3000:]
        states = run_states(output, text)
        assert states["Pusher"] == "complete" and states["Trainer"] == "cached"
        (version,) = _serving_versions(output)
        assert (output / "serving_model" / PENGUINS / version / "saved_model.pb").is_file()


def test_disk_full_at_the_start_is_one_line(tmp_path):
    with small_disk(tmp_path / "tiny", 256 * 1024) as disk:
        status, text = run("--output", str(disk / "out"), *FAST)
    assert status == 1
    _assert_one_line_disk_error(text, disk / "out")


def test_convert_that_fills_the_disk_leaves_no_shard_plan(tmp_path):
    data = write_csv(tmp_path / "csv", rows=40_000, bad_rows=())
    with small_disk(tmp_path / "disk", 512 * 1024) as disk:
        dest = disk / "shards"
        result = run_cli("convert", str(data), str(dest), "--compression", "none")
        assert result.returncode == 1
        (error,) = result.stderr.strip().splitlines()
        assert error.startswith(f"error: No space left on the disk of {dest}")
        # Shards may be there, half written; nothing vouches for them.
        assert not (dest / "shard_plan.json").exists()


def test_output_that_is_a_file_or_read_only_is_one_line(tmp_path):
    a_file = tmp_path / "taken"
    a_file.write_text("not a folder")
    result = run_cli("run", "--output", str(a_file), *FAST)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: Output folder {a_file} is a file; pass a folder."
    ]
    with small_disk(tmp_path / "ro", 1024 * 1024, read_only=True) as disk:
        for command in (
            ("run", "--output", str(disk / "out"), *FAST),
            ("convert", str(REPO_ROOT / "data" / PENGUINS), str(disk / "out")),
        ):
            result = run_cli(*command)
            assert result.returncode == 2
            assert result.stderr.strip().splitlines() == [
                f"error: Output folder {disk / 'out'} is not writable: Read-only file system."
            ]


def test_a_rolled_back_commit_is_a_full_disk_only_on_a_full_disk(tmp_path):
    # SQLite rolls back a transaction whose write found the disk full; ML Metadata's COMMIT
    # then fails with this. On a disk with room, it is some other fault and stays one.
    from tfrecord_pipelines.local.disk_space import disk_full_message

    error = RuntimeError(
        "Error when executing query: cannot commit - no transaction is active query: COMMIT;"
    )
    assert disk_full_message(error, str(tmp_path), None) is None
    with small_disk(tmp_path / "small", 2**20) as disk:
        message = disk_full_message(error, str(disk), None)
    assert message.startswith(f"No space left on the disk of {disk}: ")
