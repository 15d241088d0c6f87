"""Image folders → serialized tf.Examples holding the original encoded bytes.

The layouts and the record's features are described in
``tfrecord_pipelines.components.data_source.image_folder``. Each example holds
the file's bytes unchanged, so one sequential read gives a training step everything. Every image
is decoded completely before it is written (``image_shapes``): one that
TensorFlow's image decoder (the one the Trainer decodes with) rejects, damage
in the middle of a JPEG's compressed data included, is quarantined with the
decoder's reason instead of stopping training.
"""

from __future__ import annotations

import collections
import concurrent.futures
import os
import re
import zlib
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import tensorflow as tf

from tfrecord_pipelines.components.data_source.column_types import ColumnType
from tfrecord_pipelines.components.data_source.image_folder import (
    CHANNELS_KEY,
    CLASS_NAME_KEY,
    FILENAME_KEY,
    HEIGHT_KEY,
    IMAGE_KEY,
    WIDTH_KEY,
    LabelledFile,
)
from tfrecord_pipelines.components.example_gen.quarantine import QuarantineRecord
from tfrecord_pipelines.components.example_gen.record_encoding import (
    FEATURE_TYPES,
    ExampleEncoder,
)
from tfrecord_pipelines.components.example_gen.split_assignment import (
    SplitAssigner,
    SplitRecords,
)
from tfrecord_pipelines.components.storage import filesystem

_JPEG_START = b"\xff\xd8\xff"
# TensorFlow wraps op errors in the function they ran in and the op's name.
_OP_PREFIX = re.compile(r"^\{\{[^}]*\}\}\s*")
_OP_SUFFIX = re.compile(r"\s*\[Op:\w+\]$")
# libjpeg's smallest scale: every block is still entropy-decoded, so whatever
# stops a full decode stops this one, but only one value per 8x8 block is
# transformed (0.54 ms against 0.81 ms per 256-640 px photo).
_JPEG_CHECK_RATIO = 8
# Images read and checked at a time: one tf.data call's worth (its cost per
# call vanishes at this size) and, two batches in flight, what a worker holds.
CHECK_BATCH = 256
# Batches read and checked at once, ahead of the one becoming records.
_IN_FLIGHT = 2
# Appended to every batch's results so that a batch of only bad images still
# gives a (non-empty) batch to read.
# (A list, not a tensor: a tensor made at import would start TensorFlow's
# runtime in Spark's worker daemon, whose forked workers would lack its threads.)
_NO_IMAGE = ([-1], [[0, 0, 0]])


def decode_error(error: Exception) -> str:
    """Returns the first line of a decoder's error, without TensorFlow's op prefix."""
    message = getattr(error, "message", None) or str(error)
    first_line = message.splitlines()[0] if message else type(error).__name__
    return _OP_SUFFIX.sub("", _OP_PREFIX.sub("", first_line))[:200]


