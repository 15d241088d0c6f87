"""Parquet files → serialized tf.Examples; unreadable files and bad rows quarantined.

Types come from the Parquet schema: integers and booleans become INT,
floating point FLOAT, strings and binary BYTES; lists of those become
multi-valued features. Nulls are missing values.
"""

from __future__ import annotations

import math

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import tensorflow as tf

from components.example_gen.features import ColumnType, feature, serialize
from components.example_gen.quarantine import QUARANTINE_TAG, QuarantineRecord

_BATCH_ROWS = 4096


def _column_type(name: str, arrow_type: pa.DataType) -> ColumnType:
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return ColumnType.INT
    if pa.types.is_floating(arrow_type):
        return ColumnType.FLOAT
    if pa.types.is_string(arrow_type) or pa.types.is_binary(arrow_type):
        return ColumnType.BYTES
    if pa.types.is_large_string(arrow_type) or pa.types.is_large_binary(arrow_type):
        return ColumnType.BYTES
    raise ValueError(
        f"Parquet column {name!r} has type {arrow_type}, which has no tf.Example "
        "equivalent; convert it to a number, string or list of those first."
    )


def _values(value, column_type: ColumnType) -> list:
    values = value if isinstance(value, list) else [value]
    values = [v for v in values if v is not None]
    if column_type is ColumnType.INT:
        return [int(v) for v in values]
    if column_type is ColumnType.FLOAT:
        return [float(v) for v in values]
    return values


class _FileToExamples(beam.DoFn):
    """Reads one Parquet file; emits serialized tf.Examples or QuarantineRecords."""

    def __init__(self, required: list[str]):
        self._required = set(required)

    def process(self, path: str):
        try:
            with tf.io.gfile.GFile(path, "rb") as f:
                parquet = pq.ParquetFile(pa.BufferReader(f.read()))
            types = {
                field.name: _column_type(field.name, field.type) for field in parquet.schema_arrow
            }
        except (pa.ArrowException, OSError) as e:
            yield beam.pvalue.TaggedOutput(
                QUARANTINE_TAG,
                QuarantineRecord(path, path, f"unreadable Parquet file: {e}"),
            )
            return
        row = 0
        for batch in parquet.iter_batches(batch_size=_BATCH_ROWS):
            for record in batch.to_pylist():
                row += 1
                yield self._example(path, row, record, types)

    def _example(self, path, row, record, types):
        features = {}
        for name, value in record.items():
            values = _values(value, types[name]) if value is not None else []
            if types[name] is ColumnType.FLOAT and any(math.isnan(v) for v in values):
                values = [v for v in values if not math.isnan(v)]
            if not values:
                if name in self._required:
                    return beam.pvalue.TaggedOutput(
                        QUARANTINE_TAG,
                        QuarantineRecord(
                            path, f"row {row}", f"missing value: column {name!r} is empty"
                        ),
                    )
                continue
            features[name] = feature(types[name], values)
        return serialize(features)


@beam.ptransform_fn
def ParquetToExamples(pipeline: beam.Pipeline, files: list[str], required: list[str]):  # noqa: N802
    """Reads Parquet files; returns a DoOutputsTuple (main: serialized examples, quarantine)."""
    return (
        pipeline
        | "ListFiles" >> beam.Create(files)
        | "Distribute" >> beam.Reshuffle()
        | "ReadFiles"
        >> beam.ParDo(_FileToExamples(required)).with_outputs(QUARANTINE_TAG, main="examples")
    )
