"""TFMA's private names: the metric combiners the batched Evaluator replaces, and their settings.

``batched_metrics`` recognizes TFMA's combiners by class and reads how each
was configured (its key, buckets, thresholds, Keras metrics) to compute the
same output from whole arrays. TFMA keeps those classes and attributes
private; this module is the only one that reads them.
"""

from __future__ import annotations

import dataclasses

from tensorflow_model_analysis.metrics import (
    calibration_histogram,
    example_count,
    mean_regression_error,
    multi_class_confusion_matrix_metrics,
    tf_metric_wrapper,
)

LIBRARY = "tensorflow-model-analysis"
VERSION = "0.47.1"
# What each use rests on (the classes' sources hold the attributes read below), with a
# digest of its source in VERSION (``private_api.fingerprint``).
_METRICS = "tensorflow_model_analysis.metrics"
CHECKED = {
    f"{_METRICS}.calibration_histogram._CalibrationHistogramCombiner": "96ee91aa594a1f10",
    f"{_METRICS}.example_count._ExampleCountCombiner": "2790a2d2f42e74ef",
    f"{_METRICS}.multi_class_confusion_matrix_metrics._MultiClassConfusionMatrixCombiner": (
        "9dbf6980ba0e8b8f"
    ),
    f"{_METRICS}.mean_regression_error._MeanRegressionErrorCombiner": "d3b11be023162439",
    f"{_METRICS}.mean_regression_error._MeanAbsoluteErrorCombiner": "9cecf769f833fecb",
    f"{_METRICS}.mean_regression_error._MeanSquaredErrorCombiner": "461a3be94b49f894",
    f"{_METRICS}.tf_metric_wrapper._CompilableMetricsCombiner": "bc4f9bc96b8642ea",
    f"{_METRICS}.tf_metric_wrapper._deserialize_metrics": "c03f16034a92042f",
}

HISTOGRAM = calibration_histogram._CalibrationHistogramCombiner
EXAMPLE_COUNT = example_count._ExampleCountCombiner
CONFUSION = multi_class_confusion_matrix_metrics._MultiClassConfusionMatrixCombiner
KERAS = tf_metric_wrapper._CompilableMetricsCombiner
# TFMA's own mean absolute and mean squared error (not Keras'): each row's error, averaged.
ABSOLUTE_ERROR = mean_regression_error._MeanAbsoluteErrorCombiner
SQUARED_ERROR = mean_regression_error._MeanSquaredErrorCombiner


def is_example_weighted(combiner) -> bool:
    """Whether a combiner weighs examples."""
    return bool(getattr(combiner, "_example_weighted", False))


@dataclasses.dataclass(frozen=True)
class Histogram:
    """A calibration histogram combiner's settings: its buckets span ``left`` to
    ``left + range`` in ``num_buckets`` (plus one each side)."""

    key: object
    left: float
    range: float
    num_buckets: int
    aggregation_type: object
    class_weights: object
    prediction_based_bucketing: bool


def histogram(combiner) -> Histogram:
    """The settings of a ``HISTOGRAM`` combiner."""
    return Histogram(
        key=combiner._key,
        left=combiner._left,
        range=combiner._range,
        num_buckets=combiner._num_buckets,
        aggregation_type=combiner._aggregation_type,
        class_weights=combiner._class_weights,
        prediction_based_bucketing=combiner._prediction_based_bucketing,
    )


@dataclasses.dataclass(frozen=True)
class KerasMetrics:
    """A Keras metrics combiner's settings."""

    model_name: str
    sub_key: object
    aggregation_type: object
    class_weights: object
    output_names: list
    loss_configs: list
    metric_configs: list


def keras_metrics(combiner) -> KerasMetrics:
    """The settings of a ``KERAS`` combiner."""
    return KerasMetrics(
        model_name=combiner._model_name,
        sub_key=combiner._sub_key,
        aggregation_type=combiner._aggregation_type,
        class_weights=combiner._class_weights,
        output_names=combiner._output_names,
        loss_configs=combiner._loss_configs,
        metric_configs=combiner._metric_configs,
    )


def deserialize_metrics(config) -> list:
    """The Keras metrics a ``KERAS`` combiner's metric config describes, fresh."""
    return tf_metric_wrapper._deserialize_metrics(config)


@dataclasses.dataclass(frozen=True)
class Confusion:
    """A multi-class confusion matrix combiner's settings."""

    key: object
    thresholds: list
    extracts: object  # how it takes labels, predictions and weights from an example


def confusion(combiner) -> Confusion:
    """The settings of a ``CONFUSION`` combiner."""
    return Confusion(
        key=combiner._key,
        thresholds=combiner._thresholds,
        extracts=combiner._extract_label_prediction_and_weight,
    )


@dataclasses.dataclass(frozen=True)
class RegressionError:
    """An ``ABSOLUTE_ERROR`` or ``SQUARED_ERROR`` combiner's settings."""

    key: object
    aggregation_type: object
    class_weights: object


def regression_error(combiner) -> RegressionError:
    """The settings of an ``ABSOLUTE_ERROR`` or ``SQUARED_ERROR`` combiner."""
    return RegressionError(
        key=combiner._metric_key,
        aggregation_type=combiner._aggregation_type,
        class_weights=combiner._class_weights,
    )


def example_count_keys(combiner) -> list:
    """The metric keys an ``EXAMPLE_COUNT`` combiner outputs."""
    return combiner._keys


def model_name(combiner) -> str:
    """The model a combiner's metrics are of."""
    if type(combiner) in (HISTOGRAM, CONFUSION):
        return combiner._key.model_name
    return combiner._model_name
