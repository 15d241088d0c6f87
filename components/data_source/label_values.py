"""Checks that a tabular label column can serve the task, reading that column alone.

Regression needs numbers; classification needs at least two classes. Both
are cheap to know from the label column (pyarrow reads one column of a CSV
or Parquet file without converting the others) and expensive to find out
later: a string label fails inside Transform after minutes, and a single
class trains a model that always answers it, which the Evaluator blesses.

The classes are named as the model will name them (``class_name``): the
label's values as ExampleGen stores them (the column's type), in the text
the built-in ``preprocessing_fn`` gives them for the label's vocabulary. A
positive class or a threshold checked against these names before training
is one the Evaluator finds after it.
"""

from __future__ import annotations

import dataclasses

from tfrecord_pipelines.components.data_source import CSV, DataSource
from tfrecord_pipelines.components.data_source.column_types import ColumnType
from tfrecord_pipelines.components.data_source.csv_dialect import open_data

_BLOCK_BYTES = 16 * 2**20
_NUMBER = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"


@dataclasses.dataclass
class LabelValues:
    """What the label column holds.

    Attributes:
      rows: rows with a value.
      non_numeric: values that do not parse as numbers.
      example_non_numeric: one of them.
      classes: up to ``max_classes`` distinct class names (``class_name``),
        in the order met.
    """

    rows: int = 0
    non_numeric: int = 0
    example_non_numeric: str | None = None
    classes: list[str] = dataclasses.field(default_factory=list)


def class_name(value: str | int | float, column_type: ColumnType) -> str | None:
    """The class a label value names: the token the built-in preprocessing_fn's label
    vocabulary holds for it (``transform.preprocessing``'s ``_label``).

    An integer in decimal; a float as TensorFlow's ``as_string(shortest=True)``
    writes a float32 (C's ``%g``: six significant digits, so ``1.0`` is
    ``1`` and ``0.5`` stays ``0.5``); text as it is, spaces included. None
    for a value ExampleGen would not store as the column's type (its row is
    quarantined) or that names no class (a missing float).
    """
    import math

    if column_type is ColumnType.BYTES:
        return str(value)
    try:
        if column_type is ColumnType.INT:
            return str(int(value))
        import numpy as np

        number = float(np.float32(float(value)))
    except (TypeError, ValueError, OverflowError):
        return None
    return None if math.isnan(number) else format(number, "g")


def label_column_type(source: DataSource, label: str, schema=None, encoding: str = "utf-8"):
    """The type ExampleGen stores the label column as: the schema's, Parquet's, or the one
    inferred from the CSV rows as ExampleGen infers it (``csv_types``)."""
    if source.format == CSV:
        from tfrecord_pipelines.components.data_source import read_header
        from tfrecord_pipelines.components.data_source.csv_types import infer_column_types

        files, delimiter = source.files(), source.delimiter or ","
        header = read_header(files, encoding, delimiter)
        return infer_column_types(files, header, schema, encoding, delimiter, [label])[label]
    return None  # Parquet: each file's own column type, read with the values


def _parquet_type(arrow_type) -> ColumnType:
    import pyarrow as pa

    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return ColumnType.INT
    if pa.types.is_floating(arrow_type):
        return ColumnType.FLOAT
    return ColumnType.BYTES


