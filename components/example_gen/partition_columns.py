"""A Hive-partitioned file's partition values, added to its rows as feature columns."""

from __future__ import annotations

import pyarrow as pa

from tfrecord_pipelines.components.data_source import partitions
from tfrecord_pipelines.components.data_source.column_types import ColumnType
from tfrecord_pipelines.components.example_gen.record_encoding import as_feature_column

_ARROW_TYPES = {ColumnType.INT: pa.int64(), ColumnType.BYTES: pa.binary()}


class PartitionColumns:
    """Adds the Hive keys of ``pattern`` (``partitions.keys_of``) to a file's feature batches.

    Args:
      input_base: the folder the pattern is relative to.
      pattern: the input's glob, its Hive levels named ``key=*``.
      partitioning: the keys' types (``partitions.discover``).
    """

    def __init__(self, input_base: str, pattern: str, partitioning: partitions.Partitioning):
        self._input_base = input_base
        self._pattern = pattern
        self._types = dict(partitioning.types)

    def add(self, path: str, features: pa.RecordBatch) -> pa.RecordBatch:
        """Returns ``features`` with a column per key, each row holding ``path``'s value."""
        if not self._types:
            return features
        values = partitions.values_of(self._input_base, self._pattern, path)
        columns, names = list(features.columns), list(features.schema.names)
        for key, column_type in self._types.items():
            value = values[key]
            if value is not None and column_type is ColumnType.INT:
                value = int(value)
            array = pa.array([value] * features.num_rows, type=_ARROW_TYPES[column_type])
            columns.append(as_feature_column(array, column_type))
            names.append(key)
        return pa.RecordBatch.from_arrays(columns, names=names)
