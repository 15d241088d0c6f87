"""What to read and how to convert it, for any engine: files, units, converter."""

from __future__ import annotations

import dataclasses
import glob
import posixpath

from tensorflow_metadata.proto.v0 import schema_pb2

from tfrecord_pipelines.components import data_source
from tfrecord_pipelines.components.data_source import (
    IMAGES,
    PARQUET,
    csv_dialect,
    csv_types,
    image_folder,
    partitions,
)
from tfrecord_pipelines.components.data_source import files as data_files
from tfrecord_pipelines.components.example_gen import (
    csv_blocks,
    csv_source,
    image_source,
    parquet_source,
)
from tfrecord_pipelines.components.example_gen.csv_source import BlockConverter
from tfrecord_pipelines.components.example_gen.image_source import ImageConverter
from tfrecord_pipelines.components.example_gen.parquet_source import RowGroupConverter
from tfrecord_pipelines.components.example_gen.partition_columns import PartitionColumns
from tfrecord_pipelines.components.example_gen.settings import CsvOptions
from tfrecord_pipelines.components.example_gen.split_assignment import SplitAssigner
from tfrecord_pipelines.components.storage import filesystem


@dataclasses.dataclass(frozen=True)
class SourceOptions:
    """How input files are read.

    Attributes:
      label_key: a column every row must fill (tabular); images: the
        feature of the class's id (``image_folder.class_id_key``).
      schema: CSV: column types (else inferred from the first rows).
      csv: CSV: block size, encoding and delimiter (``settings.CsvOptions``,
        which checks them); a delimiter not set is sniffed from the first
        file (``csv_dialect.sniff_delimiter``).
    """

    label_key: str | None = None
    schema: schema_pb2.Schema | None = None
    csv: CsvOptions = CsvOptions()


@dataclasses.dataclass(frozen=True)
class SourcePlan:
    """What an engine needs to convert one input pattern.

    Attributes:
      source_format: ``csv``, ``parquet`` or ``images``.
      files: the input files, sorted (paths; for images, LabelledFiles in
        ``image_source.mixed_order``).
      converter: the engine-neutral converter of the format's units (CSV
        blocks, Parquet row groups, batches of images).
      block_bytes: CSV: bytes per block.
      input_base, pattern: where ``files`` were listed from, so that an
        engine can list them where it runs (``list_input_files``) instead
        of carrying a list of every image in its job's description.
      skipped: images: the class folders' files not named like images
        (``image_folder.ImageListing.skipped``), for the summary.
    """

    source_format: str
    files: list
    converter: BlockConverter | RowGroupConverter | ImageConverter
    block_bytes: int
    input_base: str
    pattern: str
    skipped: tuple[str, ...] = ()


def image_folder_of(input_base: str, pattern: str) -> str:
    """An image input's folder: ``input_base``, below it the fixed folders the pattern starts
    with (a span's: ``day-3/*/*`` is the class folders of ``input_base/day-3``)."""
    fixed = []
    for part in pattern.split("/"):
        if glob.has_magic(part):
            break
        fixed.append(part)
    return posixpath.join(input_base, *fixed)


def list_input_files(source_format: str, input_base: str, pattern: str) -> list:
    """Returns the input's files: paths, or for images LabelledFiles in ``mixed_order``.

    Raises:
      ValueError: if the input is missing or empty.
    """
    if source_format == IMAGES:
        folder = image_folder_of(input_base, pattern)
        return image_source.mixed_order(image_folder.list_images(folder))
    if not filesystem.exists(input_base):
        raise ValueError(f"Input path {input_base} does not exist.")
    return data_files.data_files(input_base, pattern, source_format)


def plan_source(
    source_format: str,
    input_base: str,
    pattern: str,
    *,
    assigner: SplitAssigner,
    options: SourceOptions,
) -> SourcePlan:
    """Lists the files and, for CSV, types the columns; returns the plan any engine runs.

    Done before any worker starts, so that a missing path or an empty folder
    fails first.

    Raises:
      ValueError: if the input is missing or empty, or the label column is not in it.
    """
    required = [name for name in (options.label_key, assigner.key) if name]
    # Spark's executors do not run in the driver's working directory.
    input_base = filesystem.absolute(input_base)
    if source_format == IMAGES:
        listing = image_folder.list_folder(image_folder_of(input_base, pattern))
        files = image_source.mixed_order(listing.files)
        if assigner.key:
            raise ValueError(
                f"Splitting on a key column ({assigner.key!r}) is for tabular data; "
                "image folders are split by a hash of each record."
            )
        converter = image_source.ImageConverter(
            image_folder.class_id_key(options.label_key), assigner
        )
        return SourcePlan(
            source_format,
            files,
            converter,
            options.csv.block_bytes_to_read,
            input_base,
            pattern,
            tuple(listing.skipped),
        )
    files = list_input_files(source_format, input_base, pattern)
    block_bytes, encoding = options.csv.block_bytes_to_read, options.csv.encoding_to_read
    hive = partitions.discover(input_base, pattern, files)
    added = PartitionColumns(input_base, pattern, hive) if hive else None
    if source_format == PARQUET:
        partitions.check_no_clash(hive, data_source.parquet_columns(files[:1]), input_base)
        converter = parquet_source.RowGroupConverter(required, assigner, added)
        return SourcePlan(source_format, files, converter, block_bytes, input_base, pattern)
    delimiter = options.csv.delimiter or csv_dialect.sniff_delimiter(files[0], encoding)
    header = data_source.read_header(files, encoding, delimiter)
    partitions.check_no_clash(hive, header, input_base)
    if options.label_key and options.label_key not in header:
        raise ValueError(
            f"Label column {options.label_key!r} is not in the CSV header of {input_base}; "
            f"columns are: {', '.join(header)}."
        )
    types = csv_types.infer_column_types(files, header, options.schema, encoding, delimiter)
    layout = csv_blocks.CsvLayout(header=tuple(header), encoding=encoding, delimiter=delimiter)
    converter = csv_source.BlockConverter(layout, types, required, assigner, added)
    return SourcePlan(source_format, files, converter, block_bytes, input_base, pattern)
