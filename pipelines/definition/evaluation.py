"""The Evaluator's TFMA configuration: metrics, their intervals, slices and the thresholds.

Classification adds TFMA's multi-class confusion matrix (the predicted
class is the likeliest), from which the report reads each class's
precision and recall and the counts behind every metric's 95% interval
(``components.evaluator.intervals``), and, when the pipeline knows how many classes there
are (``EvaluationOptions.num_classes``: TFMA needs it to binarize), each
class's AUC (one against the rest) and their macro average; of two classes,
the positive class's AUC alone, the other's being the same. ``min_auc``
thresholds that AUC (two classes) or the macro average.

Measured on 100,000 eval rows of a two-class table (2 cores): TFMA's
reading, inference and example count 18.9 CPU-seconds, the Keras accuracy
+6.8, the confusion matrix +6.3, one class's AUC about +7; binarized
precision, recall and their counts for both classes instead of the matrix
+13.3.
"""

from __future__ import annotations

import tensorflow_model_analysis as tfma

from tfrecord_pipelines.components.evaluator.label_classes import POSITIVE_CLASS_ID
from tfrecord_pipelines.components.evaluator.paired_change import NO_LOSS
from tfrecord_pipelines.components.task import Task, transformed_name
from tfrecord_pipelines.components.trainer.signatures import (
    SCORES_OUTPUT,
    SERVING_SIGNATURE,
    TRANSFORM_SIGNATURE,
)
from tfrecord_pipelines.definition.config import (
    MAX_CLASSES_FOR_PER_CLASS_METRICS,
    EvaluationOptions,
    EvaluationThresholds,
)

CONFUSION_MATRIX = "MultiClassConfusionMatrixPlot"


def _metric(
    class_name: str,
    *,
    lower_bound: float | None = None,
    upper_bound: float | None = None,
    higher_is_better: bool,
    max_regression: float | None = None,
) -> tfma.MetricConfig:
    """A metric with a value threshold (every slice) and, with ``max_regression``, the
    change threshold against the baseline (the whole eval split)."""
    value = None
    if lower_bound is not None or upper_bound is not None:
        bounds = {}
        if lower_bound is not None:
            bounds["lower_bound"] = {"value": lower_bound}
        if upper_bound is not None:
            bounds["upper_bound"] = {"value": upper_bound}
        value = tfma.GenericValueThreshold(**bounds)
    config = tfma.MetricConfig(
        class_name=class_name, threshold=tfma.MetricThreshold(value_threshold=value)
    )
    if max_regression is None:
        return config
    # The change threshold applies only when a baseline model is resolved; the
    # Evaluator drops it otherwise (first run, or Kubeflow, which has no Resolver).
    # On the whole split: the batched Evaluator judges it by a paired test on the
    # rows (components/evaluator/paired_change.py); per slice, each further test
    # would add its own false hold-backs. TFMA's own path compares the two values.
    allowed = max(max_regression, NO_LOSS)
    change = tfma.GenericChangeThreshold(
        direction=(
            tfma.MetricDirection.HIGHER_IS_BETTER
            if higher_is_better
            else tfma.MetricDirection.LOWER_IS_BETTER
        ),
        absolute={"value": -allowed if higher_is_better else allowed},
    )
    config.per_slice_thresholds.append(
        tfma.PerSliceMetricThreshold(
            slicing_specs=[tfma.SlicingSpec()],
            threshold=tfma.MetricThreshold(change_threshold=change),
        )
    )
    return config


def _per_class_auc(num_classes: int | None, min_auc: float | None) -> list[tfma.MetricsSpec]:
    if not num_classes or num_classes > MAX_CLASSES_FOR_PER_CLASS_METRICS:
        return []
    auc = (
        _metric("AUC", lower_bound=min_auc, higher_is_better=True)
        if min_auc is not None
        else tfma.MetricConfig(class_name="AUC")
    )
    if num_classes == 2:
        # Class id 1 until the Evaluator reads the model's label vocabulary: it
        # then binarizes the positive class's id (components/evaluator/label_classes.py).
        # The positive class's confusion matrix at each threshold: the ROC curve that
        # Kubeflow Pipelines' UI draws (components/evaluator/ui_metrics.py).
        return [
            tfma.MetricsSpec(
                metrics=[auc, tfma.MetricConfig(class_name="ConfusionMatrixPlot")],
                binarize=tfma.BinarizationOptions(class_ids={"values": [POSITIVE_CLASS_ID]}),
            )
        ]
    classes = list(range(num_classes))
    return [
        tfma.MetricsSpec(
            metrics=[auc],
            binarize=tfma.BinarizationOptions(class_ids={"values": classes}),
            aggregate=tfma.AggregationOptions(
                macro_average=True, class_weights={c: 1.0 for c in classes}
            ),
        )
    ]


def make_eval_config(
    task: Task,
    thresholds: EvaluationThresholds,
    options: EvaluationOptions | None = None,
) -> tfma.EvalConfig:
    """Returns the EvalConfig for the task's model.

    The model's ``transform_features`` signature gives TFMA the transformed
    label, so raw examples can be evaluated against it. Metrics are computed
    on the whole eval split and on each value of every ``slice_by`` feature.
    """
    options = options or EvaluationOptions()
    if task.is_classification:
        metrics = [
            _metric(
                "SparseCategoricalAccuracy",
                lower_bound=thresholds.min_accuracy,
                higher_is_better=True,
                max_regression=thresholds.max_regression,
            ),
            tfma.MetricConfig(class_name=CONFUSION_MATRIX),
        ]
    else:
        metrics = [
            _metric(
                "MeanAbsoluteError",
                upper_bound=thresholds.max_mean_absolute_error,
                higher_is_better=False,
                max_regression=thresholds.max_regression,
            ),
            tfma.MetricConfig(class_name="MeanSquaredError"),
        ]
    return tfma.EvalConfig(
        model_specs=[
            tfma.ModelSpec(
                signature_name=SERVING_SIGNATURE,
                label_key=transformed_name(task.label),
                # A classifier's serving signature also names the classes.
                prediction_key=SCORES_OUTPUT if task.is_classification else "",
                preprocessing_function_names=[TRANSFORM_SIGNATURE],
            )
        ],
        slicing_specs=[
            tfma.SlicingSpec(),
            *(tfma.SlicingSpec(feature_keys=[name]) for name in options.slice_by),
        ],
        metrics_specs=[
            tfma.MetricsSpec(metrics=[tfma.MetricConfig(class_name="ExampleCount"), *metrics]),
            *(
                _per_class_auc(options.num_classes, thresholds.min_auc)
                if task.is_classification
                else []
            ),
        ],
    )
