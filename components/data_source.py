"""One description of the data a pipeline reads: a folder and its format.

ShardedExampleGen, the command line and the pipeline share it. Formats:

- ``csv``: ``*.csv`` files with the same header row;
- ``parquet``: ``*.parquet`` files with the same columns;
- ``images``: one sub-folder of images per class, or a ``labels.csv``
  (``filename,label,class_name`` or ``filename,label``) beside the images.

``detect_format`` tells them apart from the folder's contents, and
``check_label`` checks, per format, that the label is something the data
holds, before any slow work starts (nothing here imports TensorFlow for a
local folder).
"""

from __future__ import annotations

import codecs
import csv
import dataclasses

from tfrecord_pipelines.components import filesystem, image_folder
from tfrecord_pipelines.components.spans import SpanPattern

CSV = "csv"
PARQUET = "parquet"
IMAGES = "images"
FORMATS = (CSV, PARQUET, IMAGES)
FILE_PATTERNS = {CSV: "*.csv", PARQUET: "*.parquet"}
_LAYOUTS = (
    "*.csv files with a header row, *.parquet files, one sub-folder of images per class, "
    f"or {image_folder.LABELS_FILE} "
    f"({' or '.join(','.join(h) for h in image_folder.LABELS_HEADERS)}) beside images"
)


@dataclasses.dataclass(frozen=True)
class DataSource:
    """A data folder and the format of what it holds.

    Attributes:
      root: the folder (local path, or gs:// / s3:// URI); for data in spans,
        the folder of the span the command line checked (the latest, or the
        one asked for).
      format: ``csv``, ``parquet`` or ``images``.
      spans: data in spans: the span folders' pattern (``events/day-{SPAN}``);
        ExampleGen then reads ``spans.base`` and picks a span itself.
    """

    root: str
    format: str
    spans: SpanPattern | None = None

    def __post_init__(self):
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {self.format!r}.")
        if not self.root:
            raise ValueError("DataSource.root must name a folder, got an empty string.")

    @property
    def is_images(self) -> bool:
        return self.format == IMAGES

    @property
    def file_pattern(self) -> str:
        """The files ExampleGen reads and fingerprints, relative to the root.

        Images are listed by their layout; the pattern covers the class
        folders' files (or, for a labels file, the root's).
        """
        if self.format in FILE_PATTERNS:
            return FILE_PATTERNS[self.format]
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
          ValueError: if the folder holds none (or the source is an image folder).
        """
        if self.format not in FILE_PATTERNS:
            raise ValueError(f"{self.root} is an image folder; list it with image_folder.")
        pattern = FILE_PATTERNS[self.format]
        files = filesystem.files_matching(self.root, pattern)
        if not files:
            raise ValueError(f"Data folder {self.root} holds no {pattern} file.")
        return files


def _check_folder(root: str) -> None:
    if not filesystem.isdir(root):
        raise ValueError(f"Data folder {root} does not exist or is not a folder.")


def detect_format(root: str) -> str:
    """Returns the format of the data in ``root``.

    Raises:
      ValueError: if the folder is missing, holds no layout this project
        reads, or holds more than one (the message names what it found).
    """
    _check_folder(root)
    if image_folder.has_labels_file(root):
        return IMAGES
    found = {
        fmt: len(filesystem.files_matching(root, pattern)) for fmt, pattern in FILE_PATTERNS.items()
    }
    found[IMAGES] = len(image_folder.class_folders(root))
    kinds = {fmt: n for fmt, n in found.items() if n}
    if len(kinds) == 1:
        return next(iter(kinds))
    if not kinds:
        raise ValueError(
            f"Data folder {root} holds no data in a layout this project reads ({_LAYOUTS})."
        )
    what = ", ".join(
        f"{n} {FILE_PATTERNS.get(fmt, 'image class folder')}(s)" for fmt, n in kinds.items()
    )
    raise ValueError(
        f"Data folder {root} is ambiguous: it holds {what}; pass --format "
        f"{'|'.join(kinds)} to choose."
    )


def open_source(root: str, source_format: str | None = None) -> DataSource:
    """Returns the DataSource of ``root``, detecting the format when none is given.

    Raises:
      ValueError: if the folder is missing or does not hold the format's layout.
    """
    if source_format is None:
        return DataSource(root, detect_format(root))
    source = DataSource(root, source_format)
    _check_folder(root)
    if source.is_images:
        if not image_folder.has_labels_file(root) and not image_folder.class_folders(root):
            raise ValueError(
                f"Data folder {root} holds no images: expected one sub-folder of images per "
                f"class or a {image_folder.LABELS_FILE} file."
            )
    else:
        source.files()
    return source


def check_encoding(encoding: str) -> None:
    """Raises ValueError unless ``encoding`` names a Python codec (CSV files' text encoding)."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(
            f"Unknown encoding {encoding!r}; give a Python codec name such as "
            "utf-8, latin-1 or cp1252."
        ) from None


def read_header(files: list[str], encoding: str = "utf-8") -> list[str]:
    """Returns the header row shared by CSV files, without a byte order mark.

    A UTF-8 BOM (Excel's "CSV UTF-8") is not part of the first column's name.

    Raises:
      ValueError: if a file is empty, its header does not decode, or the headers differ.
    """
    header = None
    for path in files:
        with filesystem.open_binary(path) as f:
            raw = f.readline()
        if raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as e:
            raise ValueError(
                f"The header row of {path} is not valid {encoding} ({e.reason} at byte "
                f"{e.start}); pass the files' encoding with --encoding."
            ) from None
        first = next(csv.reader([text.rstrip("\r\n")]), None)
        if not first:
            raise ValueError(f"CSV file {path} is empty; it needs a header row.")
        if header is None:
            header, header_file = first, path
        elif first != header:
            raise ValueError(
                f"CSV file {path} has columns {first}, but {header_file} has {header}; "
                "all input files need the same header."
            )
    return header


def _parquet_schema(path: str):
    import pyarrow.parquet as pq

    with filesystem.open_binary(path) as f:
        return pq.read_schema(f)


def parquet_columns(files: list[str]) -> dict[str, bool]:
    """Returns each Parquet column's name and whether it holds lists.

    Raises:
      ValueError: if the files' columns differ.
    """
    import pyarrow as pa

    columns, first = None, None
    for path in files:
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

    Reads every file's header or schema once; callers that need the columns,
    the list columns and the label check take them all from this.

    Raises:
      ValueError: if the files cannot be read as their format, their columns
        differ, or the source is an image folder.
    """
    if source.format == CSV:
        return dict.fromkeys(read_header(source.files()), False)
    return parquet_columns(source.files())


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

    Tabular: a column that holds one value per row (``found``: the source's
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
    if label not in found:
        raise ValueError(
            f"Label column {label!r} is not in the {kind} of {source.root}; "
            f"columns are: {', '.join(found)}."
        )
    if found[label]:
        raise ValueError(
            f"Label column {label!r} of {source.root} holds lists; a label needs one value per row."
        )
