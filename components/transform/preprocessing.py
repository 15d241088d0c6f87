"""A schema-driven ``preprocessing_fn`` for any single-valued tabular dataset.

Nothing here names a column: the inputs Transform passes in are the features
of the schema, and each is handled by its type.

- numeric (int or float): scaled to z-scores over the present values, then
  missing values filled with 0, which is the training mean (one analyzer
  phase, so one pass over the data);
- string: mapped to an index through a vocabulary computed on the training
  split, with one out-of-vocabulary bucket (missing values become the empty
  string, which is a category of its own);
- the label (named by the task): a class index through a vocabulary for
  classification, a float for regression.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
import tensorflow_transform as tft

from components.task import Task, transformed_name, vocabulary_name

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
        _densify(x, default_value=""), vocab_filename=vocabulary_name(task.label)
    )


# TFX entry point: Transform calls this with the raw features and the custom_config.
def preprocessing_fn(inputs: dict[str, Any], custom_config: dict[str, Any]) -> dict[str, Any]:
    """Transforms every schema feature by type; see the module docstring.

    Args:
      inputs: raw feature tensors keyed by schema feature name.
      custom_config: the component's custom_config, carrying a ``Task``.

    Returns:
      Transformed tensors keyed by ``transformed_name(feature)``, shaped [batch, 1].

    Raises:
      ValueError: if the label column is not among the inputs.
    """
    task = Task.from_custom_config(custom_config)
    if task.label not in inputs:
        raise ValueError(
            f"Label column {task.label!r} is not in the schema; features are: "
            f"{', '.join(sorted(inputs))}."
        )
    outputs = {}
    for key, x in inputs.items():
        if key == task.label:
            outputs[transformed_name(key)] = _label(x, task)
        elif x.dtype == tf.string:
            outputs[transformed_name(key)] = tft.compute_and_apply_vocabulary(
                _densify(x, default_value=""),
                num_oov_buckets=_OOV_BUCKETS,
                vocab_filename=vocabulary_name(key),
            )
        else:
            outputs[transformed_name(key)] = _z_score(x)
    return outputs
