"""A CSV block's bytes cut into records, by RFC 4180 quoting.

A line end is a record end when the number of ``"`` before it is even (an
escaped quote ``""`` counts twice, so it never changes that), so a quoted
field may span lines. Below both the data's sniffing (``csv_dialect``) and
the converter's blocks (``example_gen.csv_blocks``), which share these ends.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterator

QUOTE = b'"'
NEWLINE = b"\n"


@dataclasses.dataclass(frozen=True)
class RawRecord:
    """One record's bytes as the file holds them.

    Attributes:
      line: the file's line number where the record starts.
      data: the record, line ends inside quoted fields kept, its own line end removed.
      complete: False when a quote opened in it never closes in the block:
        ``data`` is then its first line only.
    """

    line: int
    data: bytes
    complete: bool = True


def split_records(data: bytes, first_line: int) -> Iterator[RawRecord]:
    """Yields the non-blank records of a block, quote-aware (see the module docstring)."""
    lines = data.split(NEWLINE)
    if lines and not lines[-1]:
        lines.pop()
    # parity[k]: quotes in lines[:k] modulo 2. A record from line i ends at the
    # first line j >= i after which the parity is back to parity[i].
    parity = [0]
    for text in lines:
        parity.append(parity[-1] ^ (text.count(QUOTE) & 1))
    positions = {0: [], 1: []}
    for k, p in enumerate(parity):
        positions[p].append(k)
    i = 0
    while i < len(lines):
        after = positions[parity[i]]
        k = bisect.bisect_right(after, i)
        if k == len(after):
            yield RawRecord(first_line + i, lines[i].rstrip(b"\r"), complete=False)
            i += 1
            continue
        end = after[k]
        record = NEWLINE.join(lines[i:end]).rstrip(b"\r")
        if record.strip():
            yield RawRecord(first_line + i, record)
        i = end
