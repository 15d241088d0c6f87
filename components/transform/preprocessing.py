"""A schema-driven ``preprocessing_fn`` for tabular and image datasets.

Nothing here names a column: the inputs Transform passes in are the features
of the schema, the ``Task`` says which of them the model reads (and which one
holds images), and each is handled by its type.

- numeric (int or float), one value per row: scaled to z-scores over the
  present values, then missing values filled with 0, which is the training
  mean (one analyzer phase, so one pass over the data);
- numeric, a fixed count of values per row (a vector): z-scores, each
  position over its own values;
- string, or an integer the schema marks categorical (a code, an id; as
  text), one or several values per row: indices through a vocabulary
  computed on the training split, with one out-of-vocabulary bucket
  (missing single values become the empty string, a category of its own;
  several values stay a sparse bag of indices);
- the image: its encoded bytes, unchanged. Decoded pixels are never written:
  a 224x224x3 image is 150 KB as uint8 and 602 KB as floats against tens of
  KB as JPEG, so decoding belongs in the Trainer's input pipeline;
- the label (named by the task): a class index through a vocabulary for
  classification (numbers as text: ``label_values.class_name``), a float
  for regression.

Vocabularies are ordered by the tokens' fingerprints, not by their counts:
the same tokens get the same indices whatever their shares, so a model of
yesterday's window fits today's (a category's index is its row in the first
layer, a class's its output unit) and the Trainer can warm-start from it
(``trainer.warm_start``). By counts, two classes of about equal share swap
indices from one window to the next.

With ExampleGen's statistics of the train split (``custom_config``'s
``statistics_analysis.STATISTICS_PATH_KEY``, set by this project's Transform
executor: one file per span of a window), the means, variances and
vocabularies come from them wherever they hold the exact answer
(``statistics_analysis``), and tf.Transform analyzes only the rest: the same
results without reading the data again.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
import tensorflow_transform as tft

from tfrecord_pipelines.components.task import Task, transformed_name, vocabulary_name
from tfrecord_pipelines.components.transform import statistics_analysis
from tfrecord_pipelines.components.transform.statistics_analysis import TrainStatistics

_OOV_BUCKETS = 1
# The custom_config key under which Transform's executor names the integer features the
# schema marks categorical (``categorical.categorical_integers``).
CATEGORICAL_INTEGERS_KEY = "categorical_integers"


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


def _scaled(x: tf.Tensor | tf.SparseTensor, mean: float, variance: float):
    """``tft.scale_to_z_score``'s arithmetic with known moments (float32, as tf.Transform's)."""
    x = _as_float(x)
    values = x.values if isinstance(x, tf.SparseTensor) else x
    centred = values - tf.constant(mean, tf.float32)
    deviation = tf.sqrt(tf.constant(variance, tf.float32))
    scaled = tf.where(tf.not_equal(deviation, 0), centred / deviation, centred)
    if isinstance(x, tf.SparseTensor):
        return tf.SparseTensor(x.indices, scaled, x.dense_shape)
    return scaled


def _mean_imputed(key: str, x: tf.Tensor | tf.SparseTensor, stats: TrainStatistics | None):
    x = _as_float(x)
    moments = stats.moments(key) if stats else None
    mean = tft.mean(x) if moments is None else tf.constant(moments[0], tf.float32)
    return _densify(x, default_value=mean)


def _z_score(key: str, x: tf.Tensor | tf.SparseTensor, stats: TrainStatistics | None):
    moments = stats.moments(key) if stats else None
    scaled = tft.scale_to_z_score(_as_float(x)) if moments is None else _scaled(x, *moments)
    return _densify(scaled, default_value=0.0)


def _vocabulary_indices(
    key: str, x: tf.Tensor | tf.SparseTensor, stats: TrainStatistics | None, oov_buckets: int
) -> tf.Tensor | tf.SparseTensor:
    """Indices through ``key``'s vocabulary: from the statistics when they list every
    token, else computed by tf.Transform."""
    tokens = stats.vocabulary(key) if stats else None
    if not tokens:
        return tft.compute_and_apply_vocabulary(
            x,
            num_oov_buckets=oov_buckets,
            vocab_filename=vocabulary_name(key),
            fingerprint_shuffle=True,
        )
    path = statistics_analysis.vocabulary_file(vocabulary_name(key), tokens)
    # A file name (not a tensor): the table is built once, outside the traced function,
    # and the file becomes an asset of the transform graph.
    return tft.apply_vocabulary(x, path, num_oov_buckets=oov_buckets)


def _as_text(x: tf.Tensor | tf.SparseTensor) -> tf.Tensor | tf.SparseTensor:
    """Numbers as text, so a vocabulary names them by value: integers in decimal, floats
    as %g ("1", "0.5"); label_values.class_name says the same in Python."""
    shortest = x.dtype.is_floating
    if isinstance(x, tf.SparseTensor):
        values = tf.strings.as_string(x.values, shortest=shortest)
        return tf.SparseTensor(x.indices, values, x.dense_shape)
    return tf.strings.as_string(x, shortest=shortest)


def _label(x: tf.Tensor | tf.SparseTensor, task: Task, stats: TrainStatistics | None):
    if not task.is_classification:
        return _mean_imputed(task.label, x, stats)
    if x.dtype != tf.string:
        x = _as_text(x)
    return _vocabulary_indices(task.label, _densify(x, default_value=""), stats, oov_buckets=0)


def _multi_valued(key: str, x: tf.Tensor | tf.SparseTensor, stats: TrainStatistics | None):
    if x.dtype == tf.string:
        return _vocabulary_indices(key, x, stats, _OOV_BUCKETS)
    if isinstance(x, tf.SparseTensor):
        raise ValueError(
            f"Feature {key!r} holds a varying count of numbers per row; the built-in model "
            "takes lists of strings, or of numbers with the same count in every row. Give "
            "it a fixed length (a schema shape), leave it out, or bring your own "
            "preprocessing_fn and run_fn (--module-file)."
        )
    return tft.scale_to_z_score(_as_float(x), elementwise=True)


def _transform_input(
    key: str, x, task: Task, stats: TrainStatistics | None, categorical: frozenset[str]
):
    if key in categorical and x.dtype.is_integer:
        x = _as_text(x)
    if key == task.image_feature:
        if x.dtype != tf.string:
            raise ValueError(f"Image feature {key!r} must hold encoded bytes, not {x.dtype.name}.")
        return _densify(x, default_value=b"")
    if key in task.multi_valued:
        return _multi_valued(key, x, stats)
    if x.dtype == tf.string:
        return _vocabulary_indices(key, _densify(x, default_value=""), stats, _OOV_BUCKETS)
    return _z_score(key, x, stats)


# TFX entry point: Transform calls this with the raw features and the custom_config.
def preprocessing_fn(inputs: dict[str, Any], custom_config: dict[str, Any]) -> dict[str, Any]:
    """Transforms the task's inputs and label by type; see the module docstring.

    Args:
      inputs: raw feature tensors keyed by schema feature name.
      custom_config: the component's custom_config, carrying a ``Task`` and, when
        Transform's executor had them, the paths of the train split's statistics
        (one per span read) and the integers the schema marks categorical.

    Returns:
      Transformed tensors keyed by ``transformed_name(feature)``: [batch, 1]
      for single values and images, [batch, n] for vectors, sparse bags for
      lists of strings.

    Raises:
      ValueError: if the label or an input is not in the schema, or a feature
        cannot be taken by the built-in model.
    """
    task = Task.from_custom_config(custom_config)
    statistics_paths = (custom_config or {}).get(statistics_analysis.STATISTICS_PATH_KEY)
    stats = statistics_analysis.load(tuple(statistics_paths)) if statistics_paths else None
    if task.label not in inputs:
        raise ValueError(
            f"Label column {task.label!r} is not in the schema; features are: "
            f"{', '.join(sorted(inputs))}."
        )
    categorical = frozenset((custom_config or {}).get(CATEGORICAL_INTEGERS_KEY, ()))
    outputs = {
        transformed_name(key): _transform_input(key, inputs[key], task, stats, categorical)
        for key in task.model_inputs(inputs)
    }
    outputs[transformed_name(task.label)] = _label(inputs[task.label], task, stats)
    return outputs
