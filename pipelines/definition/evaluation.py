"""The Evaluator's TFMA configuration: metrics and the thresholds that bless a model."""

from __future__ import annotations

import tensorflow_model_analysis as tfma

from tfrecord_pipelines.components.task import Task, transformed_name
from tfrecord_pipelines.components.trainer.signatures import SERVING_SIGNATURE, TRANSFORM_SIGNATURE
from tfrecord_pipelines.definition.config import EvaluationThresholds

_NO_WORSE_THAN_BASELINE = 1e-10


def _metric(
    class_name: str,
    *,
    lower_bound: float | None = None,
    upper_bound: float | None = None,
    higher_is_better: bool,
) -> tfma.MetricConfig:
    value = None
    if lower_bound is not None or upper_bound is not None:
        bounds = {}
        if lower_bound is not None:
            bounds["lower_bound"] = {"value": lower_bound}
        if upper_bound is not None:
            bounds["upper_bound"] = {"value": upper_bound}
        value = tfma.GenericValueThreshold(**bounds)
    # The change threshold applies only when a baseline model is resolved; the
    # Evaluator drops it otherwise (first run, or Kubeflow, which has no Resolver).
    direction = (
        tfma.MetricDirection.HIGHER_IS_BETTER
        if higher_is_better
        else tfma.MetricDirection.LOWER_IS_BETTER
    )
    change = tfma.GenericChangeThreshold(
        direction=direction,
        absolute={
            "value": -_NO_WORSE_THAN_BASELINE if higher_is_better else _NO_WORSE_THAN_BASELINE
        },
    )
    return tfma.MetricConfig(
        class_name=class_name,
        threshold=tfma.MetricThreshold(value_threshold=value, change_threshold=change),
    )


def make_eval_config(task: Task, thresholds: EvaluationThresholds) -> tfma.EvalConfig:
    """Returns the EvalConfig for the task's model.

    The model's ``transform_features`` signature gives TFMA the transformed
    label, so raw examples can be evaluated against it.
    """
    if task.is_classification:
        metrics = [
            _metric(
                "SparseCategoricalAccuracy",
                lower_bound=thresholds.min_accuracy,
                higher_is_better=True,
            )
        ]
    else:
        metrics = [
            _metric(
                "MeanAbsoluteError",
                upper_bound=thresholds.max_mean_absolute_error,
                higher_is_better=False,
            ),
            tfma.MetricConfig(class_name="MeanSquaredError"),
        ]
    return tfma.EvalConfig(
        model_specs=[
            tfma.ModelSpec(
                signature_name=SERVING_SIGNATURE,
                label_key=transformed_name(task.label),
                preprocessing_function_names=[TRANSFORM_SIGNATURE],
            )
        ],
        slicing_specs=[tfma.SlicingSpec()],
        metrics_specs=[
            tfma.MetricsSpec(metrics=[tfma.MetricConfig(class_name="ExampleCount"), *metrics])
        ],
    )
