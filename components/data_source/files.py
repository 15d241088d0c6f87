"""What ``--data`` names, as files: a file, a glob or a folder, and which files in it are data.

A file's kind comes from its name, as the readers that write such files
name them: ``.csv`` and ``.tsv`` (each may end in ``.gz``, ``.bz2`` or
``.zst``), ``.parquet``, and the image extensions. Files that engines leave
beside their data are not data and are skipped without a word, as pyarrow's
dataset discovery skips them: names starting with ``_`` or ``.`` (Spark's
and Hadoop's ``_SUCCESS``, ``_committed_*``, ``._*`` and ``.*.crc``), and
``*.crc``. Known formats this project cannot read are refused by name
(``unreadable``). Listing goes through ``filesystem``, so the same code
reads a local disk, ``gs://`` and ``s3://``.
"""

from __future__ import annotations

import dataclasses
import glob as _glob
import posixpath

from tfrecord_pipelines.components.data_source import image_folder
from tfrecord_pipelines.components.storage import filesystem

CSV = "csv"
PARQUET = "parquet"
IMAGES = "images"
# Compressed files by extension, as pyarrow's codecs name them.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}
CSV_EXTENSIONS = (".csv", ".tsv")
PARQUET_EXTENSIONS = (".parquet", ".parq")
# Formats met in data folders that no reader here takes, and what to do.
_UNREADABLE = {
    (".xlsx", ".xlsm", ".xls", ".ods"): "a spreadsheet; save each sheet as CSV (UTF-8)",
    (".json", ".jsonl", ".ndjson"): (
        "JSON; write it as Parquet or CSV first, e.g. "
        "pandas.read_json(path, lines=True).to_parquet(...)"
    ),
    (".avro",): "Avro; write it as Parquet first (Spark: df.write.parquet)",
    (".orc",): "ORC; write it as Parquet first (Spark: df.write.parquet)",
    (".feather", ".arrow", ".ipc"): "Arrow IPC; write it as Parquet (pyarrow.parquet.write_table)",
    (".zip", ".tar", ".tgz", ".7z", ".rar"): "an archive; unpack it first",
}


def compression_of(path: str) -> str | None:
    """A file's codec by its extension (``gzip``, ``bz2``, ``zstd``), or None."""
    return COMPRESSIONS.get(posixpath.splitext(path)[1].lower())


def _bare_extension(name: str) -> str:
    """A name's extension, a compression's extension removed (``.csv`` of ``a.csv.gz``)."""
    stem, ext = posixpath.splitext(name.lower())
    if ext in COMPRESSIONS:
        ext = posixpath.splitext(stem)[1]
    return ext


def is_tsv(name: str) -> bool:
    """Whether a file is tab-separated by its name (``.tsv``, compressed or not)."""
    return _bare_extension(name) == ".tsv"


def is_side_file(name: str) -> bool:
    """Whether a file or folder name is one engines leave beside data (``_SUCCESS``, ``.crc``)."""
    name = posixpath.basename(name.rstrip("/"))
    return name.startswith(("_", ".")) or name.lower().endswith(".crc")


def kind_of(name: str) -> str | None:
    """The format a file holds by its name: ``csv``, ``parquet``, ``images`` or None."""
    ext = _bare_extension(name)
    if ext in CSV_EXTENSIONS:
        return CSV
    if ext in PARQUET_EXTENSIONS and not compression_of(name):
        return PARQUET
    if image_folder.is_image_name(name):
        return IMAGES
    return None


def unreadable(name: str) -> str | None:
    """What a file of a known format no reader here takes is, and what to do; None otherwise."""
    ext = _bare_extension(name)
    return next((what for exts, what in _UNREADABLE.items() if ext in exts), None)


@dataclasses.dataclass(frozen=True)
class Location:
    """Where ``--data`` points.

    Attributes:
      root: the folder the data's files are under (ExampleGen's input_base).
      pattern: the files, relative to ``root`` (``iris.csv``, ``*.csv.gz``,
        ``*/part-*.csv``); None for a folder, whose layout tells its files.
    """

    root: str
    pattern: str | None = None


