"""The row-by-row CSV parser: the fallback for blocks the columnar parser rejects.

Each record is decoded and parsed on its own, so every bad one is named
(file, line, reason) and every good one kept. Values are checked in Python;
good rows are gathered into columns for the batch encoder.
"""

from __future__ import annotations

import csv
import dataclasses
import sys

import pyarrow as pa

from tfrecord_pipelines.components.data_source.column_types import ColumnType
from tfrecord_pipelines.components.data_source.csv_records import RawRecord
from tfrecord_pipelines.components.example_gen.csv_blocks import CsvLayout
from tfrecord_pipelines.components.example_gen.record_encoding import FEATURE_TYPES

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_CONVERTERS = {ColumnType.INT: int, ColumnType.FLOAT: float, ColumnType.BYTES: str.encode}


@dataclasses.dataclass(frozen=True)
class RowOutcome:
    """The good rows of some records, as feature columns, and why the others are bad.

    Attributes:
      batch: the good rows (a RecordBatch of list columns).
      bad: ``(record, decoded text, reason)`` for each bad record.
    """

    batch: pa.RecordBatch
    bad: list[tuple[RawRecord, str, str]]


class RowParser:
    """Parses CSV records one at a time into typed columns."""

    def __init__(self, layout: CsvLayout, types: dict[str, ColumnType], required: list[str]):
        csv.field_size_limit(sys.maxsize)
        self._layout = layout
        self._types = [types[name] for name in layout.header]
        self._required = [name in set(required) for name in layout.header]
        self._converters = [_CONVERTERS[t] for t in self._types]
        self._schema = pa.schema(
            [pa.field(n, FEATURE_TYPES[t]) for n, t in zip(layout.header, self._types, strict=True)]
        )

    def parse(self, records: list[RawRecord]) -> RowOutcome:
        """Returns the good rows as columns and the bad records with their reasons."""
        columns: list[list] = [[] for _ in self._layout.header]
        bad = []
        for record in records:
            text, reason = self._decode(record)
            if reason is None:
                reason = self._parse_into(text, columns)
            if reason:
                bad.append((record, text, reason))
        arrays = [
            pa.array(values, type=field.type)
            for values, field in zip(columns, self._schema, strict=True)
        ]
        return RowOutcome(pa.RecordBatch.from_arrays(arrays, schema=self._schema), bad)

    def _decode(self, record: RawRecord) -> tuple[str, str | None]:
        try:
            text = record.data.decode(self._layout.encoding)
        except UnicodeDecodeError as e:
            text = record.data.decode(self._layout.encoding, errors="replace")
            bad_byte = record.data[e.start]
            return text, (
                f"not valid {self._layout.encoding}: byte 0x{bad_byte:02x} at position {e.start} "
                "(pass the files' encoding with --encoding)"
            )
        if not record.complete:
            return text, 'unterminated quoted field: a " opened here never closes'
        return text, None

    def _parse_into(self, text: str, columns: list[list]) -> str | None:
        """Appends the row's values to columns; returns why it is bad instead, if it is."""
        try:
            rows = list(
                csv.reader(
                    text.splitlines(True) if "\n" in text else [text],
                    delimiter=self._layout.delimiter,
                )
            )
        except csv.Error as e:
            return f"unparseable CSV row: {e}"
        if len(rows) != 1:
            return f"unparseable CSV row: {len(rows)} rows in one record"
        row = rows[0]
        if len(row) != len(columns):
            return f"wrong column count: {len(row)} fields, expected {len(columns)}"
        parsed = []
        for index, value in enumerate(row):
            if value == "":
                if self._required[index]:
                    return f"missing value: column {self._layout.header[index]!r} is empty"
                parsed.append(None)
                continue
            try:
                converted = self._converters[index](value)
            except ValueError:
                converted = None
            if converted is None or (
                self._types[index] is ColumnType.INT and not _INT64_MIN <= converted <= _INT64_MAX
            ):
                return (
                    f"bad value: column {self._layout.header[index]!r} value {value!r} "
                    f"is not {self._types[index].value}"
                )
            parsed.append([converted])
        for column, value in zip(columns, parsed, strict=True):
            column.append(value)
        return None
