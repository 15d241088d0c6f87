"""Parquet files → serialized tf.Examples, one row group at a time, straight from Arrow.

Types come from the Parquet schema: integers and booleans become INT,
floating point FLOAT, strings and binary BYTES; lists of those become
multi-valued features. A null (or a float NaN) is a missing value. A list
holding a null cannot keep its positions in a tf.Example (``[1, None, 3]``
would become ``[1, 3]``), so its row is quarantined rather than shifted.
Unreadable files and rows missing a required column are quarantined too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tfrecord_pipelines.components.data_source.column_types import ColumnType
from tfrecord_pipelines.components.example_gen.partition_columns import PartitionColumns
from tfrecord_pipelines.components.example_gen.quarantine import QuarantineRecord
from tfrecord_pipelines.components.example_gen.record_encoding import (
    ExampleEncoder,
    as_feature_column,
    first_values_as_text,
)
from tfrecord_pipelines.components.example_gen.split_assignment import (
    SplitAssigner,
    SplitRecords,
)
from tfrecord_pipelines.components.storage import filesystem

_BATCH_ROWS = 65_536


@dataclasses.dataclass(frozen=True)
class RowGroup:
    """One row group of a Parquet file; ``first_row`` is its first row's number (1-based)."""

    path: str
    index: int
    first_row: int


def _column_type(name: str, arrow_type: pa.DataType) -> ColumnType:
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return ColumnType.INT
    if pa.types.is_floating(arrow_type):
        return ColumnType.FLOAT
    if any(
        check(arrow_type)
        for check in (pa.types.is_string, pa.types.is_binary, pa.types.is_large_string)
    ) or pa.types.is_large_binary(arrow_type):
        return ColumnType.BYTES
    raise ValueError(
        f"Parquet column {name!r} has type {arrow_type}, which has no tf.Example "
        "equivalent; convert it to a number, string or list of those first."
    )


def plan_row_groups(path: str) -> Iterator[RowGroup | QuarantineRecord]:
    """Yields the file's row groups, or one QuarantineRecord if it cannot be read."""
    try:
        with filesystem.open_binary(path) as f:
            metadata = pq.ParquetFile(f).metadata
    except (pa.ArrowException, OSError) as e:
        yield QuarantineRecord(path, path, f"unreadable Parquet file: {e}")
        return
    first = 1
    for index in range(metadata.num_row_groups):
        yield RowGroup(path, index, first)
        first += metadata.row_group(index).num_rows


def _without_nan(column: pa.Array) -> pa.Array:
    """Float NaNs become nulls (missing), as scalar values; in lists they stay for the check."""
    if pa.types.is_floating(column.type):
        return pc.if_else(pc.is_nan(column), pa.scalar(None, column.type), column)
    return column


def _bad_rows(batch: pa.RecordBatch, required: set[str]) -> dict[int, str]:
    """Returns the reason each bad row is bad, by its index in the batch."""
    bad: dict[int, str] = {}
    for name in batch.schema.names:
        column = batch.column(name)
        if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
            values = pc.list_flatten(column)
            holes = pc.is_null(values, nan_is_null=True)
            if pc.any(holes).as_py():
                rows = np.asarray(pc.list_parent_indices(column))[np.asarray(holes, dtype=bool)]
                for row in np.unique(rows):
                    bad.setdefault(
                        int(row),
                        f"null in a list: column {name!r} holds a list with a missing value, "
                        "whose position a tf.Example cannot keep",
                    )
        if name in required:
            empty = pc.is_null(_without_nan(column))
            if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
                empty = pc.or_(empty, pc.equal(pc.list_value_length(column), 0))
            for row in np.flatnonzero(np.asarray(pc.fill_null(empty, True), dtype=bool)):
                bad.setdefault(int(row), f"missing value: column {name!r} is empty")
    return bad


class RowGroupConverter:
    """Reads row groups into ``SplitRecords`` (with their columns) and QuarantineRecords.

    Engine-neutral, as ``csv_source.BlockConverter``: ``setup`` once, then
    ``convert`` per row group.
    """

    def __init__(
        self,
        required: list[str],
        assigner: SplitAssigner,
        partition_columns: PartitionColumns | None = None,
    ):
        self._required = set(required)
        self._assigner = assigner
        self._partition_columns = partition_columns

    def setup(self) -> None:
        """Builds the encoder (not picklable, so made where it runs)."""
        self._encoder = ExampleEncoder()

    def convert(self, group: RowGroup) -> Iterator[SplitRecords | QuarantineRecord]:
        """Yields the row group's records by split and its bad rows."""
        # Read on demand, one row group at a time, not the whole file.
        with filesystem.open_binary(group.path) as f:
            yield from self._read(group, pq.ParquetFile(f))

    def _read(self, group: RowGroup, parquet: pq.ParquetFile):
        types = {f.name: _column_type(f.name, f.type) for f in parquet.schema_arrow}
        row = group.first_row
        for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, row_groups=[group.index]):
            bad = _bad_rows(batch, self._required)
            for index, reason in sorted(bad.items()):
                yield QuarantineRecord(group.path, f"row {row + index}", reason, line=row + index)
            if bad:
                keep = np.ones(batch.num_rows, dtype=bool)
                keep[list(bad)] = False
                batch = batch.filter(pa.array(keep))
            row += batch.num_rows + len(bad)
            columns = [
                as_feature_column(_without_nan(batch.column(name)), types[name])
                for name in batch.schema.names
            ]
            features = pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
            if self._partition_columns:
                features = self._partition_columns.add(group.path, features)
            records = self._encoder.encode(features)
            key = self._assigner.key
            keys = first_values_as_text(features.column(key)) if key else None
            yield from self._assigner.assign(records, keys, features)
