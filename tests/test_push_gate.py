"""The push gate against the baseline: a paired test that tells a regression from noise.

The statistics against scipy's own tests on fixed predictions; the rate at which
same-distribution candidates are held back, on the Evaluator's own code
(TFMA's metrics and validation, then the paired judgment) over simulated
predictions, beside the rate of TFMA's "no worse than the baseline".
"""

import numpy as np
import pytest
import tensorflow_model_analysis as tfma
from scipy import stats

from tfrecord_pipelines.components.evaluator import (
    batched_metrics,
    change_gate,
    evaluation_files,
    paired_change,
)
from tfrecord_pipelines.components.evaluator.batched_metrics import ModelOutputs
from tfrecord_pipelines.components.task import Task
from tfrecord_pipelines.definition.config import EvaluationThresholds
from tfrecord_pipelines.definition.evaluation import make_eval_config

CLASSES = 3


def _probabilities(labels: np.ndarray, right: np.ndarray, rng) -> np.ndarray:
    """Class probabilities whose likeliest class is the label where ``right``, another
    class elsewhere."""
    predicted = np.where(right, labels, (labels + rng.integers(1, CLASSES, len(labels))) % CLASSES)
    scores = rng.uniform(0.0, 0.3, (len(labels), CLASSES))
    scores[np.arange(len(labels)), predicted] = 1.0
    return scores / scores.sum(axis=1, keepdims=True)


def _pair(rows: int, accuracy_c: float, accuracy_b: float, rng):
    """Labels and two models' outputs; each row has a difficulty both models share, so
    their errors are correlated as two trainings on the same data are."""
    labels = rng.integers(0, CLASSES, rows)
    ease = rng.beta(2.0, 0.5, rows)
    # Scaled so that the mean share right is each model's accuracy.
    right_c = rng.uniform(size=rows) < ease * accuracy_c / ease.mean()
    right_b = rng.uniform(size=rows) < ease * accuracy_b / ease.mean()
    return (
        ModelOutputs(labels, _probabilities(labels, right_c, rng)),
        ModelOutputs(labels, _probabilities(labels, right_b, rng)),
    )


@pytest.mark.parametrize("seed, accuracy_c", [(0, 0.80), (1, 0.76), (2, 0.83), (3, 0.98)])
def test_accuracy_interval_is_the_exact_binomial_one_of_the_discordant_rows(seed, accuracy_c):
    candidate, baseline = _pair(968, accuracy_c, 0.80, np.random.default_rng(seed))
    change = paired_change.accuracy_change(candidate, baseline)
    right_c = np.argmax(candidate.predictions, axis=1) == candidate.labels
    right_b = np.argmax(baseline.predictions, axis=1) == baseline.labels
    gained, lost = int(np.sum(right_c & ~right_b)), int(np.sum(~right_c & right_b))
    # scipy's Clopper-Pearson interval of the candidate's share of the discordant rows.
    found = stats.binomtest(gained, gained + lost).proportion_ci(0.90, method="exact")
    scale = (gained + lost) / 968
    assert change.low == pytest.approx(scale * (2 * found.low - 1), abs=1e-9)
    assert change.high == pytest.approx(scale * (2 * found.high - 1), abs=1e-9)
    assert change.difference == pytest.approx(right_c.mean() - right_b.mean())
    assert (change.candidate, change.baseline) == (right_c.mean(), right_b.mean())
    # Held back exactly when McNemar's exact one-sided test rejects at 5%.
    p_value = stats.binomtest(gained, gained + lost, alternative="less").pvalue
    assert change.regressed == (p_value < 0.05)


def test_accuracy_on_rows_where_the_models_agree_is_no_change():
    labels = np.array([0, 1, 2, 1])
    same = ModelOutputs(labels, np.eye(CLASSES)[labels])
    change = paired_change.accuracy_change(same, same)
    assert (change.difference, change.low, change.high, change.regressed) == (0, 0, 0, False)


