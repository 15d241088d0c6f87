"""One description of the data a pipeline reads: where its files are, their format and dialect.

Whatever ``--data`` names (a file, a glob or a folder; ``files.locate``),
``open_source`` turns it into a DataSource: the folder the files are under,
the glob of the data files in it, their format and, for CSV, the delimiter.
The command line, ShardedExampleGen's engines (Beam and Spark), ``convert``
and the KFP components all list and read the input through it. Formats:

- ``csv``: ``.csv`` or ``.tsv`` files, plain or ``.gz``/``.bz2``/``.zst``,
  with the same header row (``csv_dialect``);
- ``parquet``: ``.parquet`` files with the same columns;
- ``images``: one sub-folder of images per class, or a ``labels.csv``
  (``filename,label,class_name`` or ``filename,label``) beside the images.

Tabular folders may be Hive-partitioned (``day=2026-11-01/part-0.parquet``):
each ``key=value`` level's key is a column (``partitions``). Nothing here
imports TensorFlow for a local path, so the command line checks the data
before anything slow is imported.
"""

from __future__ import annotations

import codecs
import dataclasses
import posixpath

from tfrecord_pipelines.components.data_source import csv_dialect, files, image_folder, partitions
from tfrecord_pipelines.components.data_source.csv_dialect import read_header
from tfrecord_pipelines.components.data_source.files import CSV, IMAGES, PARQUET
from tfrecord_pipelines.components.spans import SpanPattern
from tfrecord_pipelines.components.storage import filesystem

__all__ = ["CSV", "FORMATS", "IMAGES", "PARQUET", "DataSource", "open_source", "read_header"]

FORMATS = (CSV, PARQUET, IMAGES)
# A tabular format's files when none are named: its files by extension (``files.kind_of``).
DEFAULT_PATTERN = "*"
_NOUNS = {CSV: "CSV file(s)", PARQUET: "Parquet file(s)", IMAGES: "image class folder(s)"}
_LAYOUTS = (
    "CSV (.csv, .tsv, also .gz, .bz2, .zst) or Parquet files with their columns, "
    "Hive-partitioned folders (key=value/) of those, one sub-folder of images per class, "
    f"or {image_folder.LABELS_FILE} "
    f"({' or '.join(','.join(h) for h in image_folder.LABELS_HEADERS)}) beside images"
)


@dataclasses.dataclass(frozen=True)
class DataSource:
    """The data's files, their format and how they are written.

    Attributes:
      root: the folder the files are under (local path, or gs:// / s3:// URI);
        for data in spans, the folder of the span the command line checked
        (the latest, or the one asked for).
      format: ``csv``, ``parquet`` or ``images``.
      spans: data in spans: the span folders' pattern (``events/day-{SPAN}``);
        ExampleGen then reads ``spans.base`` and picks a span itself.
      pattern: the data files, a glob relative to ``root`` (``iris.csv``,
        ``*.csv.gz``, ``day=*/*.parquet``); empty: the format's files by
        extension (images: the layout's).
      delimiter: CSV: the field delimiter; None: sniffed where the files are
        read (``csv_dialect.sniff_delimiter``).
    """

    root: str
    format: str
    spans: SpanPattern | None = None
    pattern: str = ""
    delimiter: str | None = None

    def __post_init__(self):
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {self.format!r}.")
        if not self.root:
            raise ValueError("DataSource.root must name a folder, got an empty string.")
        if self.delimiter is not None:
            csv_dialect.check_delimiter(self.delimiter)

    @property
    def is_images(self) -> bool:
        return self.format == IMAGES

    @property
    def file_pattern(self) -> str:
        """The files ExampleGen reads and fingerprints, relative to the root.

        Images are listed by their layout; the pattern covers the class
        folders' files (or, for a labels file, the root's).
        """
        if self.pattern:
            return self.pattern
        if not self.is_images:
            return DEFAULT_PATTERN
        return "*" if image_folder.has_labels_file(self.root) else "*/*"

    @property
    def input_base(self) -> str:
        """ExampleGen's ``input_base``: the folder, or the one above the span folders."""
        return self.spans.base if self.spans else self.root

    @property
    def input_pattern(self) -> str:
        """ExampleGen's input pattern, relative to ``input_base``: ``file_pattern``, inside
        the span folders' pattern for data in spans (``day-{SPAN}/*.csv``)."""
        if self.spans:
            return f"{self.spans.folder}/{self.file_pattern}"
        return self.file_pattern

    def files(self) -> list[str]:
        """Returns the tabular files, sorted.

        Raises:
          ValueError: if none matches (or the source is an image folder).
        """
        if self.is_images:
            raise ValueError(f"{self.root} is an image folder; list it with image_folder.")
        return files.data_files(self.root, self.file_pattern, self.format)

    def partitioning(self) -> partitions.Partitioning:
        """The Hive keys of the files' folders and their types (none without Hive levels)."""
        if self.is_images:
            return partitions.Partitioning()
        return partitions.discover(self.root, self.file_pattern, self.files())


