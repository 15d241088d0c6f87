"""ShardedExampleGen on a Spark cluster (local-cluster: a master, workers, executor JVMs).

An executor is SIGKILLed in the middle of a conversion task, after it has
spilled part of its records; Spark starts another and retries the task. The
output must be Beam's: the retried attempt's records replace, never join,
the killed attempt's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from example_data import write_csv, write_digit_images
from spark_comparison import assert_same_conversion, convert_with
from tfrecord_pipelines.components.example_gen.spark.convert_stage import KILL_EXECUTOR_ENV
from tfrecord_pipelines.components.example_gen.spark.session import spark_session

CLUSTER = "local-cluster[2,1,1024]"
KILLED_PARTITION = 1


def _executor_jvms() -> set[int]:
    pids = set()
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and b"CoarseGrainedExecutorBackend" in (entry / "cmdline").read_bytes()
            ):
                pids.add(int(entry.name))
        except OSError:
            continue  # gone while listing
    return pids


@pytest.fixture(scope="module")
def cluster():
    """Two executors of one core; each conversion's partition 1 kills its executor once."""
    conf = {f"spark.executorEnv.{KILL_EXECUTOR_ENV}": str(KILLED_PARTITION)}
    with spark_session(CLUSTER, conf) as session:
        yield session


@pytest.mark.parametrize("source_format", ["csv", "images"])
def test_a_killed_executor_s_task_is_retried_and_its_output_replaced(
    cluster, tmp_path, source_format
):
    if source_format == "csv":
        source = write_csv(tmp_path / "csv", rows=6000)
        options = dict(label_key="label", block_bytes=32 * 1024)
    else:
        write_digit_images(tmp_path / "images", per_class=60)
        source, options = tmp_path / "images", {}
    before = _executor_jvms()
    assert len(before) == 2
    convert_with("beam", source, tmp_path / "beam", source_format, **options)
    converted = convert_with(
        "spark", source, tmp_path / "spark", source_format, spark_master=CLUSTER, **options
    )
    after = _executor_jvms()
    assert before - after, "no executor was killed"
    assert len(after) == 2, "the cluster did not replace the killed executor"
    assert converted["quarantined"] > 0
    assert_same_conversion(tmp_path / "beam", tmp_path / "spark")
