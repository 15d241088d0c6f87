"""The Evaluator's verdict: each metric against its thresholds and the baseline, blessed or not.

Read with TFMA's own loaders: ``load_metrics`` (the candidate's, the
baseline's and their differences), ``load_validation_result`` (which
thresholds failed) and ``load_eval_result`` (the EvalConfig and its
thresholds).
"""

from __future__ import annotations

import dataclasses
import re

import tensorflow_model_analysis as tfma

# The role of a candidate-minus-baseline value beside tfma's candidate and baseline keys.
CHANGE = "change"


@dataclasses.dataclass(frozen=True)
class MetricRow:
    """One metric on the whole eval split.

    Attributes:
      name: the metric's name, e.g. ``sparse_categorical_accuracy``.
      candidate: this run's model's value.
      baseline: the baseline (last blessed) model's value, if there was one.
      change: candidate minus baseline, if there was a baseline.
      threshold: the thresholds that bless, in words ("" if none).
      failed: a threshold failed for this metric.
    """

    name: str
    candidate: float | None
    baseline: float | None
    change: float | None
    threshold: str
    failed: bool


@dataclasses.dataclass(frozen=True)
class EvaluationView:
    """The Evaluator's metrics, its validation and the blessing."""

    metrics: list[MetricRow]
    validation_ok: bool
    failures: list[str]
    has_baseline: bool


def _snake_case(class_name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", class_name).lower()


def _thresholds(config: tfma.EvalConfig, has_baseline: bool) -> dict[str, str]:
    words = {}
    for spec in config.metrics_specs:
        for metric in spec.metrics:
            if not metric.HasField("threshold"):
                continue
            parts = []
            value = metric.threshold.value_threshold
            if value.HasField("lower_bound"):
                parts.append(f">= {value.lower_bound.value:g}")
            if value.HasField("upper_bound"):
                parts.append(f"<= {value.upper_bound.value:g}")
            change = metric.threshold.change_threshold
            if has_baseline and metric.threshold.HasField("change_threshold"):
                better = (
                    "higher"
                    if change.direction == tfma.MetricDirection.HIGHER_IS_BETTER
                    else "lower"
                )
                parts.append(f"no worse than the baseline ({better} is better)")
            words[_snake_case(metric.class_name)] = "; ".join(parts)
    return words


def overall_metric_values(uri: str) -> dict[str, dict[str, float]]:
    """Each metric on the whole eval split, by role: candidate, baseline and change.

    With a baseline, TFMA keeps the candidate's, the baseline's and their
    differences side by side, told apart by model name; without one, the
    model has no name and is the candidate.
    """
    values: dict[str, dict[str, float]] = {}
    for metrics_for_slice in tfma.load_metrics(uri):
        if metrics_for_slice.slice_key.single_slice_keys:
            continue
        for kv in metrics_for_slice.metric_keys_and_values:
            if not kv.value.HasField("double_value"):
                continue
            role = CHANGE if kv.key.is_diff else kv.key.model_name or tfma.CANDIDATE_KEY
            values.setdefault(kv.key.name, {})[role] = kv.value.double_value.value
    return values


def read_evaluation(uri: str) -> EvaluationView:
    """The candidate's overall metrics, with baseline, change and threshold."""
    values = overall_metric_values(uri)
    has_baseline = any(tfma.BASELINE_KEY in v for v in values.values())
    candidate_name = tfma.CANDIDATE_KEY if has_baseline else ""
    config = tfma.load_eval_result(uri, model_name=candidate_name).config
    thresholds = _thresholds(config, has_baseline)
    validation = tfma.load_validation_result(uri)
    failures, failed = [], set()
    for per_slice in validation.metric_validations_per_slice:
        for failure in per_slice.failures:
            failed.add(failure.metric_key.name)
            failures.append(failure.message or f"{failure.metric_key.name} failed its threshold")
    rows = [
        MetricRow(
            name=name,
            candidate=v.get(tfma.CANDIDATE_KEY),
            baseline=v.get(tfma.BASELINE_KEY),
            change=v.get(CHANGE),
            threshold=thresholds.get(name, ""),
            failed=name in failed,
        )
        for name, v in sorted(values.items())
    ]
    return EvaluationView(rows, validation.validation_ok, failures, has_baseline)
