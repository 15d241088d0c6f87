"""TFMA's metrics, computed from whole arrays of labels and predictions.

TFMA turns an EvalConfig into metric computations: combiners that see one
example at a time (counts, Keras metrics, histograms, confusion matrices)
and derived computations that turn their outputs into metrics (AUC from the
histogram, the confusion-matrix plot). The combiners' per-example work is
what makes TFMA's Evaluator cost about 100 times the model's predictions
(profiled in docs/benchmarks/pipeline-scale.md). Here each supported
combiner's output is computed from the slice's arrays in one vectorized
step, and TFMA's own derived computations, diffs against the baseline and
validation run on them unchanged, so the metrics are TFMA's.

``unsupported`` names what a configuration asks for that this module does
not compute; the Evaluator then runs TFMA itself.
"""

from __future__ import annotations

import copy
import dataclasses
import numbers

import numpy as np
import tensorflow as tf
from tensorflow_model_analysis.metrics import (
    calibration_histogram,
    metric_specs,
    metric_types,
    multi_class_confusion_matrix_metrics,
)

from tfrecord_pipelines.components.private_api import tfma_private

_NO_PREDICTED_CLASS = multi_class_confusion_matrix_metrics.NO_PREDICTED_CLASS_ID
# Each row's error from its label minus prediction (one value a row), as TFMA's
# combiners take it: its absolute value; its norm, squared.
_REGRESSION_ERRORS = {
    tfma_private.ABSOLUTE_ERROR: lambda d: np.abs(d).sum(axis=1),
    tfma_private.SQUARED_ERROR: lambda d: (d * d).sum(axis=1),
}


@dataclasses.dataclass(frozen=True)
class ModelOutputs:
    """One model's predictions on the eval rows and the labels it was scored against.

    Attributes:
      labels: the label of each row, shape (rows,) or (rows, 1): a class id
        for classification, a number for regression.
      predictions: shape (rows, classes) of class probabilities, or (rows, 1).
    """

    labels: np.ndarray
    predictions: np.ndarray

    def rows(self, index: np.ndarray | None) -> ModelOutputs:
        """These outputs for the rows at ``index`` (all rows for None)."""
        if index is None:
            return self
        return ModelOutputs(self.labels[index], self.predictions[index])


@dataclasses.dataclass(frozen=True)
class Computations:
    """An EvalConfig's metric computations, de-duplicated and in dependency order."""

    combined: tuple
    derived: tuple
    baseline_model_name: str | None


def computations_for(eval_config) -> Computations:
    """The computations TFMA would run for ``eval_config`` (with its defaults filled in)."""
    combined, derived, seen = [], [], set()
    for computation in metric_specs.to_computations(
        eval_config.metrics_specs, eval_config=eval_config
    ):
        # TFMA keeps the first of equal computations: later ones are copies of
        # a dependency that an earlier metric also asked for.
        if computation in seen:
            continue
        seen.add(computation)
        if isinstance(computation, metric_types.MetricComputation):
            combined.append(computation)
        else:
            derived.append(computation)
    baseline = next((m.name for m in eval_config.model_specs if m.is_baseline), None)
    return Computations(tuple(combined), tuple(derived), baseline)


def unsupported(eval_config, computations: Computations) -> str | None:
    """Why these computations cannot be computed here, or None if they can."""
    if eval_config.cross_slicing_specs:
        return "cross slices"
    for spec in eval_config.slicing_specs:
        if spec.feature_values or spec.slice_keys_sql or len(spec.feature_keys) > 1:
            return f"slicing spec {spec}"
    options = eval_config.options
    if options.compute_confidence_intervals.value or options.min_slice_size.value > 1:
        return "TFMA's confidence intervals or minimum slice size"
    for model in eval_config.model_specs:
        if model.example_weight_key or model.example_weight_keys:
            return f"model spec {model.name!r}: example weights"
    for computation in computations.combined:
        reason = _unsupported_combiner(computation)
        if reason:
            return reason
    for computation in computations.derived:
        if not isinstance(computation, metric_types.DerivedMetricComputation) or isinstance(
            computation, metric_types.CIDerivedMetricComputation
        ):
            return f"computation {type(computation).__name__}"
    return None


