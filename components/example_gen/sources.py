"""Chooses the Beam source transform for a source format."""

from __future__ import annotations

import apache_beam as beam
from tensorflow_metadata.proto.v0 import schema_pb2

from components import data_source, image_folder
from components.data_source import IMAGES, PARQUET
from components.example_gen import csv_source, image_source, parquet_source


def read_examples(
    pipeline: beam.Pipeline,
    source_format: str,
    input_base: str,
    pattern: str,
    *,
    label_key: str | None,
    schema: schema_pb2.Schema | None,
) -> beam.pvalue.DoOutputsTuple:
    """Applies the source transform; returns its outputs (examples, quarantine).

    Files are listed and, for CSV, typed here, when the pipeline is built, so
    that a missing path or an empty folder fails before any worker starts.

    Raises:
      ValueError: if the input is missing or empty, or the label column is not in it.
    """
    required = [label_key] if label_key else []
    if source_format == IMAGES:
        files = image_folder.list_images(input_base)
        return pipeline | "ReadImages" >> image_source.ImagesToExamples(
            files, label_key or image_folder.DEFAULT_LABEL_KEY
        )
    files = csv_source.list_files(input_base, pattern)
    if source_format == PARQUET:
        return pipeline | "ReadParquet" >> parquet_source.ParquetToExamples(files, required)
    header = data_source.read_header(files)
    if label_key and label_key not in header:
        raise ValueError(
            f"Label column {label_key!r} is not in the CSV header of {input_base}; "
            f"columns are: {', '.join(header)}."
        )
    types = csv_source.infer_column_types(files, header, schema)
    return pipeline | "ReadCsv" >> csv_source.CsvToExamples(files, header, types, required)