def _refuse_unreadable(paths: list[str]) -> None:
    """Raises ValueError naming the first file of a known format no reader here takes."""
    for path in paths:
        what = files.unreadable(path)
        if what:
            raise ValueError(f"{path} is {what}.")


def _hive_files(root: str) -> list[str]:
    """Every file below the Hive levels of ``root``, side files and folders left out."""
    root_parts = root.rstrip("/").split("/")
    found = [path for path in filesystem.walk_files(root) if files.is_visible(root, path)]
    levels = {}
    for path in found:
        folders = tuple(part.partition("=")[0] for part in path.split("/")[len(root_parts) : -1])
        levels.setdefault(folders, path)
    if len(levels) > 1:
        (first, a), (second, b) = list(levels.items())[:2]
        raise ValueError(
            f"Hive folder {root} mixes partition levels: {a} is under "
            f"{'/'.join(first) or 'the root'}, {b} under {'/'.join(second) or 'the root'}; every "
            "file needs the same key=value levels."
        )
    return found


def _kinds(paths: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in paths:
        kind = files.kind_of(path)
        if kind in (CSV, PARQUET):
            found.setdefault(kind, []).append(path)
    return found


def _one_kind(found: dict[str, list[str]], where: str, source_format: str | None) -> str:
    if source_format is not None:
        if source_format not in found:
            raise ValueError(f"{where} holds no {source_format} file.")
        return source_format
    if len(found) > 1:
        what = ", ".join(
            f"{len(paths)} {_NOUNS[kind]} ({posixpath.basename(paths[0])}, ...)"
            for kind, paths in found.items()
        )
        raise ValueError(
            f"{where} is ambiguous: it holds {what}; pass --format {'|'.join(found)} to choose."
        )
    return next(iter(found))


def _folder_layout(root: str, source_format: str | None) -> tuple[str, str]:
    """The format and files' glob of a folder's data."""
    if source_format in (None, IMAGES) and image_folder.has_labels_file(root):
        return IMAGES, ""
    names = [name for name in filesystem.listdir(root) if not files.is_side_file(name)]
    paths = [posixpath.join(root, name) for name in names]
    folders = {path for path in paths if filesystem.isdir(path)}
    top = [path for path in paths if path not in folders]
    hive = [path for path in folders if "=" in posixpath.basename(path)]
    if source_format != IMAGES and hive:
        found = _kinds(_hive_files(root))
        if found:
            kind = _one_kind(found, f"Hive folder {root}", source_format)
            return kind, files.pattern_of(found[kind], root)
    found = _kinds(top)
    classes = image_folder.class_folders(root) if source_format in (None, IMAGES) else []
    if source_format == IMAGES or (classes and not found):
        if not classes:
            raise ValueError(
                f"Data folder {root} holds no images: expected one sub-folder of images per "
                f"class or a {image_folder.LABELS_FILE} file."
            )
        return IMAGES, ""
    if classes:
        found[IMAGES] = [posixpath.join(root, name) for name in classes]
    if not found and source_format is None:
        _refuse_unreadable(top)
        raise ValueError(
            f"Data folder {root} holds no data in a layout this project reads ({_LAYOUTS})."
        )
    kind = _one_kind(found, f"Data folder {root}", source_format)
    return kind, files.pattern_of(found[kind], root)


def _named_files_format(location: files.Location, source_format: str | None) -> str:
    """The format of the files a file name or glob names."""
    matched = files.matching(location.root, location.pattern)
    where = posixpath.join(location.root, location.pattern)
    if not matched:
        raise ValueError(f"Data {where} matches no file.")
    if source_format is not None:
        return source_format
    found = _kinds(matched)
    if not found:
        _refuse_unreadable(matched)
        if any(files.kind_of(path) == IMAGES for path in matched):
            raise ValueError(
                f"Data {where} names images; give their folder (one sub-folder per class, or "
                f"a {image_folder.LABELS_FILE} beside them)."
            )
        raise ValueError(
            f"Cannot tell the format of {matched[0]} from its name; pass --format csv or "
            "--format parquet."
        )
    return _one_kind(found, f"Data {where}", None)


def open_source(
    data: str,
    source_format: str | None = None,
    *,
    delimiter: str | None = None,
    encoding: str = "utf-8",
) -> DataSource:
    """Returns the DataSource of ``data``: a file, a glob or a folder.

    The format is detected when none is given; a CSV's delimiter is sniffed
    from its first file's first records when none is given.

    Raises:
      ValueError: if nothing is there, it holds no data this project reads,
        or it holds more than one format (the message names what it found).
    """
    if source_format is not None and source_format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {source_format!r}.")
    location = files.locate(data)
    if location.pattern is None:
        source_format, pattern = _folder_layout(location.root, source_format)
    else:
        if source_format == IMAGES:
            raise ValueError(f"Images are read from a folder; {data} is not one.")
        source_format = _named_files_format(location, source_format)
        pattern = location.pattern
    source = DataSource(location.root, source_format, pattern=pattern)
    if source.is_images:
        return source
    paths = source.files()
    if source_format == CSV and delimiter is None:
        delimiter = csv_dialect.sniff_delimiter(paths[0], encoding)
    return dataclasses.replace(source, delimiter=delimiter)


def check_encoding(encoding: str) -> None:
    """Raises ValueError unless ``encoding`` names a Python codec (CSV files' text encoding)."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(
            f"Unknown encoding {encoding!r}; give a Python codec name such as "
            "utf-8, latin-1 or cp1252."
        ) from None


def _parquet_schema(path: str):
    import pyarrow.parquet as pq

    with filesystem.open_binary(path) as f:
        return pq.read_schema(f)


def parquet_columns(paths: list[str]) -> dict[str, bool]:
    """Returns each Parquet column's name and whether it holds lists.

    Raises:
      ValueError: if the files' columns differ.
    """
    import pyarrow as pa

    columns, first = None, None
    for path in paths:
        schema = _parquet_schema(path)
        these = {
            field.name: pa.types.is_list(field.type) or pa.types.is_large_list(field.type)
            for field in schema
        }
        if columns is None:
            columns, first = these, path
        elif list(these) != list(columns):
            raise ValueError(
                f"Parquet file {path} has columns {list(these)}, but {first} has "
                f"{list(columns)}; all input files need the same columns."
            )
    return columns


def tabular_columns(source: DataSource) -> dict[str, bool]:
    """Returns each column of a tabular source and whether it holds lists (Parquet).

    Hive partition keys come last, as the converter adds them.

    Reads every file's header or schema once; callers that need the columns,
    the list columns and the label check take them all from this.

    Raises:
      ValueError: if the files cannot be read as their format, their columns
        differ, or the source is an image folder.
    """
    paths = source.files()
    if source.format == CSV:
        found = dict.fromkeys(
            read_header(paths, delimiter=source.delimiter or csv_dialect.DEFAULT_DELIMITER), False
        )
    else:
        found = parquet_columns(paths)
    hive = partitions.discover(source.root, source.file_pattern, paths)
    partitions.check_no_clash(hive, found, source.root)
    return {**found, **dict.fromkeys(hive.types, False)}


def columns(source: DataSource) -> list[str]:
    """Returns the columns of a tabular source (see ``tabular_columns``)."""
    return list(tabular_columns(source))


def multi_valued_columns(source: DataSource) -> tuple[str, ...]:
    """Returns the columns that hold several values per row (Parquet lists)."""
    if source.format != PARQUET:
        return ()
    return tuple(name for name, is_list in tabular_columns(source).items() if is_list)


def check_label(source: DataSource, label: str, found: dict[str, bool] | None = None) -> None:
    """Raises ValueError unless ``label`` can be the source's label.

    Tabular: a column of the files that holds one value per row (``found``: the source's
    ``tabular_columns``, when already read). Images: the label is the class;
    the folder must name at least two classes.
    """
    if source.is_images:
        classes = image_folder.count_classes(source.root)
        if classes < 2:
            raise ValueError(
                f"Image folder {source.root} names {classes} class(es); a classifier needs at "
                "least two."
            )
        return
    found = tabular_columns(source) if found is None else found
    kind = "CSV header" if source.format == CSV else "Parquet columns"
    if label in partitions.keys_of(source.file_pattern).values():
        raise ValueError(
            f"Label column {label!r} is a Hive partition key of {source.root}; the label must be "
            "a column of the files."
        )
    if label not in found:
        raise ValueError(
            f"Label column {label!r} is not in the {kind} of {source.root}; "
            f"columns are: {', '.join(found)}."
        )
    if found[label]:
        raise ValueError(
            f"Label column {label!r} of {source.root} holds lists; a label needs one value per row."
        )