def _unsupported_combiner(computation) -> str | None:
    combiner = computation.combiner
    kind = type(combiner)
    if kind not in (
        tfma_private.HISTOGRAM,
        tfma_private.EXAMPLE_COUNT,
        tfma_private.CONFUSION,
        tfma_private.KERAS,
        *_REGRESSION_ERRORS,
    ):
        return f"metric combiner {kind.__name__}"
    if tfma_private.is_example_weighted(combiner):
        return "example weights"
    if kind in _REGRESSION_ERRORS:
        error = tfma_private.regression_error(combiner)
        if error.key.sub_key or error.aggregation_type or error.class_weights:
            return f"{error.key.name} with sub keys, aggregation or class weights"
    if kind is tfma_private.HISTOGRAM:
        histogram = tfma_private.histogram(combiner)
        key = histogram.key
        if (
            histogram.aggregation_type
            or histogram.class_weights
            or not histogram.prediction_based_bucketing
            or (key.sub_key and key.sub_key.class_id is None)
        ):
            return f"histogram {key.name} with aggregation, weights or top-k"
    if kind is tfma_private.KERAS:
        keras = tfma_private.keras_metrics(combiner)
        if (
            keras.sub_key
            or keras.aggregation_type
            or keras.class_weights
            or keras.output_names != [""]
            or any(keras.loss_configs)
        ):
            return "Keras metrics with sub keys, aggregation, losses or several outputs"
    if kind is tfma_private.CONFUSION and tfma_private.confusion(combiner).extracts is not (
        multi_class_confusion_matrix_metrics.metric_util.to_label_prediction_example_weight
    ):
        return "a confusion matrix with its own label and prediction extraction"
    return None


def _regression_error(combiner, outputs: ModelOutputs) -> dict:
    labels = outputs.labels.reshape(len(outputs.labels), -1).astype(np.float64)
    predictions = outputs.predictions.reshape(len(labels), -1).astype(np.float64)
    errors = _REGRESSION_ERRORS[type(combiner)](labels - predictions)
    # As TFMA: a row whose error is NaN is left out; no rows at all is NaN.
    errors = errors[~np.isnan(errors)]
    key = tfma_private.regression_error(combiner).key
    return {key: float(np.mean(errors)) if len(errors) else float("nan")}


def _model_name(computation) -> str:
    return tfma_private.model_name(computation.combiner)


