"""Driver-side work handed to Spark's Python workers as tasks: jobs in, small results out.

Jobs are small descriptors (a file to plan, a unit or an image file to
convert, a spill file to deal to shards, pieces to join); the records
themselves stay in files. The jobs travel as one Spark broadcast, and each
task is given its jobs' positions by ``spark.range``, a JVM source: a
DataFrame made from Python rows (``createDataFrame`` of an RDD) would run
every task through a second Python worker to hand the rows over, and that
worker, of another kind, through a second worker daemon. Every stage runs
through ``mapInArrow`` in one pool of Python workers.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator

import pyarrow as pa

_SCHEMA = "index long, result binary"


def map_partitions(
    spark, jobs: list, partitions: int, function: Callable[[list], Iterator], schema: str
) -> list:
    """Runs ``function`` on each partition's jobs (a run of ``jobs``, in order); returns its rows.

    ``function`` takes a list of ``(index, job)`` pairs and yields Arrow
    record batches of ``schema`` (Spark's DDL); the rows of every task are
    collected to the driver.
    """
    broadcast = spark.sparkContext.broadcast(jobs)

    def run(batches):
        everything = broadcast.value
        yield from function(
            [(i, everything[i]) for batch in batches for i in batch.column(0).to_pylist()]
        )

    try:
        return spark.range(0, len(jobs), 1, partitions).mapInArrow(run, schema).collect()
    finally:
        broadcast.destroy()


def run_tasks(spark, jobs: list, function: Callable, description: str) -> list:
    """Runs ``function(job)`` for each job in its own Spark task; returns the results in order."""
    if not jobs:
        return []
    spark.sparkContext.setJobDescription(description)

    def run(indexed_jobs):
        indices = [index for index, _ in indexed_jobs]
        results = [pickle.dumps(function(job)) for _, job in indexed_jobs]
        yield pa.RecordBatch.from_arrays(
            [pa.array(indices, pa.int64()), pa.array(results, pa.binary())],
            names=["index", "result"],
        )

    done = map_partitions(spark, jobs, len(jobs), run, _SCHEMA)
    return [pickle.loads(row["result"]) for row in sorted(done, key=lambda row: row["index"])]
