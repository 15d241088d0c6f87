"""What a sample of training records says about their images: typical size, bytes per record.

The Trainer reads it before training to choose the model's image size when
none is given, and to decide whether decoded images fit in a memory cache.
Sizes come from the encoded headers where TensorFlow can read them without
decoding (JPEG), else from a decode.
"""

from __future__ import annotations

import dataclasses
import statistics

import tensorflow as tf

from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.components.trainer.dataset import infer_compression, list_files

SAMPLE_RECORDS = 256
# Length and CRCs around each record in a TFRecord file.
_FRAMING_BYTES = 16
MIN_AUTO_SIZE = 32
MAX_AUTO_SIZE = 224


@dataclasses.dataclass(frozen=True)
class ImageSample:
    """Figures from a sample of records.

    Attributes:
      median_side: the median of each image's shorter side, in pixels.
      mean_record_bytes: the mean size of a serialized record.
      file_bytes: the bytes of all the files the sample was drawn from.
    """

    median_side: int
    mean_record_bytes: float
    file_bytes: int

    @property
    def estimated_records(self) -> int:
        """How many records the files hold, estimated (exact when uncompressed)."""
        return round(self.file_bytes / (self.mean_record_bytes + _FRAMING_BYTES))

    @property
    def auto_size(self) -> int:
        """The model side for these images: the median side, a multiple of 8 in 32..224."""
        return max(MIN_AUTO_SIZE, min(MAX_AUTO_SIZE, 8 * round(self.median_side / 8)))


def _shape(encoded: tf.Tensor) -> tf.Tensor:
    if tf.io.is_jpeg(encoded):
        return tf.io.extract_jpeg_shape(encoded)[:2]
    return tf.shape(tf.io.decode_image(encoded, expand_animations=False))[:2]


def sample_images(file_pattern, feature: str, num_records: int = SAMPLE_RECORDS) -> ImageSample:
    """Reads the first ``num_records`` records, spread over the shards, and measures them.

    Args:
      file_pattern: the shards (a glob pattern or a list of them).
      feature: the feature holding encoded images.
      num_records: records to sample.

    Raises:
      ValueError: if no file matches or a sampled record has no image.
    """
    files = list_files(file_pattern)
    compression = infer_compression(files)
    per_file = max(1, num_records // len(files))
    records = tf.data.Dataset.from_tensor_slices(files).interleave(
        lambda path: tf.data.TFRecordDataset(path, compression_type=compression).take(per_file),
        cycle_length=min(len(files), 16),
    )
    sides, sizes = [], []
    spec = {feature: tf.io.FixedLenFeature([], tf.string)}
    for record in records.take(num_records):
        sizes.append(len(record.numpy()))
        encoded = tf.io.parse_single_example(record, spec)[feature]
        sides.append(int(tf.reduce_min(_shape(encoded))))
    if not sides:
        raise ValueError(f"No records to sample in {file_pattern}.")
    return ImageSample(
        median_side=int(statistics.median(sides)),
        mean_record_bytes=statistics.fmean(sizes),
        file_bytes=sum(filesystem.size(f) for f in files),
    )
