"""Feature columns → tf.Example bytes in protobuf's deterministic form, column by column.

protobuf has no batch API: serializing tf.Examples one by one costs about
6.6 us a row of 16 features (tfx_bsl's encoder, whose feature order follows a
hash map's and changes between processes, then a parse and a deterministic
re-serialization for byte-identical re-runs). This module writes the same
bytes a column at a time: each column's map entry headers (key, Feature and
list framing) are varints computed with numpy (one constant where every
row's is the same), and one pyarrow join copies each row's headers and
values, columns in the order protobuf's deterministic mode writes map keys
in (``map_key_order``). The wire format is protobuf's documented encoding
of ``tensorflow/core/example/{example,feature}.proto``:

    Example  = 0x0A len Features
    Features = (0x0A len (0x0A len key  0x12 len Feature))*   one per feature
    Feature  = 0x0A len BytesList | 0x12 len FloatList | 0x1A len Int64List
    BytesList = (0x0A len bytes)*
    FloatList = 0x0A len float32*        (packed; absent when there are none)
    Int64List = 0x0A len varint*         (packed; absent when there are none)

A null row of a column is an absent feature; an empty list is a present,
empty one.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_BINARY = pa.large_binary()
_EMPTY = pa.scalar(b"", _BINARY)
_INT64, _FLOAT = pa.int64(), pa.float32()
# Feature's oneof field for each value type; a tag byte is field << 3 | 2 (length-delimited).
_KIND_TAG = {_BINARY: b"\x0a", _FLOAT: b"\x12", _INT64: b"\x1a"}
_FIELD_1, _FIELD_2 = b"\x0a", b"\x12"
_MAX_VARINT = 10


class _Part(NamedTuple):
    """A piece of a row's header: constant bytes, then a length as a varint (if any)."""

    prefix: bytes
    lengths: np.ndarray | None = None
    omit_empty: bool = False  # a row whose length is 0 writes nothing of this part


def unencodable(batch: pa.RecordBatch) -> str | None:
    """Why ``batch`` cannot be encoded, or None.

    Every column must be a large list of int64, float32 or large binary
    values, none of them null.
    """
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        if not pa.types.is_large_list(column.type) or column.type.value_type not in _KIND_TAG:
            return (
                f"column {name!r} is {column.type}, not a large list of int64, float32"
                " or large binary"
            )
        if _values(column)[0].null_count:
            return f"column {name!r} has a null value inside a list"
    return None


def encode_examples(batch: pa.RecordBatch) -> pa.LargeBinaryArray:
    """Returns each row's serialized tf.Example, the bytes of protobuf's deterministic mode.

    Raises nothing itself: check ``unencodable`` first.
    """
    rows = batch.num_rows
    if rows == 0:
        return pa.array([], _BINARY)
    names = batch.schema.names
    pieces, total = [], np.zeros(rows, dtype=np.int64)
    for i in sorted(range(batch.num_columns), key=lambda i: map_key_order(names[i])):
        column_pieces, lengths = _map_entries(names[i].encode(), batch.column(i))
        pieces += column_pieces
        total += lengths
    header = _header(rows, [_Part(_FIELD_1, total)])
    return pc.binary_join_element_wise(header, *pieces, _EMPTY)


def map_key_order(name: str) -> tuple[int, ...]:
    """Sort key of a feature name: the order protobuf (upb) writes map keys in, deterministically.

    upb compares the bytes a key shares with another; where one is a prefix
    of the other, the longer comes first ("aB" before "a"). The end marker 256
    sorts after every byte, which gives that order.
    """
    return (*name.encode(), 256)


def _map_entries(key: bytes, column: pa.LargeListArray) -> tuple[list, np.ndarray]:
    """One column's map entries as join pieces (header, values) and each row's entry length.

    A null row's entry is empty: the feature is absent.
    """
    rows = len(column)
    values, offsets = _values(column)
    counts = np.diff(offsets)
    value_type = column.type.value_type
    if value_type == _BINARY:
        body, body_lengths = _bytes_lists(values, offsets)
        list_parts, list_lengths = [], body_lengths
    else:
        if value_type == _FLOAT:
            body_lengths = counts * 4
            data = np.asarray(values).astype("<f4", copy=False).view(np.uint8)
        else:
            data, value_lengths = _varints(np.asarray(values).view(np.uint64))
            ends = np.zeros(len(values) + 1, dtype=np.int64)
            np.cumsum(value_lengths, out=ends[1:])
            body_lengths = np.diff(ends[offsets])
        body = _binary_from(data, body_lengths)
        list_parts = [_Part(_FIELD_1, body_lengths, omit_empty=True)]
        list_lengths = _framed(body_lengths, omit_empty=True)
    feature_lengths = _framed(list_lengths, omit_empty=False)
    key_part = _FIELD_1 + _varint_bytes(len(key)) + key + _FIELD_2
    entry_lengths = len(key_part) + _varint_lengths(feature_lengths) + feature_lengths
    valid = None
    if column.null_count:
        valid = np.asarray(column.is_valid())
        entry_lengths = np.where(valid, entry_lengths, 0)
        if counts[~valid].any():
            body = pc.if_else(pa.array(valid), body, _EMPTY)
    header = _header(
        rows,
        [
            _Part(_FIELD_1, entry_lengths),
            _Part(key_part, feature_lengths),
            _Part(_KIND_TAG[value_type], list_lengths),
            *list_parts,
        ],
        valid,
    )
    return [header, body], _framed(entry_lengths, omit_empty=True)


