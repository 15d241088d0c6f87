"""CSV files cut into blocks at record ends, and blocks cut into records.

A block is a byte range of one file that starts at the beginning of a
record and ends after a record's line end, so blocks parse independently
and one large file spreads over many workers. Record ends are found by
RFC 4180 quoting: a line end is a record end when the number of ``"``
before it is even (an escaped quote ``""`` counts twice, so it never
changes that), so a quoted field may span lines. A stray quote in an
unquoted field upsets the count; its rows then fail to parse and are
quarantined one line at a time rather than swallowing the rest of the file.

A compressed file cannot be cut at byte offsets: it is one unit,
a ``CsvStream``, which a worker decompresses as it reads and parses in
pieces of about the block size, cut at record ends the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from tfrecord_pipelines.components.data_source.csv_dialect import open_data, read_chunks
from tfrecord_pipelines.components.data_source.csv_records import NEWLINE, QUOTE
from tfrecord_pipelines.components.data_source.files import compression_of
from tfrecord_pipelines.components.storage import filesystem


@dataclasses.dataclass(frozen=True)
class CsvLayout:
    """What every file of a CSV input shares.

    Attributes:
      header: the column names (the first record of every file).
      encoding: the files' text encoding.
      delimiter: the field delimiter.
    """

    header: tuple[str, ...]
    encoding: str = "utf-8"
    delimiter: str = ","


@dataclasses.dataclass(frozen=True)
class CsvBlock:
    """A byte range of a CSV file holding whole records.

    Attributes:
      path: the file.
      start: offset of the block's first byte.
      end: offset just after the block's last byte.
      first_line: the file's line number (1-based; the header is line 1) at ``start``.
    """

    path: str
    start: int
    end: int
    first_line: int

    def read(self) -> bytes:
        """Returns the block's bytes."""
        with filesystem.open_binary(self.path) as f:
            f.seek(self.start)
            return f.read(self.end - self.start)

    def pieces(self) -> Iterator[tuple[bytes, int]]:
        """Yields the block as one ``(bytes, first_line)`` piece."""
        yield self.read(), self.first_line


@dataclasses.dataclass(frozen=True)
class CsvStream:
    """A compressed CSV file, read whole by one worker in pieces of about ``block_bytes``."""

    path: str
    block_bytes: int

    def pieces(self) -> Iterator[tuple[bytes, int]]:
        """Yields ``(bytes, first_line)`` pieces of whole records after the header, in order.

        Raises:
          OSError: where the file stops decompressing, after the pieces before it.
        """
        carry, line, header = b"", 1, True
        with open_data(self.path) as f:
            for chunk in read_chunks(f, self.block_bytes):
                data = carry + chunk
                end = _last_record_end(data, 4 * self.block_bytes)
                if header and end:
                    first = _first_record_end(data[:end])
                    line += data.count(NEWLINE, 0, first)
                    data, end, header = data[first:], end - first, False
                if end:
                    yield data[:end], line
                    line += data.count(NEWLINE, 0, end)
                carry = data[end:]
        if header:
            carry = carry[_first_record_end(carry) :]
        if carry:
            yield carry, line


def _first_record_end(data: bytes) -> int:
    """The offset after the first record's line end (all of ``data`` if it has none)."""
    quotes, start = 0, 0
    found = data.find(NEWLINE)
    while found != -1:
        quotes += data.count(QUOTE, start, found)
        if quotes % 2 == 0:
            return found + 1
        start, found = found, data.find(NEWLINE, found + 1)
    return len(data)


def _last_record_end(data: bytes, most: int) -> int:
    """The offset after the last record end in ``data`` (0 if none), by quote parity.

    A stray quote leaves no record end after it; past ``most`` bytes of
    carried data, the last line end is taken, and its rows are quarantined
    one line at a time, as ``plan_blocks`` leaves them.
    """
    quotes, upto = data.count(QUOTE), len(data)
    found = data.rfind(NEWLINE)
    while found != -1:
        quotes -= data.count(QUOTE, found, upto)
        if quotes % 2 == 0:
            break
        upto, found = found, data.rfind(NEWLINE, 0, found)
    if found == -1 and len(data) > most:
        found = data.rfind(NEWLINE)
    return found + 1


def plan_blocks(path: str, block_bytes: int) -> list[CsvBlock] | list[CsvStream]:
    """Cuts a file's records after its header into blocks of about ``block_bytes``.

    Reads the file once, sequentially, counting quotes and line ends; a block
    ends at the first record end at or after ``block_bytes`` from its start.
    A compressed file is one ``CsvStream``.
    """
    if compression_of(path):
        return [CsvStream(path, block_bytes)]
    chunk_bytes = min(16 * 2**20, max(block_bytes, 64 * 2**10))
    blocks: list[CsvBlock] = []
    offset = quotes_before = lines_before = 0
    start = start_line = None
    target = 0
    with filesystem.open_binary(path) as f:
        while chunk := f.read(chunk_bytes):
            cursor, quotes = 0, quotes_before
            while True:
                begin = max(target - offset, cursor)
                quotes += chunk.count(QUOTE, cursor, begin)
                cursor = begin
                found = chunk.find(NEWLINE, cursor)
                while found != -1:
                    quotes += chunk.count(QUOTE, cursor, found)
                    cursor = found
                    if quotes % 2 == 0:
                        break
                    found = chunk.find(NEWLINE, found + 1)
                if found == -1:
                    break
                end = offset + found + 1
                line = lines_before + chunk.count(NEWLINE, 0, found + 1) + 1
                if start is not None:
                    blocks.append(CsvBlock(path, start, end, start_line))
                start, start_line = end, line
                target = end + block_bytes
                cursor = found + 1
            quotes_before = quotes + chunk.count(QUOTE, cursor)
            lines_before += chunk.count(NEWLINE)
            offset += len(chunk)
    if start is not None and start < offset:
        blocks.append(CsvBlock(path, start, offset, start_line))
    return blocks


def cut_block(data: bytes, first_line: int, pieces: int) -> list[tuple[bytes, int]]:
    """Cuts a block's bytes into about ``pieces`` parts at record ends.

    Returns:
      ``(bytes, first_line)`` of each part, in order, together all of ``data``.
    """
    parts, start, line = [], 0, first_line
    for k in range(1, pieces):
        found = data.find(NEWLINE, max(start, len(data) * k // pieces))
        while found != -1 and data.count(QUOTE, 0, found) % 2:
            found = data.find(NEWLINE, found + 1)
        if found == -1:
            break
        parts.append((data[start : found + 1], line))
        line += data.count(NEWLINE, start, found + 1)
        start = found + 1
    if start < len(data):
        parts.append((data[start:], line))
    return parts
