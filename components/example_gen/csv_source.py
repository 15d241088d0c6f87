"""CSV files with a header row → serialized tf.Examples, bad rows quarantined.

Files are cut into blocks of whole records (``csv_blocks``); each block is
parsed by ``pyarrow.csv`` into typed columns (types from ``csv_types``) and
encoded in one call. A block the columnar parser rejects (a wrong column
count, a value of the wrong type, an undecodable byte, an unterminated
quote, an empty required column) is cut into smaller parts, parsed columnar
again, and only the small parts that still fail are parsed row by row
(``csv_rows``), so that each bad row is quarantined with its file, line and
reason and every good row is kept; a block without bad rows never pays for
any of that. Empty cells
are missing values; a UTF-8 byte order mark is not part of the data.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv

from tfrecord_pipelines.components.data_source.column_types import ColumnType
from tfrecord_pipelines.components.data_source.csv_records import split_records
from tfrecord_pipelines.components.example_gen.csv_blocks import (
    CsvBlock,
    CsvLayout,
    CsvStream,
    cut_block,
)
from tfrecord_pipelines.components.example_gen.csv_rows import RowParser
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

# What pyarrow reads each type as; FLOAT is read as float64 and then cast, as
# Python's float() and the row parser do, so both paths give the same float32.
ARROW_READ_TYPES = {
    ColumnType.INT: pa.int64(),
    ColumnType.FLOAT: pa.float64(),
    ColumnType.BYTES: pa.string(),
}


# A part of a block holding a bad row is cut into _CUT_INTO parts and each
# parsed columnar again, until parts are this small; then row by row. One
# bad row in a 32 MiB block costs two more columnar parses and 64 KiB of
# rows in Python, not the whole block.
_CUT_INTO = 16
_ROW_BY_ROW_BYTES = 64 * 1024


class BlockConverter:
    """Parses CSV blocks into ``SplitRecords`` (with their columns) and QuarantineRecords.

    Engine-neutral: Beam (``beam.sources``) and Spark (``spark/``) run it alike.
    Call ``setup`` once in the process that converts, then ``convert`` per block.
    """

    def __init__(
        self,
        layout: CsvLayout,
        types: dict[str, ColumnType],
        required: list[str],
        assigner: SplitAssigner,
        partition_columns: PartitionColumns | None = None,
    ):
        self._layout = layout
        self._types = types
        self._required = required
        self._assigner = assigner
        self._partition_columns = partition_columns

    def setup(self) -> None:
        """Builds the encoder and parsers (not picklable, so made where they run)."""
        self._encoder = ExampleEncoder()
        self._rows = RowParser(self._layout, self._types, self._required)
        self._convert = pacsv.ConvertOptions(
            column_types={name: ARROW_READ_TYPES[t] for name, t in self._types.items()},
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
        )
        self._parse = pacsv.ParseOptions(delimiter=self._layout.delimiter, newlines_in_values=True)

    def convert(self, block: CsvBlock | CsvStream) -> Iterator[SplitRecords | QuarantineRecord]:
        """Yields the block's (or the compressed file's) records by split and its bad rows."""
        pieces = block.pieces()
        while True:
            try:
                data, first_line = next(pieces)
            except StopIteration:
                return
            except (OSError, pa.ArrowException) as e:
                # A damaged compressed file: its rows so far are kept, the rest is one record.
                yield QuarantineRecord(block.path, block.path, f"unreadable compressed file: {e}")
                return
            yield from self._convert_part(block.path, data, first_line)

    def _convert_part(self, path: str, data: bytes, first_line: int):
        """Converts a block; a part with a bad row is cut smaller until the rows are few."""
        batch = self._parse_columnar(data)
        parts = cut_block(data, first_line, _CUT_INTO) if batch is None else []
        if len(data) > _ROW_BY_ROW_BYTES and len(parts) > 1:
            for part, line in parts:
                yield from self._convert_part(path, part, line)
            return
        if batch is None:
            outcome = self._rows.parse(list(split_records(data, first_line)))
            batch = outcome.batch
            for record, text, reason in outcome.bad:
                yield QuarantineRecord(path, text, reason, line=record.line)
        if self._partition_columns:
            batch = self._partition_columns.add(path, batch)
        records = self._encoder.encode(batch)
        key = self._assigner.key
        yield from self._assigner.assign(
            records, first_values_as_text(batch.column(key)) if key else None, batch
        )

    def _parse_columnar(self, data: bytes) -> pa.RecordBatch | None:
        """Returns the block as feature columns, or None if any row in it is bad."""
        options = pacsv.ReadOptions(
            column_names=list(self._layout.header),
            block_size=max(len(data) + 1, 1 << 20),
            use_threads=False,
            encoding=self._layout.encoding,
        )
        try:
            table = pacsv.read_csv(
                pa.BufferReader(data),
                read_options=options,
                parse_options=self._parse,
                convert_options=self._convert,
            )
        except (pa.ArrowException, UnicodeDecodeError, ValueError):
            return None
        if any(table.column(name).null_count for name in self._required):
            return None
        columns = [
            as_feature_column(table.column(name), self._types[name]) for name in self._layout.header
        ]
        return pa.RecordBatch.from_arrays(columns, names=list(self._layout.header))
