"""One conversion on Spark: convert, plan, write shards; the executor finishes as on Beam."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from tfrecord_pipelines.components.example_gen.quarantine import (
    QUARANTINE_FILE_PREFIX,
    QUARANTINE_FILE_SUFFIX,
)
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.components.example_gen.sharded_writer import (
    measure_split,
    plan_split,
    write_outcome,
)
from tfrecord_pipelines.components.example_gen.sources import SourcePlan
from tfrecord_pipelines.components.example_gen.spark.convert_stage import convert_source
from tfrecord_pipelines.components.example_gen.spark.session import spark_session
from tfrecord_pipelines.components.example_gen.spark.shard_stage import write_shards
from tfrecord_pipelines.components.storage import filesystem


def _commit_quarantine(files: list[str], quarantine_uri: str) -> None:
    """Moves the successful attempts' quarantine files in, named as Beam names its files."""
    filesystem.make_folder(quarantine_uri)
    files = sorted(files)
    if not files:  # Beam writes one empty file; so does this
        with filesystem.open_file(
            os.path.join(
                quarantine_uri, f"{QUARANTINE_FILE_PREFIX}-00000-of-00001{QUARANTINE_FILE_SUFFIX}"
            ),
            "w",
        ):
            pass
        return
    for number, path in enumerate(files):
        name = f"{QUARANTINE_FILE_PREFIX}-{number:05d}-of-{len(files):05d}{QUARANTINE_FILE_SUFFIX}"
        filesystem.replace(path, os.path.join(quarantine_uri, name))


def convert_with_spark(
    plans: list[SourcePlan],
    *,
    split_dirs: Mapping[str, str],
    outcome_paths: Mapping[str, str],
    quarantine_uri: str,
    spill_dir: str,
    sharding: ShardingOptions,
    compression: str,
    master: str,
    conf: Mapping[str, str] | None = None,
) -> None:
    """Converts the source plans on Spark into each split's shards and outcome file.

    Leaves what Beam's pipeline leaves: shards under temporary names in
    ``split_dirs``, an outcome file per split (``sharded_writer.write_outcome``)
    and the quarantine files, for the executor's ``finalize_split``.

    Raises:
      RuntimeError: if a Spark job fails, in one line naming the failure (the
        whole trace chained).
    """
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    started = time.monotonic()
    try:
        with spark_session(master, conf) as spark:
            print(
                f"Converting on Spark ({spark.sparkContext.master}, session ready in "
                f"{time.monotonic() - started:.1f} s) ...",
                flush=True,
            )
            spilled, quarantine_files = _convert(spark, plans, spill_dir, started)
            shard_plans = {
                name: plan_split(
                    measure_split(s for s in spilled if s.split == name), sharding, compression
                )
                for name in split_dirs
            }
            shards = write_shards(spark, spilled, shard_plans, dict(split_dirs), compression)
    except (PySparkException, Py4JJavaError) as e:
        raise RuntimeError(f"the Spark job failed: {_last_line(e)}") from e
    print(
        f"  wrote {sum(map(len, shards.values()))} shards ({time.monotonic() - started:.1f} s)",
        flush=True,
    )
    for name, path in outcome_paths.items():
        write_outcome(shards[name], shard_plans[name], path)
    _commit_quarantine(quarantine_files, quarantine_uri)


def _convert(spark, plans: list[SourcePlan], spill_dir: str, started: float):
    """Runs the conversion stage of every plan; returns the spill and quarantine files."""
    staging_dir = os.path.join(spill_dir, "quarantine")
    spilled, quarantine_files = [], []
    for number, plan in enumerate(plans):
        spark.sparkContext.setJobDescription(f"ShardedExampleGen: convert input {number}")
        converted = convert_source(spark, plan, spill_dir, staging_dir)
        spilled += converted.spilled
        quarantine_files += converted.quarantine_files
    print(
        f"  converted {sum(s.records for s in spilled):,} records into {len(spilled)} spill "
        f"files ({time.monotonic() - started:.1f} s)",
        flush=True,
    )
    return spilled, quarantine_files


def _last_line(error: Exception) -> str:
    """The line of a Spark error that says what went wrong: a worker's exception, or the first."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    python = [line for line in lines if not line.startswith(("File ", "^", "~"))]
    if "Traceback (most recent call last):" in lines and python:
        return python[-1][:300]
    return (lines[0] if lines else type(error).__name__)[:300]
