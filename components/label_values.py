"""Checks that a tabular label column can serve the task, reading that column alone.

Regression needs numbers; classification needs at least two classes. Both
are cheap to know from the label column (pyarrow reads one column of a CSV
or Parquet file without converting the others) and expensive to find out
later: a string label fails inside Transform after minutes, and a single
class trains a model that always answers it, which the Evaluator blesses.
"""

from __future__ import annotations

import dataclasses

from tfrecord_pipelines.components import filesystem
from tfrecord_pipelines.components.data_source import CSV, DataSource

# A regression label may hold this share of values that are not numbers:
# ExampleGen quarantines those rows, as it does other bad input, up to its
# own limit (max_bad_fraction, 1% by default).
MAX_NON_NUMERIC_FRACTION = 0.01
_BLOCK_BYTES = 16 * 2**20


@dataclasses.dataclass
class LabelValues:
    """What the label column holds.

    Attributes:
      rows: rows with a value.
      non_numeric: values that do not parse as numbers.
      example_non_numeric: one of them.
      classes: up to ``max_classes`` distinct values, in the order met.
    """

    rows: int = 0
    non_numeric: int = 0
    example_non_numeric: str | None = None
    classes: list[str] = dataclasses.field(default_factory=list)


def _batches(source: DataSource, label: str):
    """The label column, as pyarrow arrays of bytes, file by file, block by block.

    Bytes, not strings: a value that is not UTF-8 is for ExampleGen's
    quarantine to judge, not a reason to fail here. Rows with the wrong
    number of fields are skipped for the same reason; quoted values may
    span lines, as the converter allows.
    """
    import pyarrow as pa
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    for path in source.files():
        with filesystem.open_binary(path) as f:
            if source.format == CSV:
                reader = pa_csv.open_csv(
                    f,
                    read_options=pa_csv.ReadOptions(block_size=_BLOCK_BYTES),
                    parse_options=pa_csv.ParseOptions(
                        newlines_in_values=True, invalid_row_handler=lambda row: "skip"
                    ),
                    convert_options=pa_csv.ConvertOptions(
                        include_columns=[label], column_types={label: pa.binary()}
                    ),
                )
                for batch in reader:
                    yield batch.column(0)
            else:
                parquet = pq.ParquetFile(f)
                for batch in parquet.iter_batches(columns=[label]):
                    yield batch.column(0).cast(pa.binary())


def read_label_values(source: DataSource, label: str, max_classes: int = 2) -> LabelValues:
    """Reads the label column of every file of a tabular source."""
    import pyarrow.compute as pc

    found = LabelValues()
    for column in _batches(source, label):
        values = column.drop_null()
        values = values.filter(pc.invert(pc.match_substring_regex(values, r"^\s*$")))
        found.rows += len(values)
        is_number = pc.match_substring_regex(
            values, r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"
        )
        bad = values.filter(pc.invert(is_number))
        found.non_numeric += len(bad)
        if len(bad) and found.example_non_numeric is None:
            found.example_non_numeric = _text(bad[0].as_py())
        if len(found.classes) < max_classes:
            for value in pc.unique(values).to_pylist():
                text = _text(value)
                if text not in found.classes and len(found.classes) < max_classes:
                    found.classes.append(text)
    return found


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace").strip()


def check_label_serves(
    source: DataSource, label: str, problem: str, max_classes: int = 2
) -> LabelValues:
    """Returns what the label column holds (up to ``max_classes`` classes).

    Raises:
      ValueError: in one line, if the label column cannot serve ``problem``.
    """
    found = read_label_values(source, label, max_classes)
    if not found.rows:
        raise ValueError(f"Label column {label!r} of {source.root} is empty in every row.")
    if problem == "regression":
        if found.non_numeric / found.rows > MAX_NON_NUMERIC_FRACTION:
            raise ValueError(
                f"Label column {label!r} of {source.root} is not numeric ({found.non_numeric:,} "
                f"of {found.rows:,} values are not numbers, e.g. {found.example_non_numeric!r}); "
                "regression needs a number: use --problem classification or another label."
            )
    elif len(found.classes) < 2:
        raise ValueError(
            f"Label column {label!r} of {source.root} holds one class ({found.classes[0]!r} "
            f"in all {found.rows:,} rows); a classifier needs at least two."
        )
    return found
