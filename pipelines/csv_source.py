"""Checks on a CSV data folder, made before any pipeline work starts."""

from __future__ import annotations

import os

import tensorflow as tf
from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import schema_pb2

from components.example_gen import csv_source as example_gen_csv
from pipelines.pipeline import CSV_PATTERN


def read_header(data_root: str) -> list[str]:
    """Returns the column names of the CSV files under ``data_root``.

    Raises:
      ValueError: if the folder is missing, holds no CSV file, a file has no
        header, or the files' headers differ.
    """
    if not tf.io.gfile.isdir(data_root):
        raise ValueError(f"Data folder {data_root} does not exist or is not a folder.")
    files = sorted(tf.io.gfile.glob(os.path.join(data_root, CSV_PATTERN)))
    if not files:
        raise ValueError(f"Data folder {data_root} holds no {CSV_PATTERN} file.")
    return example_gen_csv.read_header(files)


def check_label(data_root: str, label: str) -> None:
    """Raises ValueError unless ``label`` is a column of the CSV files."""
    columns = read_header(data_root)
    if label not in columns:
        raise ValueError(
            f"Label column {label!r} is not in the CSV header of {data_root}; "
            f"columns are: {', '.join(columns)}."
        )


def check_schema(schema_path: str, label: str) -> None:
    """Raises ValueError unless the schema file parses and has the label feature."""
    if not tf.io.gfile.exists(schema_path):
        raise ValueError(f"Schema file {schema_path} does not exist.")
    schema = schema_pb2.Schema()
    try:
        text_format.Parse(tf.io.gfile.GFile(schema_path).read(), schema)
    except text_format.ParseError as e:
        raise ValueError(f"Schema file {schema_path} is not a valid schema: {e}") from e
    names = [feature.name for feature in schema.feature]
    if label not in names:
        raise ValueError(
            f"Label column {label!r} is not a feature of schema {schema_path}; "
            f"features are: {', '.join(names)}."
        )
