"""How a CSV input is written: its compression, its delimiter and its header row.

Compression comes from the file's extension (``files.compression_of``) and
is undone by pyarrow's codecs as the file streams in. The delimiter is one
of ``,`` ``;`` tab and ``|``: ``.tsv`` files are tab-separated, and any
other is sniffed from its first records: each candidate splits them with
Python's ``csv`` reader, quotes honoured, and the one that gives the most of
them the header's number of fields (more than one; more than half of them,
the rest being bad rows for the quarantine) wins, more columns breaking a
tie. When two still tie, or none fits, the error names them and
``--delimiter``.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import sys
from collections.abc import Iterator

from tfrecord_pipelines.components.data_source import files as data_files
from tfrecord_pipelines.components.data_source.csv_records import split_records
from tfrecord_pipelines.components.storage import filesystem

DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
DEFAULT_DELIMITER = ","
# Bytes and records of the first file sniffed.
_SNIFF_BYTES = 256 * 1024
_SNIFF_RECORDS = 200
# A delimiter must give more than this share of the records the header's field count:
# the rest may be bad rows, which the converter quarantines with their reasons.
_FITTING_SHARE = 0.5
# Read in pieces: a codec's error loses the piece it is in, not what came before.
_READ_BYTES = 64 * 1024


@contextlib.contextmanager
def open_data(path: str):
    """Opens a data file for reading bytes, decompressed as its extension says."""
    codec = data_files.compression_of(path)
    with filesystem.open_binary(path) as raw:
        if codec is None:
            yield raw
            return
        import pyarrow as pa

        with pa.CompressedInputStream(raw, codec) as stream:
            yield stream


def read_chunks(stream, size: int) -> Iterator[bytes]:
    """Yields a stream's data in chunks of about ``size`` bytes, read in small steps, so that
    a codec's error loses one step: the chunk before it is yielded, then the error raised."""
    buffer, held = [], 0
    while True:
        try:
            data = stream.read(_READ_BYTES)
        except OSError:  # pyarrow's codec errors are OSErrors
            if buffer:
                yield b"".join(buffer)
            raise
        if not data:
            break
        buffer.append(data)
        held += len(data)
        if held >= size:
            yield b"".join(buffer)
            buffer, held = [], 0
    if buffer:
        yield b"".join(buffer)


class _Counted(io.RawIOBase):
    """A file read through, counting the bytes taken from it."""

    def __init__(self, raw):
        self._raw, self.taken = raw, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._raw.read(len(buffer))
        buffer[: len(data)] = data
        self.taken += len(data)
        return len(data)


def read_sample(path: str, size: int) -> tuple[bytes, float]:
    """Returns up to ``size`` bytes from the start of a file's (decompressed) data, and its
    expansion: bytes of data per stored byte (1.0 for a plain file; for a compressed one,
    within the codec's read-ahead of the truth).

    A compressed file damaged further on gives what it holds before the damage
    (the converter quarantines the rest).

    Raises:
      ValueError: if a compressed file's start does not decompress.
    """
    codec = data_files.compression_of(path)
    data = b""
    try:
        with filesystem.open_binary(path) as raw:
            counted = _Counted(raw)
            if codec is None:
                stream = counted
            else:
                import pyarrow as pa

                stream = pa.CompressedInputStream(counted, codec)
            with stream:
                while len(data) < size:
                    chunk = stream.read(min(size - len(data), _READ_BYTES))
                    if not chunk:
                        break
                    data += chunk
    except OSError as e:  # pyarrow's codec errors are OSErrors
        if not data or codec is None:
            raise ValueError(f"{path} cannot be read as a {codec or 'plain'} file: {e}") from None
    return data, (len(data) / counted.taken if codec and counted.taken else 1.0)


def read_start(path: str, size: int) -> bytes:
    """Returns up to ``size`` bytes from the start of a file's data (``read_sample``)."""
    return read_sample(path, size)[0]


def strip_bom(data: bytes) -> bytes:
    """Returns ``data`` without a leading UTF-8 byte order mark."""
    return data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else data