def _checked_shape(index: tf.Tensor, encoded: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """(index, [height, width, channels]) of an image decoded completely, or an error."""

    def jpeg():
        scaled = tf.io.decode_jpeg(encoded, ratio=_JPEG_CHECK_RATIO)
        return tf.concat([tf.image.extract_jpeg_shape(encoded)[:2], tf.shape(scaled)[2:]], 0)

    def other():  # PNG, GIF, BMP: their decoders have no cheaper mode that reads everything
        return tf.shape(tf.io.decode_image(encoded, expand_animations=False))

    is_jpeg = tf.strings.substr(encoded, 0, len(_JPEG_START)) == _JPEG_START
    return index, tf.cond(is_jpeg, jpeg, other)


@tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
def _check_batch(images: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """The indices and shapes of the images that decode; the others are left out.

    A tf.data map decodes them on every core, outside Python, and drops the
    ones whose decoder fails.
    """
    checked = (
        tf.data.Dataset.from_tensor_slices((tf.range(tf.size(images)), images))
        .map(_checked_shape, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
        .ignore_errors()
        .concatenate(tf.data.Dataset.from_tensor_slices(_NO_IMAGE))
    )
    return checked.batch(tf.size(images, out_type=tf.int64) + 1).get_single_element()


def _full_decode_shape(encoded: bytes) -> tuple[int, int, int] | Exception:
    """The shape of the Trainer's decode of an image, or the decoder's error."""
    try:
        return tuple(int(d) for d in tf.io.decode_image(encoded, expand_animations=False).shape)
    except (tf.errors.InvalidArgumentError, ValueError) as e:
        return e


def image_shapes(images: list[bytes]) -> list[tuple[int, int, int] | Exception]:
    """Returns each image's (height, width, channels) as the Trainer's decoder gives them.

    Every image is decoded completely, the whole compressed stream read, so
    that any image that would stop the Trainer's decoder is found here: a
    JPEG at libjpeg's 1/8 scale (its size from its header), other formats by
    TensorFlow's decoder. An image that fails is decoded once more in full,
    as the Trainer would, for its error (and kept, should that decode pass).
    """
    if not images:
        return []
    indices, shapes = _check_batch(tf.constant(images))
    decoded = dict(zip(indices.numpy().tolist(), map(tuple, shapes.numpy().tolist()), strict=True))
    return [
        decoded[i] if i in decoded else _full_decode_shape(encoded)
        for i, encoded in enumerate(images)
    ]


class ImageConverter:
    """Converts batches of image files into ``SplitRecords`` and QuarantineRecords.

    Engine-neutral, as ``csv_source.BlockConverter``: ``setup`` once, then
    ``convert`` per batch of files (a Beam element, a Spark task's files).
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
        """Builds the encoder (not picklable, so made where it runs)."""
        self._encoder = ExampleEncoder()

    def convert(self, items: list[LabelledFile]) -> Iterator[SplitRecords | QuarantineRecord]:
        """Yields the files' records by split, and their bad files."""
        queue = self.queue()
        queue.add(items)
        yield from queue.drain()

    def queue(self) -> ConversionQueue:
        """Returns a queue that converts files added over time (a Beam bundle's elements)."""
        return ConversionQueue(self._records)

    def _records(
        self,
        items: list[LabelledFile],
        contents: list[bytes],
        shapes: list[tuple[int, int, int] | Exception],
        unreadable_files: list[QuarantineRecord],
    ) -> Iterator[SplitRecords | QuarantineRecord]:
        yield from unreadable_files
        rows = []
        for item, encoded, shape in zip(items, contents, shapes, strict=True):
            if isinstance(shape, Exception):
                yield _bad(item, f"not an image: {decode_error(shape)}")
                continue
            rows.append(
                (encoded, item.label, item.class_name.encode(), *shape,
                 os.path.basename(item.path).encode())
            )  # fmt: skip
        columns = self._columns(rows)
        yield from self._assigner.assign(self._encoder.encode(columns), columns=columns)

    def _columns(self, rows: list[tuple]) -> pa.RecordBatch:
        """The records' features as list columns of one value each, for statistics."""
        offsets = pa.array(np.arange(len(rows) + 1, dtype=np.int64))
        columns = zip(*rows, strict=True) if rows else ([] for _ in self._types)
        arrays = [
            pa.LargeListArray.from_arrays(offsets, pa.array(column, FEATURE_TYPES[kind].value_type))
            for kind, column in zip(self._types.values(), columns, strict=True)
        ]
        return pa.RecordBatch.from_arrays(arrays, names=list(self._types))


class ConversionQueue:
    """Files waiting to become records: read and checked ahead on threads, converted in order.

    CHECK_BATCH files at a time are read and checked on a thread while the
    main thread turns an earlier batch into records: reading and the check
    in TensorFlow run outside Python's lock, so they and the Python work use
    both cores. _IN_FLIGHT batches are read and checked at once, so that
    while one waits for the last of its images the other keeps a core busy,
    and the queue runs on across ``add`` calls: a Beam bundle's elements
    keep both cores busy from the first to the last, not each element alone.
    """

    def __init__(self, to_records):
        self._to_records = to_records
        self._reader = concurrent.futures.ThreadPoolExecutor(max_workers=_IN_FLIGHT)
        self._waiting: collections.deque[list[LabelledFile]] = collections.deque()
        self._checking: collections.deque[concurrent.futures.Future] = collections.deque()

    def add(self, items: list[LabelledFile]) -> None:
        """Queues files for conversion."""
        for start in range(0, len(items), CHECK_BATCH):
            self._waiting.append(items[start : start + CHECK_BATCH])

    def ready(self) -> Iterator[SplitRecords | QuarantineRecord]:
        """Yields the outputs of all queued files but the last _IN_FLIGHT batches."""
        while len(self._waiting) + len(self._checking) > _IN_FLIGHT:
            yield from self._next()
        self._start_checks()

    def drain(self) -> Iterator[SplitRecords | QuarantineRecord]:
        """Yields the outputs of every queued file, then stops the reading threads."""
        try:
            while self._waiting or self._checking:
                yield from self._next()
        finally:
            self.close()

    def close(self) -> None:
        """Drops what is queued and stops the reading threads."""
        self._waiting.clear()
        self._checking.clear()
        self._reader.shutdown(cancel_futures=True)

    def _start_checks(self) -> None:
        while self._waiting and len(self._checking) < _IN_FLIGHT:
            self._checking.append(self._reader.submit(_read_and_check, self._waiting.popleft()))

    def _next(self) -> Iterator[SplitRecords | QuarantineRecord]:
        self._start_checks()
        checked = self._checking.popleft()
        self._start_checks()
        yield from self._to_records(*checked.result())


def _read_and_check(
    items: list[LabelledFile],
) -> tuple[list[LabelledFile], list[bytes], list, list[QuarantineRecord]]:
    """Reads the files and checks their images: (readable, contents, shapes, unreadable)."""
    readable, contents, unreadable_files = [], [], []
    for item in items:
        try:
            with filesystem.open_binary(item.path) as f:
                contents.append(f.read())
            readable.append(item)
        except (tf.errors.NotFoundError, OSError) as e:
            unreadable_files.append(unreadable(item, e))
    return readable, contents, image_shapes(contents), unreadable_files


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
