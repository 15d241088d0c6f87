"""Convolutional networks that turn a batch of uint8 images into feature vectors.

All are trained from scratch: no weights are downloaded at run time.

- ``resnet``: a small residual network (a 3x3 stem, then three stages of
  one residual block each, 32/64/128 filters, the last two halving the
  resolution; 0.3 M parameters). Fast enough to train on a CPU for small
  images; batch norm with momentum 0.9, so its moving statistics settle
  within a few hundred steps.
- ``mobilenet_v2``, ``efficientnet_b0``: the Keras applications, for larger
  images on GPUs (2.3 M and 4.0 M parameters without their top).
"""

from __future__ import annotations

import tensorflow as tf

_RESNET_STAGES = ((32, 1), (64, 2), (128, 2))  # (filters, stride)
_BATCH_NORM_MOMENTUM = 0.9


def _conv_bn(x: tf.Tensor, filters: int, kernel: int, stride: int, relu: bool) -> tf.Tensor:
    x = tf.keras.layers.Conv2D(filters, kernel, stride, padding="same", use_bias=False)(x)
    x = tf.keras.layers.BatchNormalization(momentum=_BATCH_NORM_MOMENTUM)(x)
    return tf.keras.layers.ReLU()(x) if relu else x


def _residual_block(x: tf.Tensor, filters: int, stride: int) -> tf.Tensor:
    shortcut = x
    x = _conv_bn(x, filters, 3, stride, relu=True)
    x = _conv_bn(x, filters, 3, 1, relu=False)
    if stride != 1 or shortcut.shape[-1] != filters:
        shortcut = _conv_bn(shortcut, filters, 1, stride, relu=False)
    return tf.keras.layers.ReLU()(tf.keras.layers.add([x, shortcut]))


def _small_resnet(x: tf.Tensor) -> tf.Tensor:
    x = _conv_bn(x, _RESNET_STAGES[0][0], 3, 1, relu=True)
    for filters, stride in _RESNET_STAGES:
        x = _residual_block(x, filters, stride)
    return tf.keras.layers.GlobalAveragePooling2D()(x)


def image_features(pixels: tf.Tensor, architecture: str) -> tf.Tensor:
    """Returns a [batch, features] tensor computed from uint8 images.

    Args:
      pixels: a Keras input of uint8 images, [batch, size, size, channels].
      architecture: ``resnet``, ``mobilenet_v2`` or ``efficientnet_b0``.

    Raises:
      ValueError: on an unknown architecture.
    """
    shape = tuple(pixels.shape[1:])
    if architecture == "efficientnet_b0":
        # Rescales and normalizes 0..255 inputs itself.
        x = tf.keras.layers.Rescaling(1.0)(pixels)
        network = tf.keras.applications.EfficientNetB0(
            include_top=False, weights=None, input_shape=shape, pooling="avg"
        )
        return network(x)
    # The compute dtype follows the mixed-precision policy from here on.
    x = tf.keras.layers.Rescaling(1 / 127.5, offset=-1.0)(pixels)
    if architecture == "resnet":
        return _small_resnet(x)
    if architecture == "mobilenet_v2":
        network = tf.keras.applications.MobileNetV2(
            include_top=False, weights=None, input_shape=shape, pooling="avg"
        )
        return network(x)
    raise ValueError(f"Unknown image architecture {architecture!r}.")
