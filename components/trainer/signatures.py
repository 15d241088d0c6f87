"""Serving signatures exported with the model.

- ``serving_default``: serialized raw tf.Examples in, predictions out. The
  examples need only the model's inputs (no label; for images, only the
  encoded image bytes, exactly as ExampleGen stored them). The Transform
  graph runs inside, and images are decoded and resized inside by the same
  code as training (``ImageDecoding``), so clients send raw data and nothing
  differs between training and serving. Bytes that are not an image are an
  error, not a prediction. A classifier answers as TensorFlow Serving's
  Classify API does: ``scores`` (each class's probability) and ``classes``
  (the class names, by the label's values: a folder's name for images, in
  the scores' order); a regression model with its one value.
- ``transform_features``: serialized raw tf.Examples (with label) in,
  transformed features out. TFMA's Evaluator uses it to get the transformed label.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_transform as tft

from tfrecord_pipelines.components.task import Task, vocabulary_name
from tfrecord_pipelines.components.trainer.image_decoding import ImageDecoding

SERVING_SIGNATURE = "serving_default"
TRANSFORM_SIGNATURE = "transform_features"
# A classifier's serving outputs, named as TensorFlow Serving's Classify API names them.
SCORES_OUTPUT = tf.saved_model.CLASSIFY_OUTPUT_SCORES
CLASSES_OUTPUT = tf.saved_model.CLASSIFY_OUTPUT_CLASSES

_EXAMPLES_SPEC = tf.TensorSpec(shape=[None], dtype=tf.string, name="examples")


def make_signatures(
    model: tf.keras.Model,
    tf_transform_output: tft.TFTransformOutput,
    task: Task,
    image: ImageDecoding | None = None,
) -> dict:
    """Returns the signatures to pass to ``model.save(signatures=...)``.

    Args:
      model: the trained Keras model (inputs keyed by transformed name).
      tf_transform_output: the Transform output, run inside both signatures.
      task: the label and the model's inputs.
      image: how the input pipeline decoded the image feature, for image tasks.
    """
    # Attached to the model so the Transform graph's assets are saved with it.
    model.tft_layer = tf_transform_output.transform_features_layer()
    raw_spec = tf_transform_output.raw_feature_spec()
    inputs = set(task.model_inputs(raw_spec))
    serving_spec = {k: v for k, v in raw_spec.items() if k in inputs}
    input_names = set(model.input_names)
    class_names = (
        tf.constant(tf_transform_output.vocabulary_by_name(vocabulary_name(task.label)))
        if task.is_classification
        else None
    )

    # Plain graph code: AutoGraph would convert the Transform layer and the model for nothing.
    @tf.function(input_signature=[_EXAMPLES_SPEC], autograph=False)
    def serve(examples):
        features = model.tft_layer(tf.io.parse_example(examples, serving_spec))
        features = {k: v for k, v in features.items() if k in input_names}
        if image is not None:
            features[image.feature] = image.decode_batch(features[image.feature])
        scores = model(features)
        if class_names is None:
            return scores
        rows = tf.shape(scores)[0]
        return {
            SCORES_OUTPUT: scores,
            CLASSES_OUTPUT: tf.tile(class_names[tf.newaxis, :], [rows, 1]),
        }

    @tf.function(input_signature=[_EXAMPLES_SPEC], autograph=False)
    def transform_features(examples):
        return model.tft_layer(tf.io.parse_example(examples, raw_spec))

    return {
        SERVING_SIGNATURE: serve.get_concrete_function(),
        TRANSFORM_SIGNATURE: transform_features.get_concrete_function(),
    }
