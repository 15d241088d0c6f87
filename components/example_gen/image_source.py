"""Image folders → serialized tf.Examples holding the original encoded bytes.

The layouts and the record's features are described in
``components.image_folder``. Each example holds the file's bytes unchanged,
so one sequential read gives a training step everything. Files that
TensorFlow's image decoder (the one the Trainer decodes with) cannot read are
quarantined with the decoder's reason.
"""

from __future__ import annotations

import os
import re
import zlib

import apache_beam as beam
import tensorflow as tf

from components.example_gen.features import ColumnType, feature, serialize
from components.example_gen.quarantine import QUARANTINE_TAG, QuarantineRecord
from components.image_folder import (
    CHANNELS_KEY,
    CLASS_NAME_KEY,
    FILENAME_KEY,
    HEIGHT_KEY,
    IMAGE_KEY,
    WIDTH_KEY,
    LabelledFile,
)

# TensorFlow prefixes op errors with the function they ran in.
_OP_PREFIX = re.compile(r"^\{\{[^}]*\}\}\s*")


def decode_error(error: Exception) -> str:
    """Returns the first line of a decoder's error, without TensorFlow's op prefix."""
    message = getattr(error, "message", None) or str(error)
    return _OP_PREFIX.sub("", message.splitlines()[0] if message else type(error).__name__)[:200]


class _ImageToExample(beam.DoFn):
    def __init__(self, label_key: str):
        self._label_key = label_key

    def process(self, item: LabelledFile):
        try:
            with tf.io.gfile.GFile(item.path, "rb") as f:
                encoded = f.read()
        except (tf.errors.NotFoundError, OSError) as e:
            yield self._bad(item, f"unreadable file: {e}")
            return
        try:
            shape = tf.io.decode_image(encoded, expand_animations=False).shape
        except (tf.errors.InvalidArgumentError, ValueError) as e:
            yield self._bad(item, f"not an image: {decode_error(e)}")
            return
        height, width, channels = (int(d) for d in shape)
        yield serialize(
            {
                IMAGE_KEY: feature(ColumnType.BYTES, [encoded]),
                self._label_key: feature(ColumnType.INT, [item.label]),
                CLASS_NAME_KEY: feature(ColumnType.BYTES, [item.class_name]),
                HEIGHT_KEY: feature(ColumnType.INT, [height]),
                WIDTH_KEY: feature(ColumnType.INT, [width]),
                CHANNELS_KEY: feature(ColumnType.INT, [channels]),
                FILENAME_KEY: feature(ColumnType.BYTES, [os.path.basename(item.path)]),
            }
        )

    @staticmethod
    def _bad(item: LabelledFile, reason: str):
        return beam.pvalue.TaggedOutput(
            QUARANTINE_TAG, QuarantineRecord(item.path, os.path.basename(item.path), reason)
        )


@beam.ptransform_fn
def ImagesToExamples(pipeline: beam.Pipeline, files: list[LabelledFile], label_key: str):  # noqa: N802
    """Reads image files; returns a DoOutputsTuple (main: serialized examples, quarantine).

    Files are taken in the order of a hash of their path, not class by class:
    shards then mix the classes, which readers' shuffle buffers, a window of
    a few batches, cannot do for shards sorted by class.
    """
    mixed = sorted(files, key=lambda f: (zlib.crc32(f.path.encode()), f.path))
    return (
        pipeline
        | "ListFiles" >> beam.Create(mixed)
        | "Distribute" >> beam.Reshuffle()
        | "ReadImages"
        >> beam.ParDo(_ImageToExample(label_key)).with_outputs(QUARANTINE_TAG, main="examples")
    )
