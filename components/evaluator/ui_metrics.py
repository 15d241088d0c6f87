"""What the Evaluator shows in Kubeflow Pipelines' UI: its metrics, confusion matrix, ROC curve
and a summary page, from the evaluation it wrote in TFMA's format.

- ``metrics`` (system.Metrics): the headline rows of the UI's table, one page of it:
  each metric on the whole eval split, the positive class's, and the eval rows (each
  class's metrics and the 95% intervals are on the summary page).
- ``classification_metrics`` (system.ClassificationMetrics): the candidate's
  confusion matrix with the label's class names, and for two classes the ROC
  curve of the positive class (TFMA's ConfusionMatrixPlot). Regression
  models leave it empty, which the UI does not draw.
- ``evaluation_summary`` (system.Markdown): the verdict, the metrics table, the
  thresholds that failed and the paired comparison with the baseline.
"""

from __future__ import annotations

import re

import tensorflow_model_analysis as tfma

from tfrecord_pipelines.components import ui_artifacts
from tfrecord_pipelines.components.evaluator import label_classes, paired_change
from tfrecord_pipelines.components.evaluator.intervals import metric_intervals
from tfrecord_pipelines.components.evaluator.metric_values import (
    CONFUSION_MATRIX,
    EXAMPLE_COUNT,
    candidate_values,
    confusion_cells,
    is_shown_metric,
    overall_metric_values,
)
from tfrecord_pipelines.components.keys import (
    CLASSIFICATION_METRICS_KEY,
    EVALUATION_SUMMARY_KEY,
    METRICS_KEY,
)
from tfrecord_pipelines.components.markdown_text import markdown_text

EVAL_ROWS = "eval rows"


def _is_candidate(key) -> bool:
    return (key.model_name or tfma.CANDIDATE_KEY) == tfma.CANDIDATE_KEY


def _overall_plots(evaluation_uri: str) -> list:
    """The candidate's plots on the whole eval split (key, value) pairs."""
    return [
        kv
        for plots in tfma.load_plots(evaluation_uri)
        if not plots.slice_key.single_slice_keys
        for kv in plots.plot_keys_and_values
        if _is_candidate(kv.key)
    ]


def _confusion_cells(plots: list) -> dict[tuple[int, int], float]:
    """(actual class id, predicted class id) → rows, from TFMA's multi-class confusion matrix."""
    for kv in plots:
        matrices = kv.value.multi_class_confusion_matrix_at_thresholds.matrices
        if kv.key.name == CONFUSION_MATRIX and matrices:
            return confusion_cells(matrices[0])
    return {}


# A metric of one class (``metric_values.metric_name``).
_PER_CLASS = re.compile(r" \(class (\d+)\)$")


def _roc_points(plots: list) -> list:
    """TFMA's ConfusionMatrixPlot of the binarized positive class: one matrix per threshold."""
    for kv in plots:
        # TFMA writes this plot under an empty name: it is told apart by its value.
        if kv.value.confusion_matrix_at_thresholds.matrices:
            return list(kv.value.confusion_matrix_at_thresholds.matrices)
    return []


def _class_name(classes: list[str] | None, class_id: int) -> str:
    return classes[class_id] if classes and 0 <= class_id < len(classes) else str(class_id)


def _display(name: str, classes: list[str] | None) -> str:
    """``auc (class 1)`` → ``auc (Chinstrap)`` when the label's classes are known."""
    return label_classes.display_name(name, classes or [])


def _on_the_table(name: str, positive: int | None) -> bool:
    """A row of the Metrics table KFP's UI draws: a metric of the whole eval split, or of
    the positive class. The table shows 10 rows a page, sorted by name
    (frontend/src/components/viewers/PagedTable.tsx): the headline metrics fit its first
    page; each class's metrics and every interval are on the summary page and the report."""
    if not is_shown_metric(name):
        return False
    per_class = _PER_CLASS.search(name)
    return per_class is None or (positive is not None and int(per_class.group(1)) == positive)


