"""Arrow columns → serialized tf.Examples, a whole batch at a time.

The feature columns ``as_feature_column`` makes are encoded column by column
by ``example_wire``, in the bytes of protobuf's deterministic mode, so a
re-run writes byte-identical shards. A null (missing value) becomes an absent
feature, not an empty one, as TFX's own readers and writers treat it; a
null inside a list never reaches the encoder (the sources quarantine it).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tfrecord_pipelines.components.data_source.column_types import ColumnType
from tfrecord_pipelines.components.example_gen import example_wire

FEATURE_TYPES = {
    ColumnType.INT: pa.large_list(pa.int64()),
    ColumnType.FLOAT: pa.large_list(pa.float32()),
    ColumnType.BYTES: pa.large_list(pa.large_binary()),
}
_VALUE_TYPES = {
    column_type: list_type.value_type for column_type, list_type in FEATURE_TYPES.items()
}


def as_feature_column(array: pa.Array, column_type: ColumnType) -> pa.LargeListArray:
    """Returns ``array`` as the list column the encoder takes: a null is a missing feature.

    Scalar columns become lists of one value; list columns are cast. Values
    are cast to int64, float32 or binary.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    value_type = _VALUE_TYPES[column_type]
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        return array.cast(FEATURE_TYPES[column_type])
    if pa.types.is_boolean(array.type):
        array = array.cast(pa.int64())
    values = array.drop_null().cast(value_type)
    valid = np.asarray(array.is_valid(), dtype=bool)
    offsets = np.zeros(len(array) + 1, dtype=np.int64)
    np.cumsum(valid, out=offsets[1:])
    mask = None if valid.all() else pa.array(~valid)
    return pa.LargeListArray.from_arrays(pa.array(offsets), values, mask=mask)


def first_values_as_text(column: pa.LargeListArray) -> np.ndarray:
    """Returns each row's first value as text (an object array), for hashing a key column."""
    return np.asarray(pc.list_element(column, 0).cast(pa.large_string()).to_pylist(), dtype=object)


class ExampleEncoder:
    """Encodes RecordBatches of feature columns into canonical serialized tf.Examples."""

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        """Returns one serialized tf.Example per row, the same bytes in every process."""
        problem = example_wire.unencodable(batch)
        if problem:
            raise ValueError(f"cannot encode the batch's feature columns: {problem}")
        return example_wire.encode_examples(batch).to_pylist()
