"""Image folders → serialized tf.Examples holding the original encoded bytes.

The layouts and the record's features are described in
``tfrecord_pipelines.components.image_folder``. Each example holds the file's bytes unchanged,
so one sequential read gives a training step everything. Files that
TensorFlow's image decoder (the one the Trainer decodes with) cannot read are
quarantined with the decoder's reason; complete JPEGs are measured from their
header (see ``image_shape``), so damage inside a JPEG's compressed data that
leaves its header and end marker intact is found only when it is decoded.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator

import pyarrow as pa
import tensorflow as tf

from tfrecord_pipelines.components import filesystem
from tfrecord_pipelines.components.example_gen.features import ColumnType, feature, serialize
from tfrecord_pipelines.components.example_gen.quarantine import QuarantineRecord
from tfrecord_pipelines.components.example_gen.record_encoding import FEATURE_TYPES
from tfrecord_pipelines.components.example_gen.split_assignment import (
    SplitAssigner,
    SplitRecords,
)
from tfrecord_pipelines.components.image_folder import (
    CHANNELS_KEY,
    CLASS_NAME_KEY,
    FILENAME_KEY,
    HEIGHT_KEY,
    IMAGE_KEY,
    WIDTH_KEY,
    LabelledFile,
)

_JPEG_START = b"\xff\xd8\xff"
_JPEG_END = b"\xff\xd9"
# TensorFlow prefixes op errors with the function they ran in.
_OP_PREFIX = re.compile(r"^\{\{[^}]*\}\}\s*")


def decode_error(error: Exception) -> str:
    """Returns the first line of a decoder's error, without TensorFlow's op prefix."""
    message = getattr(error, "message", None) or str(error)
    return _OP_PREFIX.sub("", message.splitlines()[0] if message else type(error).__name__)[:200]


def image_shape(encoded: bytes) -> tuple[int, int, int]:
    """Returns (height, width, channels) as the Trainer's decoder will produce them.

    A complete JPEG (its end-of-image marker last) with one or three channels
    is measured from its header alone, a small fraction of a decode; other
    images, and JPEGs without that marker (truncated ones), are decoded, so
    that what the decoder rejects is quarantined here, not met in training.

    Raises:
      tf.errors.InvalidArgumentError: if TensorFlow cannot read the image.
    """
    if encoded.startswith(_JPEG_START) and encoded.endswith(_JPEG_END):
        height, width, channels = tf.image.extract_jpeg_shape(encoded).numpy().tolist()
        if channels in (1, 3):  # CMYK's four decode to RGB's three
            return height, width, channels
    return tuple(int(d) for d in tf.io.decode_image(encoded, expand_animations=False).shape)


@tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
def _jpeg_header_shapes(encoded: tf.Tensor) -> tf.Tensor:
    return tf.map_fn(tf.image.extract_jpeg_shape, encoded, fn_output_signature=tf.int32)


def image_shapes(images: list[bytes]) -> list[tuple[int, int, int] | Exception]:
    """Returns ``image_shape`` of each image, or the error that says why it is none.

    Complete JPEGs are measured together, in one call to TensorFlow (one call
    per image costs more in dispatch than the header parse itself).
    """
    shapes: list = [None] * len(images)
    jpegs = [i for i, e in enumerate(images) if e.startswith(_JPEG_START) and e.endswith(_JPEG_END)]
    if jpegs:
        try:
            found = _jpeg_header_shapes(tf.constant([images[i] for i in jpegs])).numpy().tolist()
        except tf.errors.InvalidArgumentError:
            found = [None] * len(jpegs)  # a bad header among them: each is measured alone
        for index, shape in zip(jpegs, found, strict=True):
            if shape and shape[2] in (1, 3):
                shapes[index] = tuple(shape)
    for index, shape in enumerate(shapes):
        if shape is None:
            try:
                shapes[index] = image_shape(images[index])
            except (tf.errors.InvalidArgumentError, ValueError) as e:
                shapes[index] = e
    return shapes


class ImageConverter:
    """Converts batches of image files into ``SplitRecords`` and QuarantineRecords.

    Engine-neutral, as ``csv_source.BlockConverter``: ``setup`` once, then
    ``convert`` per batch of files, or ``convert_read`` per batch of files
    whose bytes the engine has read (Spark's ``binaryFile`` source).
    """

    def __init__(self, label_key: str, assigner: SplitAssigner):
        self._label_key = label_key
        self._assigner = assigner
        self._types = {
            IMAGE_KEY: ColumnType.BYTES,
            label_key: ColumnType.INT,
            CLASS_NAME_KEY: ColumnType.BYTES,
            HEIGHT_KEY: ColumnType.INT,
            WIDTH_KEY: ColumnType.INT,
            CHANNELS_KEY: ColumnType.INT,
            FILENAME_KEY: ColumnType.BYTES,
        }

    def setup(self) -> None:
        """Nothing to build: TensorFlow's decoders need no state."""

    def convert(self, items: list[LabelledFile]) -> Iterator[SplitRecords | QuarantineRecord]:
        """Reads the files and yields their records by split and the bad files."""
        readable, contents = [], []
        for item in items:
            try:
                with filesystem.open_binary(item.path) as f:
                    contents.append(f.read())
                readable.append(item)
            except (tf.errors.NotFoundError, OSError) as e:
                yield unreadable(item, e)
        yield from self.convert_read(readable, contents)

    def convert_read(
        self, items: list[LabelledFile], contents: list[bytes]
    ) -> Iterator[SplitRecords | QuarantineRecord]:
        """Yields the records of files already read, by split, and the bad files."""
        rows = []
        for item, encoded, shape in zip(items, contents, image_shapes(contents), strict=True):
            if isinstance(shape, Exception):
                yield _bad(item, f"not an image: {decode_error(shape)}")
            else:
                height, width, channels = shape
                rows.append(
                    {
                        IMAGE_KEY: encoded,
                        self._label_key: item.label,
                        CLASS_NAME_KEY: item.class_name,
                        HEIGHT_KEY: height,
                        WIDTH_KEY: width,
                        CHANNELS_KEY: channels,
                        FILENAME_KEY: os.path.basename(item.path),
                    }
                )
        records = [
            serialize({name: feature(self._types[name], [value]) for name, value in row.items()})
            for row in rows
        ]
        yield from self._assigner.assign(records, columns=self._columns(rows))

    def _columns(self, rows: list[dict]) -> pa.RecordBatch:
        """The records' features as list columns of one value each, for statistics."""
        arrays = [
            pa.array(
                [[row[name].encode() if isinstance(row[name], str) else row[name]] for row in rows],
                FEATURE_TYPES[column_type],
            )
            for name, column_type in self._types.items()
        ]
        return pa.RecordBatch.from_arrays(arrays, names=list(self._types))


def _bad(item: LabelledFile, reason: str) -> QuarantineRecord:
    return QuarantineRecord(item.path, os.path.basename(item.path), reason)


def unreadable(item: LabelledFile, error: Exception | str) -> QuarantineRecord:
    """Returns the quarantine record of a file that could not be read."""
    return _bad(item, f"unreadable file: {error}")


def mixed_order(files: list[LabelledFile]) -> list[LabelledFile]:
    """Returns the files in the order of a hash of their path, not class by class.

    Shards then mix the classes, which readers' shuffle buffers, a window of
    a few batches, cannot do for shards sorted by class.
    """
    return sorted(files, key=lambda f: (zlib.crc32(f.path.encode()), f.path))
