"""The Keras model, built from the Transform output's feature spec.

Inputs are whatever Transform produced for the task's inputs: integer
features are vocabulary indices, one-hot to their bucket count (the first
layer looks a single index's row up: ``lookup_dense``; a bag of several
becomes a multi-hot vector); float features are already scaled and enter as
they are. An image input (uint8 pixels, decoded by the
input pipeline) goes through a convolutional network first
(``image_model``). No feature is named here.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf
import tensorflow_transform as tft

from tfrecord_pipelines.components.task import Task, transformed_name, vocabulary_name
from tfrecord_pipelines.components.trainer.image_decoding import ImageDecoding
from tfrecord_pipelines.components.trainer.image_model import image_features
from tfrecord_pipelines.components.trainer.input_stall import InputStallModel
from tfrecord_pipelines.components.trainer.lookup_dense import LookupDense

TABULAR_LEARNING_RATE = 1e-2
IMAGE_LEARNING_RATE = 1e-3


def input_feature_spec(tf_transform_output: tft.TFTransformOutput, task: Task) -> dict:
    """Returns the transformed feature spec of the model's inputs (the label removed)."""
    spec = dict(tf_transform_output.transformed_feature_spec())
    spec.pop(transformed_name(task.label), None)
    return spec


def num_classes(tf_transform_output: tft.TFTransformOutput, task: Task) -> int:
    """Returns how many classes the label vocabulary holds (classification only)."""
    return tf_transform_output.vocabulary_size_by_name(vocabulary_name(task.label))


def _tabular_input(
    name: str, feature, tf_transform_output: tft.TFTransformOutput
) -> tuple[tf.Tensor, tf.Tensor, int | None]:
    """Returns a feature's Keras input, what the first layer takes of it, and the one-hot
    width that stands for it (None: taken as numbers)."""
    if isinstance(feature, tf.io.VarLenFeature):
        layer_input = tf.keras.Input(shape=(None,), name=name, dtype=feature.dtype, sparse=True)
    else:
        layer_input = tf.keras.Input(shape=tuple(feature.shape), name=name, dtype=feature.dtype)
    if feature.dtype != tf.int64:
        return layer_input, layer_input, None
    buckets = tf_transform_output.num_buckets_for_transformed_feature(name)
    if not isinstance(feature, tf.io.VarLenFeature) and list(feature.shape) == [1]:
        # One index: the first layer looks its row up (``LookupDense``).
        return layer_input, layer_input, buckets
    encoding = tf.keras.layers.CategoryEncoding(num_tokens=buckets, output_mode="multi_hot")
    return layer_input, encoding(layer_input), None


def build_model(
    tf_transform_output: tft.TFTransformOutput,
    task: Task,
    *,
    image: ImageDecoding | None = None,
    image_architecture: str = "resnet",
    hidden_units: Sequence[int] = (64, 32),
    learning_rate: float | None = None,
    steps_per_call: int = 1,
) -> tf.keras.Model:
    """Builds and compiles a network for the task.

    Args:
      tf_transform_output: the Transform output; its schema gives the inputs.
      task: the label and problem kind; sets the output layer and the loss.
      image: for image tasks, how the input pipeline decodes the image
        feature (its size and channels shape the image input).
      image_architecture: the convolutional network (see ``image_model``).
      hidden_units: widths of the hidden Dense layers of tabular models.
      learning_rate: Adam's learning rate; None: 1e-2 tabular, 1e-3 images.
      steps_per_call: steps ``fit`` and ``evaluate`` run in each call
        (Keras' ``steps_per_execution``; ``TrainingOptions.steps_per_call``).

    Returns:
      A compiled Keras model taking a dict of transformed features, which
      reports its input stall (``InputStallModel``). Its output layer computes
      in float32 under a mixed-precision policy too.
    """
    inputs, taken, widths = {}, [], []
    for name, feature in sorted(input_feature_spec(tf_transform_output, task).items()):
        if image is not None and name == image.feature:
            pixels = tf.keras.Input(
                shape=(image.size, image.size, image.channels), name=name, dtype=tf.uint8
            )
            inputs[name] = pixels
            taken.append(image_features(pixels, image_architecture))
            widths.append(None)
            continue
        inputs[name], part, width = _tabular_input(name, feature, tf_transform_output)
        taken.append(part)
        widths.append(width)
    if learning_rate is None:
        learning_rate = IMAGE_LEARNING_RATE if image is not None else TABULAR_LEARNING_RATE

    # (units, activation, dtype) of each Dense layer; the output computes in float32
    # under a mixed-precision policy too.
    if task.is_classification:
        output = (num_classes(tf_transform_output, task), "softmax", "float32")
        loss = tf.keras.losses.SparseCategoricalCrossentropy()
        metrics = [tf.keras.metrics.SparseCategoricalAccuracy()]
    else:
        output = (1, None, "float32")
        loss = tf.keras.losses.MeanSquaredError()
        metrics = [tf.keras.metrics.MeanAbsoluteError()]
    layers = [(units, "relu", None) for units in (hidden_units if image is None else ())]
    (units, activation, dtype), *rest = [*layers, output]
    # The first layer over the inputs: a Dense layer over their concatenation, each
    # category's one-hot vector looked up rather than multiplied.
    x = LookupDense(units, widths, activation=activation, dtype=dtype)(taken)
    for units, activation, dtype in rest:
        x = tf.keras.layers.Dense(units, activation=activation, dtype=dtype)(x)

    model = InputStallModel(inputs=inputs, outputs=x)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate),
        loss=loss,
        metrics=metrics,
        steps_per_execution=steps_per_call,
    )
    return model
