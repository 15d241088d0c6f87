"""The Evaluator's metrics as numbers: TFMA's files read back, per slice and per role.

Read with TFMA's own loaders (``load_metrics``, ``load_plots``): the
candidate's, the baseline's and their differences; precision, recall and the
counts behind the intervals come from the candidate's confusion matrix.
"""

from __future__ import annotations

import tensorflow_model_analysis as tfma

from tfrecord_pipelines.components.evaluator.intervals import COUNTS, class_metrics

# The role of a candidate-minus-baseline value beside tfma's candidate and baseline keys.
CHANGE = "change"
EXAMPLE_COUNT = "example_count"
CONFUSION_MATRIX = "multi_class_confusion_matrix_plot"


def metric_name(key) -> str:
    """A metric key's name for people: ``auc (class 1)``, ``recall (macro)`` or the bare name."""
    name = key.name
    if key.HasField("sub_key") and key.sub_key.HasField("class_id"):
        name += f" (class {key.sub_key.class_id.value})"
    if key.HasField("aggregation_type") and key.aggregation_type.macro_average:
        name += " (macro)"
    return name


def _slice_text(slice_key) -> tuple[str, str] | None:
    """(feature, value) of a single-feature slice; None for the whole eval split."""
    if not slice_key.single_slice_keys:
        return None
    (single,) = slice_key.single_slice_keys
    kind = single.WhichOneof("kind")
    value = getattr(single, kind)
    return single.column, value.decode() if isinstance(value, bytes) else str(value)


def by_slice(uri: str) -> dict:
    """Slice (None: the whole eval split) → metric name → role → value.

    With a baseline, TFMA keeps the candidate's, the baseline's and their
    differences side by side, told apart by model name; without one, the
    model has no name and is the candidate.
    """
    found: dict = {}
    for metrics_for_slice in tfma.load_metrics(uri):
        values = found.setdefault(_slice_text(metrics_for_slice.slice_key), {})
        for kv in metrics_for_slice.metric_keys_and_values:
            if not kv.value.HasField("double_value"):
                continue
            name = metric_name(kv.key)
            role = CHANGE if kv.key.is_diff else kv.key.model_name or tfma.CANDIDATE_KEY
            values.setdefault(name, {})[role] = kv.value.double_value.value
    # Precision and recall per class, and the counts behind the intervals: from the
    # candidate's confusion matrix (a plot, in TFMA's terms).
    for plots_for_slice in tfma.load_plots(uri):
        for kv in plots_for_slice.plot_keys_and_values:
            matrices = kv.value.multi_class_confusion_matrix_at_thresholds.matrices
            if kv.key.name != CONFUSION_MATRIX or not matrices:
                continue
            if (kv.key.model_name or tfma.CANDIDATE_KEY) != tfma.CANDIDATE_KEY:
                continue
            cells = confusion_cells(matrices[0])
            values = found.setdefault(_slice_text(plots_for_slice.slice_key), {})
            for name, value in class_metrics(cells).items():
                values.setdefault(name, {})[tfma.CANDIDATE_KEY] = value
    return found


def confusion_cells(matrix) -> dict[tuple[int, int], float]:
    """(actual class id, predicted class id) → rows, from one of TFMA's multi-class confusion
    matrices."""
    cells: dict[tuple[int, int], float] = {}
    for entry in matrix.entries:
        pair = (entry.actual_class_id, entry.predicted_class_id)
        cells[pair] = cells.get(pair, 0.0) + entry.num_weighted_examples
    return cells


def candidate_values(metrics: dict) -> dict[str, float]:
    """The candidate's value of each metric, from ``overall_metric_values``' roles."""
    return {name: r[tfma.CANDIDATE_KEY] for name, r in metrics.items() if tfma.CANDIDATE_KEY in r}


def overall_metric_values(uri: str) -> dict[str, dict[str, float]]:
    """Each metric on the whole eval split, by role: candidate, baseline and change."""
    return by_slice(uri).get(None, {})


def is_shown_metric(name: str) -> bool:
    """Metrics a person reads; the row count is shown apart, the confusion counts only feed
    the intervals."""
    return name != EXAMPLE_COUNT and name.split(" ")[0] not in COUNTS
