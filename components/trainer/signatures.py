"""Serving signatures exported with the model.

- ``serving_default``: serialized raw tf.Examples (no label) in, predictions out.
  The Transform graph runs inside, so clients send raw data.
- ``transform_features``: serialized raw tf.Examples (with label) in,
  transformed features out. TFMA's Evaluator uses it to get the transformed label.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_transform as tft

from components.task import Task

SERVING_SIGNATURE = "serving_default"
TRANSFORM_SIGNATURE = "transform_features"

_EXAMPLES_SPEC = tf.TensorSpec(shape=[None], dtype=tf.string, name="examples")


def make_signatures(
    model: tf.keras.Model, tf_transform_output: tft.TFTransformOutput, task: Task
) -> dict:
    """Returns the signatures to pass to ``model.save(signatures=...)``."""
    # Attached to the model so the Transform graph's assets are saved with it.
    model.tft_layer = tf_transform_output.transform_features_layer()
    raw_spec = tf_transform_output.raw_feature_spec()
    serving_spec = {k: v for k, v in raw_spec.items() if k != task.label}
    input_names = set(model.input_names)

    @tf.function(input_signature=[_EXAMPLES_SPEC])
    def serve(examples):
        features = model.tft_layer(tf.io.parse_example(examples, serving_spec))
        return model({k: v for k, v in features.items() if k in input_names})

    @tf.function(input_signature=[_EXAMPLES_SPEC])
    def transform_features(examples):
        return model.tft_layer(tf.io.parse_example(examples, raw_spec))

    return {
        SERVING_SIGNATURE: serve.get_concrete_function(),
        TRANSFORM_SIGNATURE: transform_features.get_concrete_function(),
    }
