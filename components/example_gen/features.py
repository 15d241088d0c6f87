"""Building tf.train.Example features from Python values.

TensorFlow is imported where a feature is built: the command line types a
column (``ColumnType``) before any slow import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfrecord_pipelines.components.data_source.column_types import ColumnType

if TYPE_CHECKING:
    import tensorflow as tf


def feature(column_type: ColumnType, values: list) -> tf.train.Feature:
    """Returns a Feature holding ``values`` as ``column_type``."""
    import tensorflow as tf

    if column_type is ColumnType.INT:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    if column_type is ColumnType.FLOAT:
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(
        bytes_list=tf.train.BytesList(
            value=[v if isinstance(v, bytes) else str(v).encode() for v in values]
        )
    )


def serialize(features: dict[str, tf.train.Feature]) -> bytes:
    """Serializes a feature dict as a tf.train.Example, the same bytes in every run.

    The split is a hash of these bytes, so map order must not vary between processes.
    """
    import tensorflow as tf

    example = tf.train.Example(features=tf.train.Features(feature=features))
    return example.SerializeToString(deterministic=True)
