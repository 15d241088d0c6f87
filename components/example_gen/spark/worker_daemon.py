"""PySpark's worker daemon, started with TensorFlow and the converters already imported.

PySpark starts one daemon per executor, which forks a Python worker for
each task slot, and forks again when a worker is not back in the pool in
time: a conversion on ``local[2]`` forked five. Each worker imported
TensorFlow for itself, about 7 s of CPU apiece. Imported here, before the
daemon forks, the workers share the import. Only imported: nothing here may
start TensorFlow's runtime (make a tensor), whose threads a forked worker
would not have.

Spark's core jar on PySpark's worker path (5,221 entries, none of them
Python) is dropped from it: PySpark invalidates the import caches
before every task, and re-reading that jar's index cost about 70 ms per task.

Spark runs it as ``spark.python.daemon.module`` (``session._DEFAULT_CONF``).
"""

from __future__ import annotations

import os
import sys

import tensorflow  # noqa: F401 - the point of this module
from pyspark import daemon

from tfrecord_pipelines.components.example_gen.spark import convert_stage, shard_stage  # noqa: F401


def _is_spark_core_jar(path: str) -> bool:
    return ".jar" in path and os.path.basename(path.split(".jar")[0]).startswith("spark-core_")


if __name__ == "__main__":
    sys.path[:] = [path for path in sys.path if not _is_spark_core_jar(path)]
    for path in [path for path in sys.path_importer_cache if _is_spark_core_jar(path)]:
        del sys.path_importer_cache[path]
    daemon.manager()
