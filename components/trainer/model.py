"""The Keras model, built from the Transform output's feature spec.

Inputs are whatever Transform produced: integer features are vocabulary
indices and are one-hot encoded to their bucket count; float features are
already scaled and enter as they are. No feature is named here.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf
import tensorflow_transform as tft

from components.task import Task, transformed_name, vocabulary_name
from components.trainer.input_stall import InputStallModel


def input_feature_spec(tf_transform_output: tft.TFTransformOutput, task: Task) -> dict:
    """Returns the transformed feature spec of the model's inputs (the label removed)."""
    spec = dict(tf_transform_output.transformed_feature_spec())
    spec.pop(transformed_name(task.label), None)
    return spec


def num_classes(tf_transform_output: tft.TFTransformOutput, task: Task) -> int:
    """Returns how many classes the label vocabulary holds (classification only)."""
    return tf_transform_output.vocabulary_size_by_name(vocabulary_name(task.label))


def build_model(
    tf_transform_output: tft.TFTransformOutput,
    task: Task,
    *,
    hidden_units: Sequence[int] = (64, 32),
    learning_rate: float = 1e-2,
) -> tf.keras.Model:
    """Builds and compiles a feed-forward network for the task.

    Args:
      tf_transform_output: the Transform output; its schema gives the inputs.
      task: the label and problem kind; sets the output layer and the loss.
      hidden_units: widths of the hidden Dense layers.
      learning_rate: Adam's learning rate.

    Returns:
      A compiled Keras model taking a dict of transformed features, which
      reports its input stall (``InputStallModel``). Its output layer computes
      in float32 under a mixed-precision policy too.
    """
    inputs, encoded = {}, []
    for name, feature in sorted(input_feature_spec(tf_transform_output, task).items()):
        layer_input = tf.keras.Input(shape=(1,), name=name, dtype=feature.dtype)
        inputs[name] = layer_input
        if feature.dtype == tf.int64:
            buckets = tf_transform_output.num_buckets_for_transformed_feature(name)
            encoded.append(
                tf.keras.layers.CategoryEncoding(num_tokens=buckets, output_mode="one_hot")(
                    layer_input
                )
            )
        else:
            encoded.append(layer_input)
    x = tf.keras.layers.concatenate(encoded) if len(encoded) > 1 else encoded[0]
    for units in hidden_units:
        x = tf.keras.layers.Dense(units, activation="relu")(x)

    if task.is_classification:
        outputs = tf.keras.layers.Dense(
            num_classes(tf_transform_output, task), activation="softmax", dtype="float32"
        )(x)
        loss = tf.keras.losses.SparseCategoricalCrossentropy()
        metrics = [tf.keras.metrics.SparseCategoricalAccuracy()]
    else:
        outputs = tf.keras.layers.Dense(1, dtype="float32")(x)
        loss = tf.keras.losses.MeanSquaredError()
        metrics = [tf.keras.metrics.MeanAbsoluteError()]

    model = InputStallModel(inputs=inputs, outputs=outputs)
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate), loss=loss, metrics=metrics)
    return model
