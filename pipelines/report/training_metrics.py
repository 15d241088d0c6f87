"""The Trainer's verdict as rows of Kubeflow Pipelines' scalar table (``system.Metrics``).

The last training epoch of the Trainer's ``input_stall.json``: its input stall
and host stall (percent of step time), the steps each call ran, and the verdict
(input-bound, host-bound, device-bound or too short to tell), which KFP's UI
shows on the Reporter task's Visualization tab and in its run comparison.
"""

from __future__ import annotations

from tfx.types.artifact import Artifact

from tfrecord_pipelines.components import ui_artifacts
from tfrecord_pipelines.components.trainer.input_stall import (
    HOST_NAME,
    METRIC_NAME,
    final_epoch,
    read_report,
)

INPUT_STALL_ROW = "input stall (% of step time)"
HOST_STALL_ROW = "host stall (% of step time)"
STEPS_PER_CALL_ROW = "steps a call"
VERDICT_ROW = "bound by"


def log_training(metrics: Artifact, model_run_uri: str | None) -> None:
    """Writes the last epoch's rows on ``metrics``; none without the Trainer's report (no
    model run, or a module file's run_fn that writes none)."""
    report = read_report(model_run_uri) if model_run_uri else None
    epoch = final_epoch(report)
    if epoch is None:
        return
    ui_artifacts.log_metric(metrics, INPUT_STALL_ROW, round(100 * epoch[METRIC_NAME], 2))
    if HOST_NAME in epoch:
        ui_artifacts.log_metric(metrics, HOST_STALL_ROW, round(100 * epoch[HOST_NAME], 2))
    calls = report.get("steps_per_call")
    if calls:
        ui_artifacts.log_metric(metrics, STEPS_PER_CALL_ROW, calls)
    ui_artifacts.log_text_metric(metrics, VERDICT_ROW, epoch["verdict"])
