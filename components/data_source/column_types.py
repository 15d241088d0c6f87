"""The tf.Example type a column's values are stored as, known before any slow import."""

from __future__ import annotations

import enum


class ColumnType(enum.Enum):
    """The tf.Example type a column's values are stored as."""

    INT = "int"
    FLOAT = "float"
    BYTES = "bytes"
