"""TFRecord files read without TensorFlow: each record's framing checked by its CRCs.

Every record is the data's length (uint64, little-endian), the masked CRC-32C
of those 8 bytes, the data, and the masked CRC-32C of the data. A GZIP file
(``TFRecordOptions(compression_type="GZIP")``, the ``.gz`` shards) is one gzip
stream over that sequence. Reading them this way costs a fraction of a second
where importing TensorFlow costs several, which is what a command that only
looks at a few records (``inspect``, the run report's thumbnails) should pay.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterator

import google_crc32c

from tfrecord_pipelines.components.storage import filesystem

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
_GZIP_MAGIC = b"\x1f\x8b"
# TFRecord's CRC mask (tensorflow/core/lib/hash/crc32c.h): a CRC of data that
# itself holds CRCs is masked so that it does not read as one.
_MASK_DELTA = 0xA282EAD8


class CorruptRecordFile(ValueError):
    """A file that is not a sequence of TFRecord records (bad framing or CRC, truncated)."""


def _corrupt(path: str, problem: str) -> CorruptRecordFile:
    return CorruptRecordFile(f"{path} is not a valid TFRecord file: {problem}")


def _masked_crc(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _records(stream, path: str) -> Iterator[bytes]:
    offset = 0
    while True:
        header = stream.read(_HEADER.size)
        if not header:
            return
        if len(header) < _HEADER.size:
            raise _corrupt(path, f"truncated record header at byte {offset:,}")
        length, length_crc = _HEADER.unpack(header)
        if _masked_crc(header[:8]) != length_crc:
            raise _corrupt(path, f"corrupted record length at byte {offset:,}")
        data = stream.read(length)
        footer = stream.read(_FOOTER.size)
        if len(data) < length or len(footer) < _FOOTER.size:
            raise _corrupt(path, f"truncated record at byte {offset:,}")
        if _masked_crc(data) != _FOOTER.unpack(footer)[0]:
            raise _corrupt(path, f"corrupted record data at byte {offset:,}")
        offset += _HEADER.size + length + _FOOTER.size
        yield data


def read_records(path: str) -> Iterator[bytes]:
    """Yields the records of a TFRecord file, plain or GZIP (told apart by gzip's magic bytes).

    Raises:
      CorruptRecordFile: at the first record whose framing or CRC is wrong, or
        if the file ends inside a record or its gzip stream is broken.
    """
    with filesystem.open_binary(path) as raw:
        compressed = raw.read(2) == _GZIP_MAGIC
        raw.seek(0)
        if not compressed:
            yield from _records(raw, path)
            return
        try:
            with gzip.GzipFile(fileobj=raw) as stream:
                yield from _records(stream, path)
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            raise _corrupt(path, f"broken gzip stream ({e})") from None
