"""95% intervals of the Evaluator's metrics from the counts behind them."""

import pytest

from tfrecord_pipelines.components.evaluator.intervals import (
    auc_interval,
    class_metrics,
    mean_interval,
    metric_intervals,
    wilson,
)


def test_wilson_interval_of_a_share():
    # 0.8 measured on 100,000 rows: about +-0.25 points, the eval cap's reason.
    low, high = wilson(0.8, 100_000)
    assert high - low == pytest.approx(2 * 0.00248, rel=0.01)
    # Near the edges it stays within [0, 1], and is not empty at 1.
    low, high = wilson(1.0, 50)
    assert high == pytest.approx(1.0) and 0.9 < low < 0.95
    assert wilson(0.5, 0) is None


def test_auc_interval_narrows_with_rows_and_stays_within_one():
    narrow, wide = auc_interval(0.9, 5_000, 5_000), auc_interval(0.9, 50, 50)
    assert wide[0] < narrow[0] < 0.9 < narrow[1] < wide[1] <= 1.0
    assert auc_interval(0.9, 0, 10) is None


def test_mean_interval():
    assert mean_interval(2.0, 4.0, 400) == pytest.approx((2 - 1.96 * 0.1, 2 + 1.96 * 0.1), rel=1e-3)


def test_intervals_and_rows_from_a_slices_counts():
    values = {
        "example_count": 200.0,
        "sparse_categorical_accuracy": 0.9,
        "precision (class 1)": 0.8,
        "recall (class 1)": 0.5,
        "auc (class 1)": 0.85,
        "true_positives (class 1)": 40.0,
        "false_positives (class 1)": 10.0,
        "false_negatives (class 1)": 40.0,
        "true_negatives (class 1)": 110.0,
        "precision (macro)": 0.8,
    }
    found = metric_intervals(values)
    assert found["sparse_categorical_accuracy"][1] == 200
    assert found["precision (class 1)"] == (wilson(0.8, 50), 50)
    assert found["recall (class 1)"] == (wilson(0.5, 80), 80)
    assert found["auc (class 1)"] == (auc_interval(0.85, 80, 120), 200)
    low, high = found["precision (macro)"][0]
    assert low < 0.8 < high
    # No counts, no interval: never a made-up one.
    assert "mean_absolute_error" not in metric_intervals({"mean_absolute_error": 1.0})


def test_class_metrics_from_a_confusion_matrix():
    # actual → predicted: class 0 mostly right, class 1 half right.
    cells = {(0, 0): 80.0, (0, 1): 20.0, (1, 0): 50.0, (1, 1): 50.0}
    found = class_metrics(cells)
    assert found["precision (class 1)"] == pytest.approx(50 / 70)
    assert found["recall (class 1)"] == pytest.approx(0.5)
    assert found["recall (macro)"] == pytest.approx((0.8 + 0.5) / 2)
    assert found["true_negatives (class 1)"] == 80 and found["false_positives (class 1)"] == 20
    # The counts give precision its rows: the 70 rows predicted as class 1.
    assert metric_intervals(found)["precision (class 1)"][1] == 70
