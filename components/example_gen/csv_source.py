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
import gc
import itertools
import os

import apache_beam as beam
import pyarrow as pa
import tensorflow as tf
from tensorflow_metadata.proto.v0 import schema_pb2
from tfx_bsl.coders import example_coder

from components.example_gen.features import ColumnType
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


_ARROW_TYPES = {
    ColumnType.INT: pa.large_list(pa.int64()),
    ColumnType.FLOAT: pa.large_list(pa.float32()),
    ColumnType.BYTES: pa.large_list(pa.large_binary()),
}
_CONVERTERS = {ColumnType.INT: int, ColumnType.FLOAT: float, ColumnType.BYTES: str.encode}


class _LinesToExamples(beam.DoFn):
    """Parses a batch of CSV lines; emits serialized tf.Examples or QuarantineRecords.

    Values are checked in Python, then the batch is encoded by tfx_bsl's C++
    RecordBatch-to-Example encoder, which is several times faster than
    building each tf.train.Example in Python.
    """

    def __init__(self, header: list[str], types: dict[str, ColumnType], required: list[str]):
        self._header = header
        self._types = [types[name] for name in header]
        self._required = [name in set(required) for name in header]

    def setup(self):
        # TensorFlow and Beam leave millions of long-lived objects; every full
        # garbage collection walks them all, which more than doubled the cost of
        # each row. Frozen objects are skipped by the collector.
        gc.freeze()
        self._encoder = example_coder.RecordBatchToExamplesEncoder()
        self._schema = pa.schema(
            [pa.field(n, _ARROW_TYPES[t]) for n, t in zip(self._header, self._types, strict=True)]
        )
        self._converters = [_CONVERTERS[t] for t in self._types]

    def process(self, batch: list[tuple[str, str]]):
        batch = [(source, line) for source, line in batch if line.strip()]
        try:
            rows = list(csv.reader(line for _, line in batch))
        except csv.Error:
            rows = None  # parse line by line to find the bad one
        columns = [[] for _ in self._header]
        for index, (source, line) in enumerate(batch):
            reason = self._parse_into(rows[index] if rows else line, columns)
            if reason:
                yield beam.pvalue.TaggedOutput(
                    QUARANTINE_TAG, QuarantineRecord(source, line, reason)
                )
        if columns[0]:
            arrays = [
                pa.array(values, type=field.type)
                for values, field in zip(columns, self._schema, strict=True)
            ]
            encoded = self._encoder.encode(pa.RecordBatch.from_arrays(arrays, schema=self._schema))
            # The C++ encoder writes features in hash-map order, which changes from
            # process to process; the split is a hash of these bytes, so they must
            # not change between runs.
            for record in encoded:
                yield tf.train.Example.FromString(record).SerializeToString(deterministic=True)

    def _parse_into(self, row: list[str] | str, columns: list[list]) -> str | None:
        """Appends the row's values to columns; returns why it is bad instead, if it is."""
        if isinstance(row, str):
            try:
                row = _parse_line(row)
            except csv.Error as e:
                return f"unparseable CSV row: {e}"
        if len(row) != len(columns):
            return f"wrong column count: {len(row)} fields, expected {len(columns)}"
        parsed = []
        for index, value in enumerate(row):
            if value == "":
                if self._required[index]:
                    return f"missing value: column {self._header[index]!r} is empty"
                parsed.append(None)
                continue
            try:
                parsed.append([self._converters[index](value)])
            except ValueError:
                return (
                    f"bad value: column {self._header[index]!r} value {value!r} "
                    f"is not {self._types[index].value}"
                )
        for column, value in zip(columns, parsed, strict=True):
            column.append(value)
        return None


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
        | "Batch" >> beam.BatchElements(min_batch_size=256, max_batch_size=4096)
        | "ParseRows"
        >> beam.ParDo(_LinesToExamples(header, types, required)).with_outputs(
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
