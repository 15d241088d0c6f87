"""Encoded image bytes → uint8 pixels of one size: the same code for training and serving.

An image is decoded (JPEG, PNG, GIF, BMP; grayscale, RGB, RGBA or CMYK, 8
or 16 bits; always to ``channels`` channels of uint8), then resized to
``decoded_side``, a little larger than the model's ``size`` when random
crops are asked for. Training then takes a random ``size`` crop (and a random
left-right flip, if asked); evaluation and serving take the central crop, so
objects have the same scale in both.

Pixels stay uint8 until the model: a quarter of float32's bytes in caches,
buffers and the host-to-GPU copy.
"""

from __future__ import annotations

import dataclasses
import math

import tensorflow as tf

from tfrecord_pipelines.components.trainer.options import CROP, FLIP, check_image_settings

# Decoded side / model side when training takes random crops: up to 1/9 of
# the side is cropped away, on each axis.
CROP_MARGIN = 1.125
MIN_SIZE = 8


@dataclasses.dataclass(frozen=True)
class ImageDecoding:
    """How ``make_dataset`` and the serving signature decode one image feature.

    Attributes:
      feature: the feature holding encoded images (one per example).
      size: the model's input side, in pixels (images are square).
      channels: 3 (RGB; grayscale is repeated, alpha dropped) or 1 (grayscale).
      augment: what training adds: ``crop`` (a random crop from a slightly
        larger resize: shifts and zooms by up to 1/9) and/or ``flip`` (left-
        right mirror: only for data without a handedness, so not text or
        digits). Evaluation and serving never augment.
    """

    feature: str
    size: int
    channels: int = 3
    augment: tuple[str, ...] = (CROP,)

    def __post_init__(self):
        object.__setattr__(self, "augment", tuple(self.augment))
        if not self.feature:
            raise ValueError("ImageDecoding.feature must name the image feature.")
        if self.size < MIN_SIZE:
            raise ValueError(f"Image size must be at least {MIN_SIZE} pixels, got {self.size}.")
        check_image_settings(self.channels, self.augment)

    @property
    def decoded_side(self) -> int:
        """The side images are resized to before cropping."""
        return math.ceil(self.size * CROP_MARGIN) if CROP in self.augment else self.size

    @property
    def decoded_bytes(self) -> int:
        """Bytes of one decoded image, as a cache holds it."""
        return self.decoded_side**2 * self.channels

    def decode(self, encoded: tf.Tensor) -> tf.Tensor:
        """Decodes one encoded image and resizes it: uint8 [side, side, channels].

        Raises (when run):
          tf.errors.InvalidArgumentError: if the bytes are not an image.
        """
        # Always to RGB first: every format the decoder reads converts to 3
        # channels (CMYK JPEGs do not convert to 1).
        image = tf.io.decode_image(tf.reshape(encoded, []), channels=3, expand_animations=False)
        image.set_shape([None, None, 3])
        if self.channels == 1:
            image = tf.image.rgb_to_grayscale(image)
        side = self.decoded_side
        resized = tf.image.resize(image, [side, side], antialias=True)
        return tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8)

    def finish(self, images: tf.Tensor, training: bool) -> tf.Tensor:
        """Crops a batch of decoded images to the model's size; augments them when training.

        Vectorized over the batch: each image gets its own random crop and flip.

        Args:
          images: uint8 [batch, decoded_side, decoded_side, channels], from ``decode``.
          training: random crops and flips (as asked); else the central crop.
        """
        side, size = self.decoded_side, self.size
        if training and CROP in self.augment:
            count = tf.shape(images)[0]
            offsets = tf.random.uniform([count, 2], 0, side - size + 1, dtype=tf.int32)
            window = tf.range(size)
            rows = offsets[:, :1] + window
            columns = offsets[:, 1:] + window
            images = tf.gather(images, rows, axis=1, batch_dims=1)
            images = tf.gather(images, columns, axis=2, batch_dims=1)
        elif side != size:
            offset = (side - size) // 2
            images = images[:, offset : offset + size, offset : offset + size, :]
        if training and FLIP in self.augment:
            images = tf.image.random_flip_left_right(images)
        return tf.ensure_shape(images, [None, size, size, self.channels])

    def decode_batch(self, encoded: tf.Tensor) -> tf.Tensor:
        """Decodes a batch of encoded images as evaluation does: uint8 [batch, size, size, c].

        The serving signature's decoder; an element that is not an image is
        an error for the whole call.
        """
        encoded = tf.reshape(encoded, [-1])
        side = self.decoded_side
        decoded = tf.map_fn(
            self.decode,
            encoded,
            fn_output_signature=tf.TensorSpec([side, side, self.channels], tf.uint8),
        )
        return self.finish(decoded, training=False)
