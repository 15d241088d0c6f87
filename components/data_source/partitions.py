"""Hive-partitioned folders: ``key=value/`` levels whose keys become feature columns.

Spark, Hive and pyarrow write a table partitioned by ``day`` as
``day=2026-11-01/part-0.parquet``: the value is in the folder's name, not in
the file. The data's glob names each Hive level ``key=*``
(``files.pattern_of``), so the pattern alone says which levels are keys.
Values are URI-decoded and ``__HIVE_DEFAULT_PARTITION__`` is a missing
value, as pyarrow reads them; a key is typed as pyarrow's dataset discovery
types it: INT when every value is a 32-bit integer, else BYTES (a date stays
text).
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse

from tfrecord_pipelines.components.data_source.column_types import ColumnType

_KEY_LEVEL = re.compile(r"([^=*?\[\]/{}]+)=\*")
_NULL = "__HIVE_DEFAULT_PARTITION__"
_INT32 = (-(2**31), 2**31 - 1)


def keys_of(pattern: str) -> dict[int, str]:
    """The Hive keys of a glob relative to the input base, by folder level: ``{1: "region"}``
    for ``day-{SPAN}/region=*/*.csv`` (a span's own folder is the span, not a key)."""
    levels = pattern.split("/")[:-1]
    return {i: m.group(1) for i, level in enumerate(levels) if (m := _KEY_LEVEL.fullmatch(level))}


def values_of(input_base: str, pattern: str, path: str) -> dict[str, str | None]:
    """A file's partition values by key (None: missing), from its folders below ``input_base``."""
    relative = path[len(input_base.rstrip("/")) + 1 :].split("/")
    found = {}
    for level, key in keys_of(pattern).items():
        name, _, value = relative[level].partition("=")
        if name != key:
            raise ValueError(f"{path}: folder {relative[level]!r} should be {key}=<value>.")
        value = urllib.parse.unquote(value)
        found[key] = None if value == _NULL else value
    return found


def _is_int32(value: str) -> bool:
    try:
        number = int(value, 10)
    except ValueError:
        return False
    return _INT32[0] <= number <= _INT32[1]


@dataclasses.dataclass(frozen=True)
class Partitioning:
    """The Hive keys of an input and each one's type (``discover``)."""

    types: dict[str, ColumnType] = dataclasses.field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.types)


def discover(input_base: str, pattern: str, files: list[str]) -> Partitioning:
    """Types each Hive key of ``pattern`` from its values in ``files``."""
    keys = keys_of(pattern).values()
    if not keys:
        return Partitioning()
    values: dict[str, set[str]] = {key: set() for key in keys}
    for path in files:
        for key, value in values_of(input_base, pattern, path).items():
            if value is not None:
                values[key].add(value)
    return Partitioning(
        {
            key: ColumnType.INT if found and all(map(_is_int32, found)) else ColumnType.BYTES
            for key, found in values.items()
        }
    )


def check_no_clash(partitioning: Partitioning, columns, where: str) -> None:
    """Raises ValueError if a Hive key is also a column of the files (which would it be?)."""
    clash = [key for key in partitioning.types if key in columns]
    if clash:
        raise ValueError(
            f"{where}: {', '.join(clash)} is both a Hive partition key and a column of the "
            "files; rename one of them."
        )
