"""The push gate against the baseline: a paired test on the eval rows both models scored.

TFMA's change threshold compares two noisy numbers: a candidate one row
behind an unchanged baseline fails "no worse than the baseline", so a daily
pipeline whose data does not change holds back a model on about half of its
days. Both models are scored on the same rows, so their difference is
judged paired, row by row, and a model is held back only when it is worse
beyond the noise: the one-sided 95% bound of (candidate - baseline) lies
past the loss the user allows (``--max-regression``, absolute; 0 by
default).

- Accuracy: McNemar's exact test (McNemar, 1947; the exact conditional form,
  as in Fagerland, Lydersen and Laake, 2013). Only the rows where one model
  is right and the other wrong carry information. Given their number ``n``,
  the candidate's share of them is binomial; its Clopper-Pearson bounds
  (1934), scaled by ``n`` over all rows, bound the accuracy difference. At
  no allowed loss the gate is then the exact one-sided McNemar test at 5%,
  whose false hold-back rate is at most 5% (it is conservative), where an
  asymptotic interval's is not bounded on a few discordant rows.
- Mean absolute error: the paired t interval of the per-row differences of
  absolute errors (their mean is the MAE's difference).

One metric gates: accuracy for classification, MAE for regression. Each
further test at 5% would add its own false hold-backs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os

import numpy as np
from scipy import stats

from tfrecord_pipelines.components.storage import filesystem

CONFIDENCE = 0.95
# The allowance of "no loss" in TFMA's change threshold: equal values pass its check.
NO_LOSS = 1e-10
PAIRED_CHANGE_FILE = "paired_change.json"
ACCURACY = "sparse_categorical_accuracy"
MEAN_ABSOLUTE_ERROR = "mean_absolute_error"
_DISPLAY = {ACCURACY: "accuracy", MEAN_ABSOLUTE_ERROR: "mean absolute error"}


@dataclasses.dataclass(frozen=True)
class PairedChange:
    """The candidate's metric against the baseline's on the same rows, and the verdict.

    Attributes:
      metric: TFMA's metric name (``ACCURACY`` or ``MEAN_ABSOLUTE_ERROR``).
      candidate, baseline: each model's value on the rows.
      rows: the eval rows both models scored.
      difference: candidate - baseline.
      low, high: the difference's 90% interval; each end is a one-sided 95% bound.
      higher_is_better: the metric's direction.
      max_regression: the loss allowed (absolute, in the metric's units).
      method: how the interval was computed, in words.
    """

    metric: str
    candidate: float
    baseline: float
    rows: int
    difference: float
    low: float
    high: float
    higher_is_better: bool
    max_regression: float
    method: str

    @property
    def regressed(self) -> bool:
        """Whether the candidate is worse than the allowed loss beyond the noise."""
        if self.higher_is_better:
            return self.high < -self.max_regression
        return self.low > self.max_regression

    def sentence(self) -> str:
        """E.g. "accuracy 0.8058 vs 0.8079 on the same 968 rows: -0.0021 [-0.0164, +0.0124]
        (90% interval, McNemar's exact test: 31 rows gained, 33 lost): within noise of the
        baseline"."""
        name = _DISPLAY.get(self.metric, self.metric)
        allowed = (
            f" (a loss of {self.max_regression:g} allowed)" if self.max_regression > NO_LOSS else ""
        )
        worse = (self.high < 0) if self.higher_is_better else (self.low > 0)
        better = (self.low > 0) if self.higher_is_better else (self.high < 0)
        if self.regressed:
            words = f"worse than the baseline beyond the noise{allowed}"
        elif worse:
            words = f"worse than the baseline, within the allowed loss{allowed}"
        elif better:
            words = "better than the baseline beyond the noise"
        else:
            words = "within noise of the baseline"
        return (
            f"{name} {self.candidate:.4f} vs {self.baseline:.4f} on the same {self.rows:,} "
            f"rows: {self.difference:+.4f} [{self.low:+.4f}, {self.high:+.4f}] "
            f"(90% interval, {self.method}): {words}"
        )


def _one_sided(confidence: float) -> float:
    return 1.0 - confidence


def _right(outputs) -> np.ndarray:
    # Keras' sparse categorical accuracy: the likeliest class against the label's id.
    truth = np.asarray(outputs.labels).reshape(-1).astype(np.int64)
    return np.argmax(outputs.predictions, axis=-1) == truth


def accuracy_change(
    candidate, baseline, max_regression: float = 0.0, confidence: float = CONFIDENCE
) -> PairedChange:
    """McNemar's exact paired comparison of two classifiers' accuracy on the same rows.

    Args:
      candidate, baseline: each model's ``ModelOutputs`` on the same rows: labels as
        its own Transform gave them (class ids; shape (rows,) or (rows, 1)) and class
        probabilities (rows, classes), the likeliest class being the predicted one.
      max_regression: the accuracy loss allowed (absolute).
      confidence: of the one-sided bounds.
    """
    right_c, right_b = _right(candidate), _right(baseline)
    rows = len(right_c)
    gained = int(np.sum(right_c & ~right_b))
    lost = int(np.sum(~right_c & right_b))
    discordant = gained + lost
    alpha = _one_sided(confidence)
    # Clopper-Pearson bounds of the candidate's share of the discordant rows.
    share_low = stats.beta.ppf(alpha, gained, discordant - gained + 1) if gained else 0.0
    share_high = stats.beta.ppf(1 - alpha, gained + 1, discordant - gained) if lost else 1.0
    scale = discordant / rows if rows else 0.0
    return PairedChange(
        metric=ACCURACY,
        candidate=float(np.mean(right_c)) if rows else math.nan,
        baseline=float(np.mean(right_b)) if rows else math.nan,
        rows=rows,
        difference=(gained - lost) / rows if rows else 0.0,
        low=scale * (2 * float(share_low) - 1) if discordant else 0.0,
        high=scale * (2 * float(share_high) - 1) if discordant else 0.0,
        higher_is_better=True,
        max_regression=max_regression,
        method=f"McNemar's exact test: {gained} rows gained, {lost} lost",
    )


def _absolute_errors(outputs) -> np.ndarray:
    truth = np.asarray(outputs.labels, dtype=np.float64).reshape(-1)
    return np.abs(np.asarray(outputs.predictions, dtype=np.float64).reshape(-1) - truth)


def mean_absolute_error_change(
    candidate, baseline, max_regression: float = 0.0, confidence: float = CONFIDENCE
) -> PairedChange:
    """The paired t interval of two regressors' mean absolute error on the same rows.

    Args:
      candidate, baseline: each model's ``ModelOutputs`` on the same rows (labels and
        predictions, shape (rows,) or (rows, 1)).
      max_regression: the increase of the error allowed (absolute).
      confidence: of the one-sided bounds.
    """
    error_c, error_b = _absolute_errors(candidate), _absolute_errors(baseline)
    differences = error_c - error_b
    rows = len(differences)
    mean = float(np.mean(differences)) if rows else 0.0
    half = 0.0
    if rows > 1:
        spread = float(np.std(differences, ddof=1)) / math.sqrt(rows)
        half = float(stats.t.ppf(1 - _one_sided(confidence), rows - 1)) * spread
    return PairedChange(
        metric=MEAN_ABSOLUTE_ERROR,
        candidate=float(np.mean(error_c)) if rows else math.nan,
        baseline=float(np.mean(error_b)) if rows else math.nan,
        rows=rows,
        difference=mean,
        low=mean - half,
        high=mean + half,
        higher_is_better=False,
        max_regression=max_regression,
        method="paired t on the rows' absolute errors",
    )


PAIRED_TESTS = {ACCURACY: accuracy_change, MEAN_ABSOLUTE_ERROR: mean_absolute_error_change}


def write(evaluation_dir: str, change: PairedChange) -> None:
    """Writes the comparison beside an evaluation, for the report, the summary and KFP's UI."""
    with filesystem.open_file(os.path.join(evaluation_dir, PAIRED_CHANGE_FILE), "w") as f:
        json.dump(dataclasses.asdict(change), f, indent=2)


def read(evaluation_dir: str) -> PairedChange | None:
    """The comparison written beside an evaluation; None without a baseline or a gated metric."""
    path = os.path.join(evaluation_dir, PAIRED_CHANGE_FILE)
    if not filesystem.exists(path):
        return None
    with filesystem.open_file(path) as f:
        return PairedChange(**json.load(f))
