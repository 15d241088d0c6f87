"""95% intervals of the Evaluator's metrics, from the counts TFMA computed beside them.

TFMA can compute intervals itself (``Options.compute_confidence_intervals``,
a jackknife over 20 parts), but its cost does not depend on the rows: on the
bundled 115 penguins it took an evaluation with per-class metrics from 5.1
to 17 CPU-seconds, and to 37 with one slice feature, in a pipeline of about
a minute. The intervals of these metrics have closed forms in counts TFMA
reports anyway, so they are computed here, for free:

- a share (accuracy, precision, recall) of n rows: Wilson's score interval,
  which stays within [0, 1] and holds for shares near 0 or 1;
- AUC of P positives and N negatives: Hanley and McNeil's standard error;
- a mean error over n rows (mean absolute error): the normal interval, its
  variance being the mean squared error minus the squared mean;
- a macro average of k classes: the mean's interval, the classes taken as
  independent.
"""

from __future__ import annotations

import math
import re

Z_95 = 1.959964
_CLASS = re.compile(r"^(?P<name>[a-z_]+) \(class (?P<id>\d+)\)$")
COUNTS = ("true_positives", "false_positives", "true_negatives", "false_negatives")


def wilson(share: float, rows: float) -> tuple[float, float] | None:
    """The 95% Wilson score interval of a share measured on ``rows`` rows."""
    if rows <= 0:
        return None
    z2 = Z_95 * Z_95
    centre = (share + z2 / (2 * rows)) / (1 + z2 / rows)
    half = Z_95 * math.sqrt(share * (1 - share) / rows + z2 / (4 * rows * rows)) / (1 + z2 / rows)
    return max(0.0, centre - half), min(1.0, centre + half)


def auc_interval(auc: float, positives: float, negatives: float) -> tuple[float, float] | None:
    """The 95% interval of an AUC (Hanley & McNeil, 1982)."""
    if positives <= 0 or negatives <= 0:
        return None
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    variance = (
        auc * (1 - auc) + (positives - 1) * (q1 - auc * auc) + (negatives - 1) * (q2 - auc * auc)
    ) / (positives * negatives)
    half = Z_95 * math.sqrt(max(variance, 0.0))
    return max(0.0, auc - half), min(1.0, auc + half)


def mean_interval(mean: float, variance: float, rows: float) -> tuple[float, float] | None:
    """The normal 95% interval of a mean over ``rows`` values of this variance."""
    if rows <= 1:
        return None
    half = Z_95 * math.sqrt(max(variance, 0.0) / rows)
    return mean - half, mean + half


def class_metrics(cells: dict[tuple[int, int], float]) -> dict[str, float]:
    """Each class's precision, recall and confusion counts, and their macro averages, from a
    multi-class confusion matrix: (actual class, predicted class) → rows."""
    total = sum(cells.values())
    classes = sorted({c for pair in cells for c in pair if c >= 0})
    found: dict[str, float] = {}
    for c in classes:
        tp = cells.get((c, c), 0.0)
        predicted = sum(n for (_, p), n in cells.items() if p == c)
        actual = sum(n for (a, _), n in cells.items() if a == c)
        fp, fn = predicted - tp, actual - tp
        counts = dict(zip(COUNTS, (tp, fp, total - tp - fp - fn, fn), strict=True))
        found.update({f"{name} (class {c})": n for name, n in counts.items()})
        if predicted:
            found[f"precision (class {c})"] = tp / predicted
        if actual:
            found[f"recall (class {c})"] = tp / actual
    for metric in ("precision", "recall"):
        per_class = [
            found[f"{metric} (class {c})"] for c in classes if f"{metric} (class {c})" in found
        ]
        if per_class:
            found[f"{metric} (macro)"] = sum(per_class) / len(per_class)
    return found


def metric_intervals(values: dict[str, float]) -> dict[str, tuple[tuple[float, float], int]]:
    """Each metric's 95% interval and the rows behind it, where the counts allow.

    Args:
      values: one slice's metrics by name as ``metric_values.metric_name`` gives
        them: ``example_count``, ``sparse_categorical_accuracy``,
        ``auc (class 1)``, ``true_positives (class 1)``, ``recall (macro)``,
        ``mean_absolute_error``, ...
    """
    found: dict[str, tuple[tuple[float, float], int]] = {}
    rows = values.get("example_count")

    def keep(name, interval, behind):
        if interval is not None:
            found[name] = (interval, int(behind))

    for name, value in values.items():
        if rows and name.endswith("accuracy"):
            keep(name, wilson(value, rows), rows)
    if rows and "mean_absolute_error" in values and "mean_squared_error" in values:
        mae = values["mean_absolute_error"]
        variance = values["mean_squared_error"] - mae * mae
        keep("mean_absolute_error", mean_interval(mae, variance, rows), rows)
    per_class: dict[str, list[tuple[float, float]]] = {}
    for name, value in values.items():
        match = _CLASS.match(name)
        if not match or match["name"] in COUNTS:
            continue
        counts = {c: values.get(f"{c} (class {match['id']})") for c in COUNTS}
        if any(v is None for v in counts.values()):
            continue
        tp, fp, tn, fn = (counts[c] for c in COUNTS)
        if match["name"] == "precision":
            keep(name, wilson(value, tp + fp), tp + fp)
        elif match["name"] == "recall":
            keep(name, wilson(value, tp + fn), tp + fn)
        elif match["name"] == "auc":
            keep(name, auc_interval(value, tp + fn, tn + fp), tp + fp + tn + fn)
        if name in found:
            low, high = found[name][0]
            per_class.setdefault(match["name"], []).append(((high - low) / 2, found[name][1]))
    for metric, halves in per_class.items():
        macro = f"{metric} (macro)"
        if macro in values:
            half = math.sqrt(sum(h * h for h, _ in halves)) / len(halves)
            low, high = values[macro] - half, values[macro] + half
            keep(macro, (max(0.0, low), min(1.0, high)), rows or max(n for _, n in halves))
    return found
