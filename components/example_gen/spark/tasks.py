"""Driver-side work handed to Spark's Python workers as tasks, one job per partition.

Jobs and results are small descriptors (a file to plan, a spill file to
deal to shards, pieces to join); the records themselves stay in files. They
travel pickled in an Arrow column through ``mapInArrow``, the path the
conversion takes, so every stage runs in the same pool of Python workers,
each of which imports TensorFlow once per session rather than once per kind
of task.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable

import pyarrow as pa

_SCHEMA = "index long, result binary"


def run_tasks(spark, jobs: list, function: Callable, description: str) -> list:
    """Runs ``function(job)`` for each job in its own Spark task; returns the results in order."""
    if not jobs:
        return []
    context = spark.sparkContext
    context.setJobDescription(description)
    rows = [(index, pickle.dumps(job)) for index, job in enumerate(jobs)]
    frame = spark.createDataFrame(context.parallelize(rows, len(rows)), "index long, job binary")

    def run(batches):
        for batch in batches:
            results = [
                pickle.dumps(function(pickle.loads(job))) for job in batch.column(1).to_pylist()
            ]
            yield pa.RecordBatch.from_arrays(
                [batch.column(0), pa.array(results, pa.binary())], names=["index", "result"]
            )

    done = frame.mapInArrow(run, _SCHEMA).collect()
    return [pickle.loads(row["result"]) for row in sorted(done, key=lambda row: row["index"])]