def _class_inputs(outputs: ModelOutputs, class_id: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Labels and predictions as TFMA binarizes them: one class against the rest."""
    labels = outputs.labels.reshape(-1)
    if class_id is None:
        return labels.astype(np.float64), outputs.predictions.reshape(-1).astype(np.float64)
    return (
        (labels == class_id).astype(np.float64),
        outputs.predictions[:, class_id].astype(np.float64),
    )


def _histogram(combiner, outputs: ModelOutputs) -> dict:
    histogram = tfma_private.histogram(combiner)
    key = histogram.key
    labels, predictions = _class_inputs(outputs, key.sub_key.class_id if key.sub_key else None)
    # The same float64 operations as TFMA's _bucket_index, then its truncation.
    position = (predictions - histogram.left) / histogram.range * histogram.num_buckets + 1
    buckets = np.clip(np.trunc(position), 0, histogram.num_buckets + 1).astype(np.int64)
    size = histogram.num_buckets + 2
    examples = np.bincount(buckets, minlength=size)
    positives = np.bincount(buckets, weights=labels, minlength=size)
    predicted = np.bincount(buckets, weights=predictions, minlength=size)
    return {
        key: [
            calibration_histogram.Bucket(
                int(b), float(positives[b]), float(predicted[b]), float(examples[b])
            )
            for b in np.flatnonzero(examples)
        ]
    }


def _confusion(combiner, outputs: ModelOutputs) -> dict:
    labels = outputs.labels.reshape(-1).astype(np.int64)
    predicted = np.argmax(outputs.predictions, axis=1)
    top = outputs.predictions[np.arange(len(predicted)), predicted]
    matrices = multi_class_confusion_matrix_metrics.Matrices()
    settings = tfma_private.confusion(combiner)
    for threshold in settings.thresholds:
        # As TFMA: a prediction at or below a threshold predicts no class, from
        # that threshold on (the thresholds ascend).
        predicted = np.where(top <= threshold, _NO_PREDICTED_CLASS, predicted)
        pairs, counts = np.unique(np.stack([labels, predicted]), axis=1, return_counts=True)
        matrices[threshold] = {
            multi_class_confusion_matrix_metrics.MatrixEntryKey(int(a), int(p)): float(n)
            for (a, p), n in zip(pairs.T, counts, strict=True)
        }
    return {settings.key: matrices}


# Eager updates need no AutoGraph: converting a Keras metric's update_state costs seconds
# (the penguins' accuracy: 1.0 of the Evaluator's 1.5 s) for one call.
@tf.autograph.experimental.do_not_convert
def _keras(computation, outputs: ModelOutputs) -> dict:
    keras = tfma_private.keras_metrics(computation.combiner)
    metrics = tfma_private.deserialize_metrics(keras.metric_configs[0])
    labels = outputs.labels.reshape(len(outputs.labels), -1)
    weights = np.ones((len(labels), 1), dtype=np.float32)
    found = {}
    for metric in metrics:
        metric.update_state(labels, outputs.predictions, sample_weight=weights)
        found[
            metric_types.MetricKey(
                name=metric.name,
                model_name=keras.model_name,
                output_name="",
                example_weighted=False,
            )
        ] = float(metric.result().numpy())
    return found


def _combine(computation, outputs: ModelOutputs) -> dict:
    combiner = computation.combiner
    kind = type(combiner)
    if kind is tfma_private.EXAMPLE_COUNT:
        return dict.fromkeys(tfma_private.example_count_keys(combiner), float(len(outputs.labels)))
    if kind is tfma_private.HISTOGRAM:
        return _histogram(combiner, outputs)
    if kind is tfma_private.CONFUSION:
        return _confusion(combiner, outputs)
    if kind in _REGRESSION_ERRORS:
        return _regression_error(combiner, outputs)
    return _keras(computation, outputs)


def _diffable(value) -> bool:
    return isinstance(value, numbers.Number) or (
        isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.number)
    )


def slice_metrics(
    computations: Computations,
    models: dict[str, ModelOutputs],
    rows: np.ndarray | None = None,
) -> dict:
    """Every metric and plot of the configuration on one slice's rows, as TFMA returns them.

    Args:
      computations: from ``computations_for``.
      models: each model's outputs on all eval rows, by TFMA model name.
      rows: the slice's row indices; None: every row.

    Returns:
      MetricKey/PlotKey → value, private metrics removed, with the
      candidate-minus-baseline diff of each number when there is a baseline.
    """
    metrics: dict = {}
    for computation in computations.combined:
        metrics.update(_combine(computation, models[_model_name(computation)].rows(rows)))
    for computation in computations.derived:
        metrics.update(computation.result(copy.copy(metrics)))
    baseline = computations.baseline_model_name
    if baseline:
        for key, value in list(metrics.items()):
            base_key = key.make_baseline_key(baseline)
            if (
                not key.is_diff
                and key.model_name != baseline
                and base_key in metrics
                and _diffable(value)
            ):
                metrics[key.make_diff_key()] = value - metrics[base_key]
    return {
        key: value
        for key, value in metrics.items()
        if not (key.name.startswith("_") and not key.name.startswith("__"))
    }
