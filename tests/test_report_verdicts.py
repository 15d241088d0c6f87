"""The report's verdicts say what the printed summary says, from one source (report.verdicts):
why a model was not pushed, and whether less than an epoch is a warning. One case per verdict:
blessed and pushed, not blessed, blessed but held back for drift, warm-started."""

from __future__ import annotations

import html as html_text
import re

import pytest

from tfrecord_pipelines.components.trainer.training_length import (
    TrainingLength,
    write_training_report,
)
from tfrecord_pipelines.components.trainer.warm_start import WarmStart, write_report
from tfrecord_pipelines.report import verdicts
from tfrecord_pipelines.report.contents import RunArtifacts, RunReport, read_sections
from tfrecord_pipelines.report.render import render

# Span 4 of 4: 334 steps of 64 over a 60,000-row window: 0.36 epochs.
SHORT = TrainingLength(steps=334, batch_size=64, train_records=60_000, asked="default")
FULL = TrainingLength(steps=1000, batch_size=64, train_records=6_000, asked="default")
DRIFTED = "x (L-infinity 0.4 > 0.3)"


def _page(tmp_path, length, warm: bool, **push) -> tuple[str, str]:
    model_run = tmp_path / "model_run"
    write_training_report(str(model_run), length)
    base = WarmStart(
        base_model="/serving/events/1",
        reason="its inputs and vocabularies are this model's",
        weights="/serving/events/1/variables/variables" if warm else None,
        new_share=0.25,
    )
    write_report(str(model_run), base, steps=length.steps, from_scratch=4 * length.steps)
    artifacts = RunArtifacts(model_run_uri=str(model_run), pusher_finished=True, **push)
    fields = read_sections(artifacts)
    html = render(RunReport(pipeline="events", run_id="run-1", written_by="a test", **fields))
    coverage = re.search(r'<p id="coverage" class="(\w*)">(.*?)</p>', html, re.S)
    push_line = re.search(r'<p id="push">(.*?)</p>', html, re.S).group(1)
    return (coverage.group(1), html_text.unescape(coverage.group(2))), push_line


def test_blessed_and_pushed(tmp_path):
    (kind, coverage), push = _page(
        tmp_path, FULL, warm=False, blessed=True, pushed_model="/serving/events/2"
    )
    assert push == 'Pushed to <span class="path">/serving/events/2</span>'
    assert kind == "" and coverage == f"Trained on {verdicts.coverage_text(FULL)}."


def test_not_blessed(tmp_path):
    _, push = _page(tmp_path, FULL, warm=False, blessed=False)
    assert push == "Not pushed: the Evaluator did not bless the model."


def test_blessed_but_held_back_for_drift(tmp_path):
    _, push = _page(tmp_path, FULL, warm=False, blessed=True, blocked_by_drift=DRIFTED)
    push = html_text.unescape(push)
    assert push == (
        f"Not pushed: this span drifted from the previous one: {DRIFTED}; --on-drift warn "
        "pushes anyway."
    )
    assert "did not bless" not in push
    assert verdicts.not_pushed_reasons(True, DRIFTED) == [push[len("Not pushed: ") : -1]]


@pytest.mark.parametrize("warm", [True, False])
def test_less_than_an_epoch_warns_unless_warm_started(tmp_path, warm):
    (kind, coverage), _ = _page(tmp_path, SHORT, warm=warm, blessed=True, pushed_model="/s/2")
    assert coverage == f"Trained on {verdicts.coverage_text(SHORT, warm)}."
    if warm:
        assert kind == "" and "never seen" not in coverage
        assert coverage.endswith("warm-started from a model of the earlier spans.")
    else:
        assert kind == "warn" and "64% of it was never seen" in coverage
