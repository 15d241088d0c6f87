"""CSV files with a header row → serialized tf.Examples, bad rows quarantined.

Column types come from a schema when one is given; otherwise from a sample of
rows, by majority: a column is INT if nearly all its non-empty values parse as
integers, FLOAT if they parse as numbers, BYTES otherwise. A value that does
not parse as its column's type sends its row to quarantine instead of
silently turning the column into strings. Empty cells are missing values.
Rows are read line by line (as TFX's CsvExampleGen does): quoted fields may
not span lines.
"""

from __future__ import annotations

import csv
import itertools
import os

import apache_beam as beam
import tensorflow as tf
from tensorflow_metadata.proto.v0 import schema_pb2

from components.example_gen.features import ColumnType, feature, serialize
from components.example_gen.quarantine import QUARANTINE_TAG, QuarantineRecord

# Rows read to infer column types when there is no schema.
TYPE_SAMPLE_ROWS = 20_000
# Share of a column's sampled values that must parse for it to take a type.
_TYPE_MAJORITY = 0.9
_SCHEMA_TYPES = {
    schema_pb2.INT: ColumnType.INT,
    schema_pb2.FLOAT: ColumnType.FLOAT,
    schema_pb2.BYTES: ColumnType.BYTES,
}


def _parse_line(line: str) -> list[str]:
    return next(csv.reader([line]))


def read_header(files: list[str]) -> list[str]:
    """Returns the header shared by all files.

    Raises:
      ValueError: if a file is empty or the headers differ.
    """
    header = None
    for path in files:
        with tf.io.gfile.GFile(path) as f:
            first = f.readline()
        if not first.strip():
            raise ValueError(f"CSV file {path} is empty; it needs a header row.")
        columns = _parse_line(first.rstrip("\r\n"))
        if header is None:
            header, header_file = columns, path
        elif columns != header:
            raise ValueError(
                f"CSV file {path} has columns {columns}, but {header_file} has {header}; "
                "all input files need the same header."
            )
    return header


def _parses(value: str, column_type: ColumnType) -> bool:
    try:
        {ColumnType.INT: int, ColumnType.FLOAT: float}[column_type](value)
        return True
    except ValueError:
        return False


def infer_column_types(
    files: list[str], header: list[str], schema: schema_pb2.Schema | None = None
) -> dict[str, ColumnType]:
    """Returns each column's type: from the schema, else inferred from sampled rows."""
    from_schema = {f.name: _SCHEMA_TYPES[f.type] for f in schema.feature} if schema else {}
    sample: list[list[str]] = []
    for path in files:
        with tf.io.gfile.GFile(path) as f:
            rows = (_parse_line(line.rstrip("\r\n")) for line in itertools.islice(f, 1, None))
            sample.extend(r for r in itertools.islice(rows, TYPE_SAMPLE_ROWS - len(sample)))
        if len(sample) >= TYPE_SAMPLE_ROWS:
            break
    types = {}
    for index, name in enumerate(header):
        if name in from_schema:
            types[name] = from_schema[name]
            continue
        values = [r[index] for r in sample if len(r) == len(header) and r[index] != ""]
        types[name] = ColumnType.BYTES
        for candidate in (ColumnType.INT, ColumnType.FLOAT):
            ok = sum(_parses(v, candidate) for v in values)
            if values and ok >= _TYPE_MAJORITY * len(values):
                types[name] = candidate
                break
    return types


class _RowToExample(beam.DoFn):
    """Parses one CSV line; emits a serialized tf.Example or a QuarantineRecord."""

    def __init__(self, header: list[str], types: dict[str, ColumnType], required: list[str]):
        self._columns = [(name, types[name]) for name in header]
        self._required = set(required)

    def process(self, element):
        source, line = element
        if not line.strip():
            return
        try:
            values = _parse_line(line)
        except csv.Error as e:
            yield self._bad(source, line, f"unparseable CSV row: {e}")
            return
        if len(values) != len(self._columns):
            yield self._bad(
                source,
                line,
                f"wrong column count: {len(values)} fields, expected {len(self._columns)}",
            )
            return
        features = {}
        for (name, column_type), value in zip(self._columns, values, strict=True):
            if value == "":
                if name in self._required:
                    yield self._bad(source, line, f"missing value: column {name!r} is empty")
                    return
                continue
            try:
                if column_type is ColumnType.INT:
                    parsed = int(value)
                elif column_type is ColumnType.FLOAT:
                    parsed = float(value)
                else:
                    parsed = value
            except ValueError:
                yield self._bad(
                    source,
                    line,
                    f"bad value: column {name!r} value {value!r} is not {column_type.value}",
                )
                return
            features[name] = feature(column_type, [parsed])
        yield serialize(features)

    @staticmethod
    def _bad(source: str, line: str, reason: str):
        return beam.pvalue.TaggedOutput(QUARANTINE_TAG, QuarantineRecord(source, line, reason))


@beam.ptransform_fn
def CsvToExamples(  # noqa: N802 - Beam transforms are named like classes
    pipeline: beam.Pipeline,
    files: list[str],
    header: list[str],
    types: dict[str, ColumnType],
    required: list[str],
):
    """Reads CSV files; returns a DoOutputsTuple (main: serialized examples, quarantine)."""
    return (
        pipeline
        | "ListFiles" >> beam.Create(files)
        | "ReadLines" >> beam.io.ReadAllFromText(skip_header_lines=1, with_filename=True)
        | "ParseRows"
        >> beam.ParDo(_RowToExample(header, types, required)).with_outputs(
            QUARANTINE_TAG, main="examples"
        )
    )


def list_files(input_base: str, pattern: str) -> list[str]:
    """Returns the files matching ``pattern`` under ``input_base``, sorted.

    Raises:
      ValueError: if input_base is missing or nothing matches.
    """
    if not tf.io.gfile.exists(input_base):
        raise ValueError(f"Input path {input_base} does not exist.")
    files = sorted(
        f for f in tf.io.gfile.glob(os.path.join(input_base, pattern)) if not tf.io.gfile.isdir(f)
    )
    if not files:
        raise ValueError(f"Input path {input_base} holds no file matching {pattern!r}.")
    return files