def locate(data: str) -> Location:
    """Returns where ``data`` (a file, a glob or a folder) is.

    Raises:
      ValueError: if nothing is there, or a glob matches no file.
    """
    data = data.rstrip("/") if len(data) > 1 else data
    if _glob.has_magic(data):
        parts = data.split("/")
        first = next(i for i, part in enumerate(parts) if _glob.has_magic(part))
        root = "/".join(parts[:first]) or "."
        if not filesystem.isdir(root):
            raise ValueError(f"Data glob {data}: folder {root} does not exist.")
        return Location(root, "/".join(parts[first:]))
    if filesystem.isdir(data):
        return Location(data)
    if filesystem.exists(data):
        root, name = posixpath.split(data)
        return Location(root or ".", name)
    raise ValueError(f"Data path {data} does not exist (give a file, a glob or a folder).")


def matching(root: str, pattern: str) -> list[str]:
    """Returns the files under ``root`` that ``pattern`` matches, sorted, side files left out.

    A side file is one whose name or any folder's name below ``root`` is a
    side file's (``is_side_file``).
    """
    found = filesystem.glob(posixpath.join(root, pattern))
    return [path for path in found if is_visible(root, path) and not filesystem.isdir(path)]


def is_visible(root: str, path: str) -> bool:
    """Whether neither ``path`` nor a folder between it and ``root`` is a side file's."""
    return not any(map(is_side_file, _relative(root, path).split("/")))


def _relative(root: str, path: str) -> str:
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else posixpath.basename(path)


def data_files(root: str, pattern: str, source_format: str) -> list[str]:
    """Returns the files of ``source_format`` that ``pattern`` matches under ``root``, sorted.

    A pattern naming one file (no wildcard) is read as that format whatever
    its name; a wildcard's matches are kept by their kind (``kind_of``), so a
    README or a ``_SUCCESS`` beside the data is not read.

    Raises:
      ValueError: if no file of the format matches.
    """
    found = matching(root, pattern)
    named = ""
    if _glob.has_magic(pattern):
        found = [path for path in found if kind_of(path) == source_format]
        named = f" (by extension: {', '.join(_extensions(source_format))})"
    if not found:
        where = posixpath.join(root, pattern)
        raise ValueError(f"Data {where} holds no {source_format} file{named}.")
    return found


def _extensions(source_format: str) -> tuple[str, ...]:
    if source_format == CSV:
        return tuple(f"{ext}{z}" for ext in CSV_EXTENSIONS for z in ("", *COMPRESSIONS))
    return PARQUET_EXTENSIONS if source_format == PARQUET else image_folder.IMAGE_EXTENSIONS


def pattern_of(files: list[str], root: str) -> str:
    """The narrowest glob of ``files`` (all under ``root`` at one depth): their folders'
    parts where all agree (``key=*`` for a Hive level) or ``*``, and ``*`` plus the
    extension they share, e.g. ``day=*/*.csv.gz``; TFX's driver fingerprints what it
    matches."""
    relative = [_relative(root, path).split("/") for path in files]
    depth = len(relative[0])
    folders = []
    for level in range(depth - 1):
        names = {parts[level] for parts in relative}
        keys = {name.split("=", 1)[0] if "=" in name else None for name in names}
        if len(keys) == 1 and None not in keys:
            folders.append(f"{keys.pop()}=*")  # a Hive level: any of its values, new ones too
        else:
            folders.append(names.pop() if len(names) == 1 else "*")
    suffixes = {_full_extension(parts[-1]) for parts in relative}
    name = f"*{suffixes.pop()}" if len(suffixes) == 1 else "*"
    return "/".join([*folders, name])


def _full_extension(name: str) -> str:
    stem, ext = posixpath.splitext(name)
    if ext.lower() in COMPRESSIONS:
        ext = posixpath.splitext(stem)[1] + ext
    return ext