def describe(delimiter: str) -> str:
    """A delimiter as a person names it: ``semicolon (;)``."""
    return f"{DELIMITERS.get(delimiter, 'character')} ({delimiter!r})"


def check_delimiter(delimiter: str) -> None:
    """Raises ValueError unless ``delimiter`` is one character (not a quote or a line end)."""
    if len(delimiter) != 1 or delimiter in '"\r\n':
        raise ValueError(
            f"Delimiter {delimiter!r} must be one character other than a quote or a line end; "
            f"e.g. {', '.join(repr(d) for d in DELIMITERS)}."
        )


def _records(path: str, encoding: str) -> list[str]:
    data = strip_bom(read_start(path, _SNIFF_BYTES))
    records = [r for r in split_records(data, 1) if r.complete][: _SNIFF_RECORDS + 1]
    if len(data) == _SNIFF_BYTES and len(records) > 1:
        records.pop()  # the sample's end may cut the last record
    return [r.data.decode(encoding, errors="replace") for r in records]


def _fields(text: str, delimiter: str) -> int:
    return len(next(csv.reader(io.StringIO(text), delimiter=delimiter), []))


def sniff_delimiter(path: str, encoding: str = "utf-8") -> str:
    """Returns the delimiter of a CSV file (see the module docstring).

    Raises:
      ValueError: if no candidate fits its first records, or two fit equally.
    """
    if data_files.is_tsv(path):
        return "\t"
    csv.field_size_limit(sys.maxsize)
    records = _records(path, encoding)
    if not records:
        return DEFAULT_DELIMITER
    header, rows = records[0], records[1:] or records[:1]
    fits = {}
    for delimiter in DELIMITERS:
        width = _fields(header, delimiter)
        if width > 1:
            share = sum(_fields(row, delimiter) == width for row in rows) / len(rows)
            if share > _FITTING_SHARE:
                fits[delimiter] = (share, width)
    if not fits:
        if not any(d in header for d in DELIMITERS):
            return DEFAULT_DELIMITER  # one column
        raise ValueError(
            f"Cannot tell the delimiter of {path}: none of "
            f"{', '.join(map(describe, DELIMITERS))} splits its first rows into the header's "
            "columns; pass --delimiter."
        )
    ranked = sorted(fits.items(), key=lambda item: item[1], reverse=True)
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        tied = [d for d, score in ranked if score == ranked[0][1]]
        raise ValueError(
            f"The delimiter of {path} could be {' or '.join(map(describe, tied))}: each splits "
            "its first rows alike; pass --delimiter."
        )
    return ranked[0][0]


def read_header(paths: list[str], encoding: str = "utf-8", delimiter: str = ",") -> list[str]:
    """Returns the header row shared by CSV files, without a byte order mark.

    A UTF-8 BOM (Excel's "CSV UTF-8") is not part of the first column's name.

    Raises:
      ValueError: if a file is empty, its header does not decode, its header
        looks like a row of data, or the headers differ.
    """
    header = None
    for path in paths:
        raw = _first_line(path)
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as e:
            raise ValueError(
                f"The header row of {path} is not valid {encoding} ({e.reason} at byte "
                f"{e.start}); pass the files' encoding with --encoding."
            ) from None
        first = next(csv.reader([text.rstrip("\r\n")], delimiter=delimiter), None)
        if not first:
            raise ValueError(f"CSV file {path} is empty; it needs a header row.")
        if all(_is_number(name) for name in first):
            raise ValueError(
                f"CSV file {path} has no header row: its first row is "
                f"{delimiter.join(first)[:80]!r}; add a first row naming the columns."
            )
        if header is None:
            header, header_file = first, path
        elif first != header:
            raise ValueError(
                f"CSV file {path} has columns {first}, but {header_file} has {header}; "
                "all input files need the same header."
            )
    return header


def _first_line(path: str) -> bytes:
    """The file's first line (its data's, BOM removed), read in growing pieces."""
    size = 1 << 16
    while True:
        data = read_start(path, size)
        end = data.find(b"\n")
        if end != -1 or len(data) < size:
            return strip_bom(data if end == -1 else data[: end + 1])
        size *= 4


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
