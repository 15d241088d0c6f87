"""Spark's conversion stage: each task runs the format's converter on its units.

Units are what Beam's elements are (CSV blocks, Parquet row groups, image
files): descriptors, handed to the tasks by ``tasks.map_partitions``. A
task reads its units itself, as a Beam worker does: the bytes never pass
through the JVM. A task writes its records to spill files and its bad
input to a quarantine file, all named by its partition and attempt
(``p00003-a1``); only their paths, counts and a sample come back to the
driver. A retried task writes new files, and the
driver uses those of the attempt Spark reports as successful: a failed
attempt's files are never read.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import signal

import pyarrow as pa

from tfrecord_pipelines.components.data_source import IMAGES, PARQUET
from tfrecord_pipelines.components.example_gen.csv_blocks import plan_blocks
from tfrecord_pipelines.components.example_gen.parquet_source import plan_row_groups
from tfrecord_pipelines.components.example_gen.quarantine import (
    QUARANTINE_FILE_PREFIX,
    QUARANTINE_FILE_SUFFIX,
    QuarantineRecord,
)
from tfrecord_pipelines.components.example_gen.record_sample import RecordSample
from tfrecord_pipelines.components.example_gen.sources import SourcePlan
from tfrecord_pipelines.components.example_gen.spark.tasks import map_partitions, run_tasks
from tfrecord_pipelines.components.example_gen.spill import Spilled, SpillWriter
from tfrecord_pipelines.components.storage import filesystem

SPILL = "spill"
QUARANTINE = "quarantine"
# For fault tests: the first attempt of this partition kills its executor's
# JVM after spilling part of its records, as a lost node would.
KILL_EXECUTOR_ENV = "TFRECORD_PIPELINES_SPARK_KILL_EXECUTOR_IN_PARTITION"
# Images per task, at most: a task has a fixed cost (PySpark's set-up, a
# queue started and drained), and a retried task redoes its images. Small
# folders still get _TASKS_PER_CORE tasks per core.
_IMAGES_PER_TASK = 4096
# Tasks per core: enough that a slow or retried task leaves the others work.
_TASKS_PER_CORE = 4
_RESULT = pa.schema(
    [
        ("kind", pa.string()),
        ("split", pa.string()),
        ("path", pa.string()),
        ("records", pa.int64()),
        ("bytes", pa.int64()),
        ("sample", pa.list_(pa.binary())),
        ("sample_crcs", pa.list_(pa.int64())),
        ("sample_threshold", pa.int64()),
    ]
)
_DDL_TYPES = {pa.string(): "string", pa.int64(): "long", pa.binary(): "binary"}


def _ddl(arrow_type: pa.DataType) -> str:
    if pa.types.is_list(arrow_type):
        return f"array<{_ddl(arrow_type.value_type)}>"
    return _DDL_TYPES[arrow_type]


_RESULT_SCHEMA = ", ".join(f"{field.name} {_ddl(field.type)}" for field in _RESULT)


@dataclasses.dataclass(frozen=True)
class Converted:
    """What the conversion stage wrote.

    Attributes:
      spilled: spill files of the successful attempts, by split.
      quarantine_files: quarantine files (JSON lines) of the successful attempts.
    """

    spilled: list[Spilled]
    quarantine_files: list[str]


def _kill_executor() -> None:
    """SIGKILLs the JVM this Python worker runs under (its nearest ``java`` ancestor)."""
    pid = os.getpid()
    while pid > 1:
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() == "java":
                os.kill(pid, signal.SIGKILL)
                return


class _Task:
    """One attempt's outputs: spill files and a quarantine file of its own."""

    def __init__(self, converter, spill_dir: str, staging_dir: str):
        from pyspark import TaskContext

        gc.freeze()  # see beam.sources
        converter.setup()
        context = TaskContext.get()
        self.partition = context.partitionId()
        self.attempt = context.attemptNumber()
        name = f"p{self.partition:05d}-a{self.attempt}"
        self.spill = SpillWriter(spill_dir, name)
        self._quarantine_path = os.path.join(
            staging_dir, f"{QUARANTINE_FILE_PREFIX}-{name}{QUARANTINE_FILE_SUFFIX}"
        )
        self._staging_dir = staging_dir
        self._quarantine = None
        self._bad = 0
        self._kill = os.environ.get(KILL_EXECUTOR_ENV) == str(self.partition) and not self.attempt

    def take(self, outputs) -> None:
        for output in outputs:
            if isinstance(output, QuarantineRecord):
                if self._quarantine is None:
                    filesystem.make_folder(self._staging_dir)
                    self._quarantine = filesystem.open_file(self._quarantine_path, "w")
                self._quarantine.write(output.to_json() + "\n")
                self._bad += 1
            else:
                self.spill.add(output.split, output.records)
        if self._kill:
            self.spill.flush()
            _kill_executor()

    def result(self) -> pa.RecordBatch:
        rows = [
            _row(SPILL, split=s.split, path=s.path, records=s.records, bytes=s.bytes,
                 sample=[r for _, r in s.sample.records],
                 sample_crcs=[c for c, _ in s.sample.records],
                 sample_threshold=s.sample.threshold)
            for s in self.spill.close()
        ]  # fmt: skip
        if self._quarantine is not None:
            self._quarantine.close()
            rows.append(_row(QUARANTINE, path=self._quarantine_path, records=self._bad))
        return pa.RecordBatch.from_pylist(rows, schema=_RESULT)