def _values(column: pa.LargeListArray) -> tuple[pa.Array, np.ndarray]:
    """The values ``column``'s rows hold (a slice's ``values`` are its parent's), and
    each row's offsets into them."""
    offsets = np.asarray(column.offsets)
    first = int(offsets[0])
    offsets = offsets - first
    return column.values.slice(first, int(offsets[-1])), offsets


def _bytes_lists(values: pa.Array, offsets: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """BytesList bodies: each value framed as field 1, a row's values back to back."""
    rows = len(offsets) - 1
    if len(values) == 0:
        nothing = np.zeros(rows, np.int64)
        return _binary_from(np.zeros(0, np.uint8), nothing), nothing
    value_lengths = np.asarray(pc.binary_length(values), dtype=np.int64)
    framed = pc.binary_join_element_wise(
        _header(len(values), [_Part(_FIELD_1, value_lengths)]), values, _EMPTY
    )
    _, framed_offsets, framed_data = framed.buffers()
    framed_offsets = np.frombuffer(framed_offsets, dtype=np.int64)[: len(values) + 1]
    row_offsets = np.ascontiguousarray(framed_offsets[offsets])
    body = pa.LargeBinaryArray.from_buffers(
        _BINARY, rows, [None, pa.py_buffer(row_offsets), framed_data]
    )
    return body, np.diff(row_offsets)


def _framed(lengths: np.ndarray, omit_empty: bool) -> np.ndarray:
    """Lengths of length-delimited fields around bodies of ``lengths``: tag, varint, body."""
    framed = 1 + _varint_lengths(lengths) + lengths
    return np.where(lengths > 0, framed, 0) if omit_empty else framed


def _header(rows: int, parts: list[_Part], valid: np.ndarray | None = None):
    """Each row's header bytes: the parts one after the other; nothing for a row not ``valid``.

    A scalar when every row's header is the same bytes (a column of one
    float a row, say), which the join repeats without a copy of its own.
    """
    if valid is None and all(
        p.lengths is None or p.lengths.min() == p.lengths.max() for p in parts
    ):
        constant = b"".join(
            b""
            if p.omit_empty and p.lengths is not None and p.lengths[0] == 0
            else p.prefix + (b"" if p.lengths is None else _varint_bytes(int(p.lengths[0])))
            for p in parts
        )
        return pa.scalar(constant, _BINARY)
    matrices, widths = [], []
    for part in parts:
        keep = valid
        if part.omit_empty and part.lengths is not None:
            keep = part.lengths > 0 if keep is None else keep & (part.lengths > 0)
        prefix = np.frombuffer(part.prefix, dtype=np.uint8)
        matrices.append(np.broadcast_to(prefix, (rows, len(prefix))))
        widths.append(None if keep is None else np.where(keep, len(prefix), 0))
        if part.lengths is not None:
            matrix, lengths = _varint_matrix(part.lengths)
            matrices.append(matrix)
            if keep is None and lengths.min() == matrix.shape[1]:
                widths.append(None)  # every row uses the whole matrix
            else:
                widths.append(lengths if keep is None else np.where(keep, lengths, 0))
    matrix = np.concatenate(matrices, axis=1)
    if all(w is None for w in widths):
        return _binary_from(matrix.reshape(-1), np.full(rows, matrix.shape[1], dtype=np.int64))
    used = np.concatenate(
        [
            np.ones(m.shape, dtype=bool) if w is None else np.arange(m.shape[1]) < w[:, None]
            for m, w in zip(matrices, widths, strict=True)
        ],
        axis=1,
    )
    return _binary_from(matrix[used], used.sum(axis=1))


def _varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unsigned 64-bit values as base-128 varints: (bytes back to back, each one's length)."""
    matrix, lengths = _varint_matrix(values)
    if len(values) == 0 or lengths.min() == matrix.shape[1]:
        return matrix.reshape(-1), lengths
    return matrix[np.arange(matrix.shape[1]) < lengths[:, None]], lengths


def _varint_matrix(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows × widest varint) bytes, left-aligned, and each value's varint length."""
    values = values.astype(np.uint64, copy=False)
    lengths = _varint_lengths(values)
    width = int(lengths.max()) if len(values) else 1
    if width == 1:
        return values.astype(np.uint8).reshape(-1, 1), lengths
    shifts = np.arange(width, dtype=np.uint64) * np.uint64(7)
    matrix = ((values[:, None] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
    matrix |= (np.arange(width) < (lengths - 1)[:, None]).astype(np.uint8) << 7
    return matrix, lengths


def _varint_lengths(values: np.ndarray) -> np.ndarray:
    """Each unsigned value's varint length in bytes (1 to 10)."""
    values = np.asarray(values).astype(np.uint64, copy=False)
    lengths = np.ones(values.shape, dtype=np.int64)
    top = values.max() if values.size else 0
    for k in range(1, _MAX_VARINT):
        threshold = np.uint64(1 << (7 * k))
        if top < threshold:
            break
        lengths += values >= threshold
    return lengths


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _binary_from(data: np.ndarray, lengths: np.ndarray) -> pa.Array:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = pa.py_buffer(np.ascontiguousarray(data))
    return pa.LargeBinaryArray.from_buffers(
        _BINARY, len(lengths), [None, pa.py_buffer(offsets), data]
    )
