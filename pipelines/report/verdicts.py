"""The run's verdicts in words, one source for the printed summary and the report's page: how
much of the data the model saw, and why a model was not pushed."""

from __future__ import annotations


def coverage_text(coverage, warm_started: bool = False) -> str:
    """Examples and epochs the model saw; a warning when part of the data never was.

    A model warm-started from the earlier spans' model trained its steps for the
    new span's share, so less than an epoch is what was asked, not a warning.
    """
    text = (
        f"{coverage.examples:,} examples ({coverage.steps:,} steps of {coverage.batch_size}): "
        f"{coverage.epochs:.2f} epochs of the {coverage.train_records:,}-example train split"
    )
    if coverage.epochs < 1 and warm_started:
        text += ", warm-started from a model of the earlier spans"
    elif coverage_warns(coverage, warm_started):
        text += (
            f"; WARNING: {100 * (1 - coverage.epochs):.0f}% of it was never seen "
            "(train longer: --epochs or more --train-steps)"
        )
    return text


def coverage_warns(coverage, warm_started: bool = False) -> bool:
    """Whether ``coverage_text`` warns."""
    return coverage.epochs < 1 and not warm_started


def not_pushed_reasons(blessed: bool | None, blocked_by_drift: str | None) -> list[str]:
    """Why a model was not pushed: not blessed, or blessed and held back for drift."""
    reasons = []
    if blessed is False:
        reasons.append("the Evaluator did not bless the model")
    if blocked_by_drift:
        reasons.append(
            f"this span drifted from the previous one: {blocked_by_drift}; "
            "--on-drift warn pushes anyway"
        )
    return reasons


def warm_started(report: dict | None) -> bool:
    """Whether the Trainer's warm-start report (``warm_start.read_report``) says it did."""
    return bool(report and report.get("warm_started"))