def _share(part: float, rest: float) -> float:
    """part / (part + rest); 0 when both are 0."""
    return part / (part + rest) if part + rest else 0.0


def _markdown(
    values: dict[str, float],
    intervals: dict,
    classes: list[str] | None,
    blessed: bool | None,
    failures: list[str],
    against_baseline: str | None = None,
) -> str:
    verdict = {True: "blessed", False: "not blessed", None: "no thresholds: not judged"}[blessed]
    rows = int(values.get(EXAMPLE_COUNT, 0))
    lines = [
        f"## Evaluation: {verdict}",
        "",
        f"The candidate model on {rows:,} eval rows; 95% intervals.",
        "",
        "| metric | value | 95% interval | rows behind it |",
        "| --- | --- | --- | --- |",
    ]
    for name, value in sorted(values.items()):
        if not is_shown_metric(name):
            continue
        interval, behind = intervals.get(name, (None, None))
        shown = f"[{interval[0]:.4f}, {interval[1]:.4f}]" if interval else ""
        lines.append(
            f"| {markdown_text(_display(name, classes))} | {value:.4f} | {shown} | "
            f"{'' if behind is None else f'{behind:,}'} |"
        )
    if failures:
        lines += [
            "", "Failed thresholds:", "", *(f"- {markdown_text(failure)}" for failure in failures)
        ]  # fmt: skip
    if against_baseline:
        lines += ["", f"Against the baseline: {markdown_text(against_baseline)}."]
    return "\n".join(lines) + "\n"


def publish(evaluation_uri: str, output_dict: dict, blessed: bool | None) -> None:
    """Fills the Evaluator's UI outputs (those present in output_dict) from its evaluation.

    Args:
      evaluation_uri: the evaluation folder, in TFMA's format.
      output_dict: the executor's outputs; ``metrics``, ``classification_metrics``
        and ``evaluation_summary`` are filled when present.
      blessed: the verdict; None when no threshold was configured.
    """
    values = candidate_values(overall_metric_values(evaluation_uri))
    intervals = metric_intervals(values)
    found = label_classes.read(evaluation_uri)
    classes = list(found[0]) if found else None
    if output_dict.get(METRICS_KEY):
        [metrics] = output_dict[METRICS_KEY]
        positive = classes.index(found[1]) if found and found[1] in classes else None
        for name, value in sorted(values.items()):
            if _on_the_table(name, positive):
                ui_artifacts.log_metric(metrics, _display(name, classes), value)
        if EXAMPLE_COUNT in values:
            ui_artifacts.log_metric(metrics, EVAL_ROWS, values[EXAMPLE_COUNT])
    plots = _overall_plots(evaluation_uri)
    if output_dict.get(CLASSIFICATION_METRICS_KEY):
        [classification] = output_dict[CLASSIFICATION_METRICS_KEY]
        cells = _confusion_cells(plots)
        ids = sorted({c for pair in cells for c in pair if c >= 0} | set(range(len(classes or []))))
        if cells:
            ui_artifacts.log_confusion_matrix(
                classification,
                [_class_name(classes, i) for i in ids],
                [[cells.get((actual, predicted), 0.0) for predicted in ids] for actual in ids],
            )
        points = _roc_points(plots)
        if points:
            ui_artifacts.log_roc_curve(
                classification,
                [_share(p.false_positives, p.true_negatives) for p in points],
                [_share(p.true_positives, p.false_negatives) for p in points],
                [p.threshold for p in points],
            )
    if output_dict.get(EVALUATION_SUMMARY_KEY):
        validation = tfma.load_validation_result(evaluation_uri)
        failures = [
            failure.message or f"{failure.metric_key.name} failed its threshold"
            for per_slice in validation.metric_validations_per_slice
            for failure in per_slice.failures
        ]
        change = paired_change.read(evaluation_uri)
        passed = change.sentence() if change and not change.regressed else None
        [summary] = output_dict[EVALUATION_SUMMARY_KEY]
        ui_artifacts.write_text(
            summary, _markdown(values, intervals, classes, blessed, failures, passed)
        )
