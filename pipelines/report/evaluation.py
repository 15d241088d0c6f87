"""The Evaluator's verdict: each metric with its 95% interval and rows, against its thresholds
and the baseline, overall and per slice, blessed or not.

Read with TFMA's own loaders: ``load_metrics`` (the candidate's, the
baseline's and their differences, each with TFMA's confidence interval),
``load_validation_result`` (which thresholds failed) and
``load_eval_result`` (the EvalConfig and its thresholds).
"""

from __future__ import annotations

import dataclasses
import re

import tensorflow_model_analysis as tfma

from tfrecord_pipelines.components.evaluator import label_classes, paired_change
from tfrecord_pipelines.components.evaluator.intervals import metric_intervals
from tfrecord_pipelines.components.evaluator.metric_values import (
    CHANGE,
    EXAMPLE_COUNT,
    by_slice,
    candidate_values,
    is_shown_metric,
)


@dataclasses.dataclass(frozen=True)
class MetricRow:
    """One metric on the whole eval split.

    Attributes:
      name: the metric's name, e.g. ``sparse_categorical_accuracy``, ``auc (class 1)``
        or ``recall (macro)``.
      candidate: this run's model's value.
      baseline: the baseline (last blessed) model's value, if there was one.
      change: candidate minus baseline, if there was a baseline.
      threshold: the thresholds that bless, in words ("" if none).
      failed: a threshold failed for this metric.
      interval: the candidate's 95% confidence interval (low, high), if known.
      rows: the eval rows behind the candidate's value (for precision, the
        rows predicted in the class; for recall, the rows of the class).
    """

    name: str
    candidate: float | None
    baseline: float | None
    change: float | None
    threshold: str
    failed: bool
    interval: tuple[float, float] | None = None
    rows: int | None = None


@dataclasses.dataclass(frozen=True)
class SliceRow:
    """The candidate's metrics on the eval rows holding one value of a ``--slice-by`` feature.

    Attributes:
      feature: the feature sliced on.
      value: its value in these rows.
      rows: eval rows in the slice.
      metrics: metric name → (value, 95% interval or None); no per-class metrics.
    """

    feature: str
    value: str
    rows: int
    metrics: dict[str, tuple[float, tuple[float, float] | None]]


@dataclasses.dataclass(frozen=True)
class EvaluationView:
    """The Evaluator's metrics, its validation and the blessing.

    ``against_baseline``: the paired comparison with the baseline, in words, when
    it passed (a failed one is among ``failures``).
    """

    metrics: list[MetricRow]
    validation_ok: bool
    failures: list[str]
    has_baseline: bool
    eval_rows: int | None = None
    slices: list[SliceRow] = dataclasses.field(default_factory=list)
    against_baseline: str | None = None


@dataclasses.dataclass(frozen=True)
class LabelClasses:
    """The label's class names by class id, and the positive class of two (None otherwise)."""

    names: tuple[str, ...]
    positive: str | None

    @property
    def positive_id(self) -> int | None:
        """The positive class's id, for two classes."""
        return None if self.positive is None else self.names.index(self.positive)

    def display(self, name: str) -> str:
        """A metric's name with its class id replaced by the class's name: ``auc (yes)``."""
        return label_classes.display_name(name, self.names)


def read_label_classes(uri: str) -> LabelClasses | None:
    """The class names the Evaluator wrote beside its evaluation, if it did."""
    found = label_classes.read(uri)
    return LabelClasses(tuple(found[0]), found[1]) if found else None


def _snake_case(class_name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", class_name).lower()


def _change_words(change, higher_is_better: bool) -> str:
    allowed = abs(change.absolute.value)
    loss = f"by more than {allowed:g} " if allowed > paired_change.NO_LOSS else ""
    better = "higher" if higher_is_better else "lower"
    return f"not worse than the baseline {loss}beyond the noise ({better} is better; paired test)"


def _thresholds(config: tfma.EvalConfig, has_baseline: bool) -> dict[str, str]:
    words = {}
    for spec in config.metrics_specs:
        for metric in spec.metrics:
            parts = []
            value = metric.threshold.value_threshold
            if value.HasField("lower_bound"):
                parts.append(f">= {value.lower_bound.value:g}")
            if value.HasField("upper_bound"):
                parts.append(f"<= {value.upper_bound.value:g}")
            changes = [
                t.change_threshold
                for t in (metric.threshold, *(p.threshold for p in metric.per_slice_thresholds))
                if t.HasField("change_threshold")
            ]
            if has_baseline and changes:
                higher = changes[0].direction == tfma.MetricDirection.HIGHER_IS_BETTER
                parts.append(_change_words(changes[0], higher))
            if parts:
                words[_snake_case(metric.class_name)] = "; ".join(parts)
    return words


def _slice_rows(by_slice: dict) -> list[SliceRow]:
    rows = []
    for key, metrics in by_slice.items():
        if key is None:
            continue
        candidate = candidate_values(metrics)
        known = metric_intervals(candidate)
        shown = {
            name: (value, known[name][0] if name in known else None)
            for name, value in sorted(candidate.items())
            # Per class per slice would be a table no one reads: the overall table has them.
            if is_shown_metric(name) and "(class " not in name
        }
        rows.append(SliceRow(key[0], key[1], int(candidate.get(EXAMPLE_COUNT, 0)), shown))
    return sorted(rows, key=lambda row: (row.feature, -row.rows, row.value))


def read_evaluation(uri: str) -> EvaluationView:
    """The candidate's overall metrics, with interval, baseline, change and threshold, and
    its metrics on each slice."""
    metrics = by_slice(uri)
    values = metrics.get(None, {})
    known = metric_intervals(candidate_values(values))
    has_baseline = any(tfma.BASELINE_KEY in v for v in values.values())
    candidate_name = tfma.CANDIDATE_KEY if has_baseline else ""
    config = tfma.load_eval_result(uri, model_name=candidate_name).config
    thresholds = _thresholds(config, has_baseline)
    validation = tfma.load_validation_result(uri)
    change = paired_change.read(uri)
    classes = read_label_classes(uri)
    failures, failed = [], set()
    for per_slice in validation.metric_validations_per_slice:
        for failure in per_slice.failures:
            failed.add(failure.metric_key.name)
            failures.append(failure.message or f"{failure.metric_key.name} failed its threshold")

    def thresholded(name: str) -> str | None:
        # A threshold on "auc" is on the positive class's AUC (two classes) or the
        # macro average: per-class rows of more classes have none.
        base = name.split(" (")[0]
        if "(class " in name and not (classes and classes.positive_id is not None):
            return None
        return base

    rows = [
        MetricRow(
            name=classes.display(name) if classes else name,
            candidate=v.get(tfma.CANDIDATE_KEY),
            baseline=v.get(tfma.BASELINE_KEY),
            change=v.get(CHANGE),
            threshold=thresholds.get(thresholded(name), ""),
            failed=thresholded(name) in failed,
            interval=known[name][0] if name in known else None,
            rows=known[name][1] if name in known else None,
        )
        for name, v in sorted(values.items())
        if is_shown_metric(name)
    ]
    count = values.get(EXAMPLE_COUNT, {}).get(tfma.CANDIDATE_KEY)
    return EvaluationView(
        rows,
        validation.validation_ok,
        failures,
        has_baseline,
        eval_rows=None if count is None else int(count),
        slices=_slice_rows(metrics),
        against_baseline=change.sentence() if change and not change.regressed else None,
    )