def _batches(source: DataSource, label: str):
    """The label column, file by file, block by block: (values, their type).

    CSV values are read as bytes, not strings: a value that is not in the
    encoding is for ExampleGen's quarantine to judge, not a reason to fail
    here. Rows with the wrong number of fields are skipped for the same
    reason; quoted values may span lines, as the converter allows. Parquet
    values come with the column's type (numbers as their text); a CSV
    column's type is found elsewhere (None).
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    for path in source.files():
        with open_data(path) as f:
            if source.format == CSV:
                reader = pa_csv.open_csv(
                    f,
                    read_options=pa_csv.ReadOptions(block_size=_BLOCK_BYTES),
                    parse_options=pa_csv.ParseOptions(
                        delimiter=source.delimiter or ",",
                        newlines_in_values=True,
                        invalid_row_handler=lambda row: "skip",
                    ),
                    convert_options=pa_csv.ConvertOptions(
                        include_columns=[label], column_types={label: pa.binary()}
                    ),
                )
                for batch in reader:
                    yield batch.column(0), None
                continue
            for batch in pq.ParquetFile(f).iter_batches(columns=[label]):
                column = batch.column(0)
                if pa.types.is_dictionary(column.type):
                    column = column.dictionary_decode()
                kind = _parquet_type(column.type)
                if kind is ColumnType.FLOAT:
                    # Parquet's NaN is a missing value, as ExampleGen reads it.
                    column = pc.if_else(pc.is_nan(column), None, column)
                if kind is ColumnType.BYTES:
                    yield column.cast(pa.binary()), kind
                else:
                    numbers = column.cast(pa.int64() if kind is ColumnType.INT else pa.float64())
                    yield numbers.cast(pa.string()).cast(pa.binary()), kind


def read_label_values(
    source: DataSource,
    label: str,
    max_classes: int = 2,
    column_type: ColumnType | None = None,
    encoding: str = "utf-8",
) -> LabelValues:
    """Reads the label column of every file of a tabular source.

    Args:
      source: a CSV or Parquet source.
      label: the label column.
      max_classes: stop collecting class names past this many.
      column_type: CSV: the type ExampleGen stores the column as
        (``label_column_type``); None: text.
      encoding: CSV: the files' text encoding.
    """
    import pyarrow.compute as pc

    found = LabelValues()
    for column, kind in _batches(source, label):
        kind = kind or column_type or ColumnType.BYTES
        values = column.drop_null()
        values = values.filter(pc.invert(pc.match_substring_regex(values, r"^\s*$")))
        found.rows += len(values)
        if kind is ColumnType.BYTES:
            bad = values.filter(pc.invert(pc.match_substring_regex(values, _NUMBER)))
            found.non_numeric += len(bad)
            if len(bad) and found.example_non_numeric is None:
                found.example_non_numeric = _decoded(bad[0].as_py(), encoding).strip()
        if len(found.classes) >= max_classes:
            continue
        for value in pc.unique(values).to_pylist():
            name = class_name(_decoded(value, encoding), kind)
            if name is not None and name not in found.classes:
                found.classes.append(name)
                if len(found.classes) == max_classes:
                    break
    return found


def _decoded(value: bytes, encoding: str) -> str:
    return value.decode(encoding, errors="replace")


def check_label_serves(
    source: DataSource,
    label: str,
    problem: str,
    max_classes: int = 2,
    column_type: ColumnType | None = None,
    encoding: str = "utf-8",
    *,
    max_bad_fraction: float,
) -> LabelValues:
    """Returns what the label column holds (up to ``max_classes`` classes, named as the
    model will name them).

    A regression label may hold up to ``max_bad_fraction`` of values that are not numbers:
    the run's ExampleGen quarantines those rows, as other bad input, within that limit,
    its own.

    Raises:
      ValueError: in one line, if the label column cannot serve ``problem``.
    """
    found = read_label_values(source, label, max_classes, column_type, encoding)
    if not found.rows:
        raise ValueError(f"Label column {label!r} of {source.root} is empty in every row.")
    if problem == "regression":
        if found.non_numeric / found.rows > max_bad_fraction:
            raise ValueError(
                f"Label column {label!r} of {source.root} is not numeric ({found.non_numeric:,} "
                f"of {found.rows:,} values are not numbers, e.g. {found.example_non_numeric!r}; "
                f"more than the {max_bad_fraction:.2%} ExampleGen may quarantine); "
                "regression needs a number: use --problem classification or another label."
            )
    elif not found.classes:
        raise ValueError(
            f"Label column {label!r} of {source.root} holds no value of its type "
            f"({column_type.value if column_type else 'text'}); a classifier needs two classes."
        )
    elif len(found.classes) < 2:
        raise ValueError(
            f"Label column {label!r} of {source.root} holds one class ({found.classes[0]!r} "
            f"in all {found.rows:,} rows); a classifier needs at least two."
        )
    return found