def test_mean_absolute_error_interval_is_the_paired_t_one():
    rng = np.random.default_rng(7)
    labels = rng.normal(100, 20, 500)
    candidate = ModelOutputs(labels, labels + rng.normal(0.5, 8, 500))
    baseline = ModelOutputs(labels, labels + rng.normal(0, 8, 500))
    change = paired_change.mean_absolute_error_change(candidate, baseline)
    error_c = np.abs(candidate.predictions - labels)
    error_b = np.abs(baseline.predictions - labels)
    found = stats.ttest_rel(error_c, error_b).confidence_interval(0.90)
    assert (change.low, change.high) == pytest.approx((found.low, found.high), abs=1e-9)
    assert change.difference == pytest.approx(error_c.mean() - error_b.mean())
    # Lower is better: held back when the lower bound of the increase passes the allowance.
    worse = ModelOutputs(labels, labels + rng.normal(6, 8, 500))
    held = paired_change.mean_absolute_error_change(worse, baseline)
    assert held.regressed and held.low > 0
    assert not paired_change.mean_absolute_error_change(
        worse, baseline, max_regression=held.high
    ).regressed
    assert "mean absolute error" in held.sentence() and "beyond the noise" in held.sentence()


def _config(max_regression: float = 0.0):
    config = make_eval_config(
        Task(label="species"), EvaluationThresholds(min_accuracy=0.5, max_regression=max_regression)
    )
    config.model_specs.append(
        tfma.ModelSpec(name=tfma.BASELINE_KEY, is_baseline=True, label_key="species_xf")
    )
    config.model_specs[0].name = tfma.CANDIDATE_KEY
    return tfma.utils.update_eval_config_with_defaults(config, has_baseline=True)


def _gate(config, computations, candidate, baseline):
    """The Evaluator's own steps: TFMA's metrics and validation, then the paired judgment.
    Returns (TFMA's verdict, the gate's verdict, the paired change)."""
    outputs = {tfma.CANDIDATE_KEY: candidate, tfma.BASELINE_KEY: baseline}
    sliced = [((), batched_metrics.slice_metrics(computations, outputs))]
    validation = evaluation_files.validate(sliced, config, rubber_stamp=False)
    tfma_ok = validation.validation_ok
    change = change_gate.judge(validation, config, outputs)
    return tfma_ok, validation.validation_ok, change


SIMULATED = 1000


def test_same_distribution_candidates_are_held_back_at_most_five_percent():
    config = _config()
    computations = batched_metrics.computations_for(config)
    rng = np.random.default_rng(2026)
    held_by_tfma = held = 0
    for _ in range(SIMULATED):
        candidate, baseline = _pair(968, 0.80, 0.80, rng)
        tfma_ok, ok, change = _gate(config, computations, candidate, baseline)
        held_by_tfma += not tfma_ok
        held += not ok
        assert ok == (not change.regressed)
    print(
        f"same distribution, {SIMULATED} pairs of 968 rows: held back {held / SIMULATED:.1%} "
        f"(TFMA's no worse than the baseline: {held_by_tfma / SIMULATED:.1%})"
    )
    assert held / SIMULATED <= 0.05
    # TFMA's two-value comparison holds back about half of them.
    assert held_by_tfma / SIMULATED > 0.4


def test_a_candidate_worse_beyond_the_noise_is_held_back_and_named():
    config = _config()
    computations = batched_metrics.computations_for(config)
    rng = np.random.default_rng(5)
    verdicts = [_gate(config, computations, *_pair(968, 0.72, 0.80, rng)) for _ in range(50)]
    assert sum(not ok for _, ok, _ in verdicts) >= 45
    candidate, baseline = _pair(968, 0.72, 0.80, np.random.default_rng(6))
    outputs = {tfma.CANDIDATE_KEY: candidate, tfma.BASELINE_KEY: baseline}
    validation = evaluation_files.validate(
        [((), batched_metrics.slice_metrics(computations, outputs))], config, rubber_stamp=False
    )
    change = change_gate.judge(validation, config, outputs)
    [per_slice] = validation.metric_validations_per_slice
    [failure] = per_slice.failures
    assert failure.metric_key.name == "sparse_categorical_accuracy" and failure.metric_key.is_diff
    assert failure.message == change.sentence()
    assert f"{change.difference:+.4f} [{change.low:+.4f}, {change.high:+.4f}]" in failure.message
    assert "on the same 968 rows" in failure.message
    # A stated loss allowed: the same candidate passes when its loss is within it.
    allowed = _config(max_regression=-change.low + 0.001)
    assert _gate(allowed, batched_metrics.computations_for(allowed), candidate, baseline)[1]


def test_a_value_threshold_still_fails_whatever_the_baseline():
    config = _config()
    computations = batched_metrics.computations_for(config)
    candidate, baseline = _pair(968, 0.40, 0.40, np.random.default_rng(9))
    _, ok, change = _gate(config, computations, candidate, baseline)
    assert not change.regressed and not ok
