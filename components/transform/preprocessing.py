"""A schema-driven ``preprocessing_fn`` for tabular and image datasets.

Nothing here names a column: the inputs Transform passes in are the features
of the schema, the ``Task`` says which of them the model reads (and which one
holds images), and each is handled by its type.

- numeric (int or float), one value per row: scaled to z-scores over the
  present values, then missing values filled with 0, which is the training
  mean (one analyzer phase, so one pass over the data);
- numeric, a fixed count of values per row (a vector): z-scores, each
  position over its own values;
- string, one or several values per row: indices through a vocabulary
  computed on the training split, with one out-of-vocabulary bucket
  (missing single values become the empty string, a category of its own;
  several values stay a sparse bag of indices);
- the image: its encoded bytes, unchanged. Decoded pixels are never written:
  a 224x224x3 image is 150 KB as uint8 and 602 KB as floats against tens of
  KB as JPEG, so decoding belongs in the Trainer's input pipeline;
- the label (named by the task): a class index through a vocabulary for
  classification, a float for regression.

Vocabularies are ordered by the tokens' fingerprints, not by their counts:
the same tokens get the same indices whatever their shares, so a model of
yesterday's window fits today's (a category's index is its row in the first
layer, a class's its output unit) and the Trainer can warm-start from it
(``trainer.warm_start``). By counts, two classes of about equal share swap
indices from one window to the next.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
import tensorflow_transform as tft

from tfrecord_pipelines.components.task import Task, transformed_name, vocabulary_name

_OOV_BUCKETS = 1


def _densify(x: tf.Tensor | tf.SparseTensor, default_value: Any) -> tf.Tensor:
    """Returns a [batch, 1] tensor, one value per example, filling missing ones."""
    if isinstance(x, tf.SparseTensor):
        x = tf.sparse.to_dense(
            tf.SparseTensor(x.indices, x.values, [x.dense_shape[0], 1]),
            default_value=default_value,
        )
    return tf.reshape(x, [-1, 1])


def _as_float(x: tf.Tensor | tf.SparseTensor) -> tf.Tensor | tf.SparseTensor:
    if isinstance(x, tf.SparseTensor):
        return tf.SparseTensor(x.indices, tf.cast(x.values, tf.float32), x.dense_shape)
    return tf.cast(x, tf.float32)


def _mean_imputed(x: tf.Tensor | tf.SparseTensor) -> tf.Tensor:
    x = _as_float(x)
    return _densify(x, default_value=tft.mean(x))


def _z_score(x: tf.Tensor | tf.SparseTensor) -> tf.Tensor:
    return _densify(tft.scale_to_z_score(_as_float(x)), default_value=0.0)


def _label(x: tf.Tensor | tf.SparseTensor, task: Task) -> tf.Tensor:
    if not task.is_classification:
        return _mean_imputed(x)
    if x.dtype != tf.string:
        # Integer class ids become strings so the vocabulary names classes readably.
        x = (
            tf.SparseTensor(x.indices, tf.strings.as_string(x.values), x.dense_shape)
            if isinstance(x, tf.SparseTensor)
            else tf.strings.as_string(x)
        )
    return tft.compute_and_apply_vocabulary(
        _densify(x, default_value=""),
        vocab_filename=vocabulary_name(task.label),
        fingerprint_shuffle=True,
    )


def _multi_valued(key: str, x: tf.Tensor | tf.SparseTensor) -> tf.Tensor | tf.SparseTensor:
    if x.dtype == tf.string:
        return tft.compute_and_apply_vocabulary(
            x,
            num_oov_buckets=_OOV_BUCKETS,
            vocab_filename=vocabulary_name(key),
            fingerprint_shuffle=True,
        )
    if isinstance(x, tf.SparseTensor):
        raise ValueError(
            f"Feature {key!r} holds a varying count of numbers per row; the built-in model "
            "takes lists of strings, or of numbers with the same count in every row. Give "
            "it a fixed length (a schema shape), leave it out, or bring your own "
            "preprocessing_fn and run_fn (--module-file)."
        )
    return tft.scale_to_z_score(_as_float(x), elementwise=True)


def _transform_input(key: str, x: tf.Tensor | tf.SparseTensor, task: Task):
    if key == task.image_feature:
        if x.dtype != tf.string:
            raise ValueError(f"Image feature {key!r} must hold encoded bytes, not {x.dtype.name}.")
        return _densify(x, default_value=b"")
    if key in task.multi_valued:
        return _multi_valued(key, x)
    if x.dtype == tf.string:
        return tft.compute_and_apply_vocabulary(
            _densify(x, default_value=""),
            num_oov_buckets=_OOV_BUCKETS,
            vocab_filename=vocabulary_name(key),
            fingerprint_shuffle=True,
        )
    return _z_score(x)


# TFX entry point: Transform calls this with the raw features and the custom_config.
def preprocessing_fn(inputs: dict[str, Any], custom_config: dict[str, Any]) -> dict[str, Any]:
    """Transforms the task's inputs and label by type; see the module docstring.

    Args:
      inputs: raw feature tensors keyed by schema feature name.
      custom_config: the component's custom_config, carrying a ``Task``.

    Returns:
      Transformed tensors keyed by ``transformed_name(feature)``: [batch, 1]
      for single values and images, [batch, n] for vectors, sparse bags for
      lists of strings.

    Raises:
      ValueError: if the label or an input is not in the schema, or a feature
        cannot be taken by the built-in model.
    """
    task = Task.from_custom_config(custom_config)
    if task.label not in inputs:
        raise ValueError(
            f"Label column {task.label!r} is not in the schema; features are: "
            f"{', '.join(sorted(inputs))}."
        )
    outputs = {
        transformed_name(key): _transform_input(key, inputs[key], task)
        for key in task.model_inputs(inputs)
    }
    outputs[transformed_name(task.label)] = _label(inputs[task.label], task)
    return outputs