def _row(kind: str, **fields) -> dict:
    row = dict.fromkeys(_RESULT.names)
    row.update(kind=kind, **fields)
    return row


def _convert_units(converter, spill_dir: str, staging_dir: str):
    """Returns the task function converting its units (CSV blocks, row groups) one by one."""

    def convert(indexed_units):
        task = _Task(converter, spill_dir, staging_dir)
        for _, unit in indexed_units:
            task.take(converter.convert(unit))
        yield task.result()

    return convert


def _convert_images(converter, spill_dir: str, staging_dir: str):
    """Returns the task function converting its image files (LabelledFiles) in one queue."""

    def convert(indexed_files):
        task = _Task(converter, spill_dir, staging_dir)
        for output in converter.convert([item for _, item in indexed_files]):
            task.take([output])
        yield task.result()

    return convert


def _plan_units(spark, plan: SourcePlan) -> tuple[list, list[QuarantineRecord]]:
    """Cuts the files into units in Spark tasks, one per file; returns units and bad files."""
    if plan.source_format == PARQUET:
        planner = lambda path: list(plan_row_groups(path))  # noqa: E731
    else:
        block_bytes = plan.block_bytes
        planner = lambda path: plan_blocks(path, block_bytes)  # noqa: E731
    by_file = run_tasks(spark, plan.files, planner, "ShardedExampleGen: cut files into units")
    planned = [unit for units in by_file for unit in units]
    bad = [unit for unit in planned if isinstance(unit, QuarantineRecord)]
    return [unit for unit in planned if not isinstance(unit, QuarantineRecord)], bad


def _collect(results) -> Converted:
    spilled, quarantine_files = [], []
    for row in results:
        if row.kind == SPILL:
            sample = RecordSample(
                row.sample_threshold,
                list(zip(row.sample_crcs, row.sample, strict=True)),
                sum(map(len, row.sample)),
            )
            spilled.append(Spilled(row.split, row.path, row.records, row.bytes, sample))
        else:
            quarantine_files.append(row.path)
    return Converted(spilled, quarantine_files)


def _convert_image_files(spark, plan: SourcePlan, spill_dir: str, staging_dir: str) -> Converted:
    """Converts the images in Spark tasks, each given a run of the listed files to read.

    The tasks read the files as Beam's workers do (``ImageConverter.convert``),
    not through Spark's ``binaryFile`` source: that moved every image's bytes
    through the JVM and Arrow into Python, which cost more CPU than the
    conversion itself.
    """
    parallelism = spark.sparkContext.defaultParallelism * _TASKS_PER_CORE
    files = plan.files
    tasks = min(len(files), max(parallelism, math.ceil(len(files) / _IMAGES_PER_TASK)))
    function = _convert_images(plan.converter, spill_dir, staging_dir)
    return _collect(map_partitions(spark, files, tasks, function, _RESULT_SCHEMA))


def _write_quarantine(bad: list[QuarantineRecord], staging_dir: str) -> list[str]:
    """Writes quarantine records found by the driver; returns the file, if any."""
    if not bad:
        return []
    filesystem.make_folder(staging_dir)
    number = len(filesystem.listdir(staging_dir))
    path = os.path.join(
        staging_dir, f"{QUARANTINE_FILE_PREFIX}-driver{number}{QUARANTINE_FILE_SUFFIX}"
    )
    with filesystem.open_file(path, "w") as f:
        f.write("".join(record.to_json() + "\n" for record in bad))
    return [path]


def convert_source(spark, plan: SourcePlan, spill_dir: str, staging_dir: str) -> Converted:
    """Converts one input pattern's files in Spark tasks; returns what they wrote.

    Bad files found while planning (unreadable Parquet) go to a quarantine
    file the driver writes into ``staging_dir``, beside the tasks' files.
    """
    if plan.source_format == IMAGES:
        return _convert_image_files(spark, plan, spill_dir, staging_dir)
    units, bad = _plan_units(spark, plan)
    planned_bad = _write_quarantine(bad, staging_dir)
    if not units:
        return Converted([], planned_bad)
    tasks = min(len(units), spark.sparkContext.defaultParallelism * _TASKS_PER_CORE)
    function = _convert_units(plan.converter, spill_dir, staging_dir)
    converted = _collect(map_partitions(spark, units, tasks, function, _RESULT_SCHEMA))
    return dataclasses.replace(converted, quarantine_files=converted.quarantine_files + planned_bad)
