"""The tf.Example type of each CSV column: from a schema, else from the first rows.

Inferred by majority over a sample of rows: a column is INT if nearly all its
non-empty values parse as integers, FLOAT if they parse as numbers, BYTES
otherwise. A value that then does not parse as its column's type sends its
row to quarantine instead of silently turning the column into strings.
"""

from __future__ import annotations

import csv
import sys

from tensorflow_metadata.proto.v0 import schema_pb2

from tfrecord_pipelines.components.data_source.column_types import ColumnType
from tfrecord_pipelines.components.data_source.csv_dialect import read_start, strip_bom
from tfrecord_pipelines.components.data_source.csv_records import split_records

# Rows read to infer column types when there is no schema.
TYPE_SAMPLE_ROWS = 20_000
# Bytes read from the start of each file for the sample: 1 MiB, then as much
# as the rows still wanted need at the rows' size so far, up to 8 MiB.
_SAMPLE_BYTES = (2**20, 8 * 2**20)
# Share of a column's sampled values that must parse for it to take a type.
_TYPE_MAJORITY = 0.9
_SCHEMA_TYPES = {
    schema_pb2.INT: ColumnType.INT,
    schema_pb2.FLOAT: ColumnType.FLOAT,
    schema_pb2.BYTES: ColumnType.BYTES,
}


_PARSERS = {ColumnType.INT: int, ColumnType.FLOAT: float}


def _mostly_parse(values: list[str], column_type: ColumnType) -> bool:
    """Whether at least ``_TYPE_MAJORITY`` of the values parse as ``column_type``.

    Stops at the first failure past the allowed share: a text column is
    told from a numeric one in a tenth of its sample.
    """
    parse = _PARSERS[column_type]
    allowed = len(values) - _TYPE_MAJORITY * len(values)
    failures = 0
    for value in values:
        try:
            parse(value)
        except ValueError:
            failures += 1
            if failures > allowed:
                return False
    return True


def _sample_rows(files: list[str], encoding: str, delimiter: str) -> list[list[str]]:
    csv.field_size_limit(sys.maxsize)
    sample: list[list[str]] = []
    for path in files:
        size = _SAMPLE_BYTES[0]
        while True:
            data = read_start(path, size)
            records = [r for r in split_records(strip_bom(data), 1) if r.complete]
            wanted = TYPE_SAMPLE_ROWS - len(sample) + 2  # the header, a cut last row
            if len(data) < size or len(records) >= wanted or size >= _SAMPLE_BYTES[1]:
                break
            # Enough bytes for the rows still wanted, at the rows' size so far.
            size = min(_SAMPLE_BYTES[1], int(size * wanted / max(len(records), 1) * 1.1))
        # The header is the first record; the last may be cut by the sample's end.
        for record in records[1:-1] if len(data) == size else records[1:]:
            text = record.data.decode(encoding, errors="replace")
            lines = [text] if "\n" not in text else text.splitlines(True)
            sample.extend(csv.reader(lines, delimiter=delimiter))
            if len(sample) >= TYPE_SAMPLE_ROWS:
                return sample
    return sample


def infer_column_types(
    files: list[str],
    header: list[str],
    schema: schema_pb2.Schema | None = None,
    encoding: str = "utf-8",
    delimiter: str = ",",
    columns: list[str] | None = None,
) -> dict[str, ColumnType]:
    """Returns each column's type: from the schema, else inferred from sampled rows.

    ``columns``: only these columns of the header (default: all of them).
    """
    from_schema = {f.name: _SCHEMA_TYPES[f.type] for f in schema.feature} if schema else {}
    wanted = [
        (index, name) for index, name in enumerate(header) if columns is None or name in columns
    ]
    missing = [name for _, name in wanted if name not in from_schema]
    sample = _sample_rows(files, encoding, delimiter) if missing else []
    types = {}
    for index, name in wanted:
        if name in from_schema:
            types[name] = from_schema[name]
            continue
        values = [r[index] for r in sample if len(r) == len(header) and r[index] != ""]
        types[name] = ColumnType.BYTES
        for candidate in (ColumnType.INT, ColumnType.FLOAT):
            if values and _mostly_parse(values, candidate):
                types[name] = candidate
                break
    return types
