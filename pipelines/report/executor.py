"""The Reporter's executor: the run report, written from its input artifacts as a
``system.HTML`` page, where Kubeflow Pipelines' UI shows it."""

from __future__ import annotations

import os
from typing import Any

from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from tfrecord_pipelines.components import keys, ui_artifacts
from tfrecord_pipelines.components.daily.window_summary import window_of_artifacts
from tfrecord_pipelines.report.contents import (
    ARTIFACT_SOURCES,
    RunReport,
    read_sections,
    run_artifacts,
)
from tfrecord_pipelines.report.render import render
from tfrecord_pipelines.report.span_window import drift_of
from tfrecord_pipelines.report.training_metrics import log_training

WRITTEN_BY = "the run's Reporter task, from its input artifacts"
COMPONENTS_ELSEWHERE = (
    "Each task's state and duration: on the run's page in Kubeflow Pipelines' UI. This page "
    "was written by a task of the run, which sees the other tasks' artifacts, not their times."
)


def run_folder(page_uri: str) -> str:
    """The run's folder's name: pipeline roots hold ``<run>/<task>/<output>`` (KFP's
    driver names the run's folder by its id, under the pipeline's name)."""
    return os.path.basename(os.path.dirname(os.path.dirname(page_uri.rstrip("/"))))


def daily_sections(input_dict: dict[str, list[types.Artifact]], found: dict) -> dict:
    """The window and the drift of the daily pipeline on Kubeflow, from its artifacts."""
    fields = {}
    window = input_dict.get(keys.WINDOW_KEY)
    if window:
        own = found.get(keys.EXAMPLES_KEY)
        graphs = input_dict.get(keys.TRANSFORM_GRAPH_KEY) or [None]
        fields["window"] = window_of_artifacts(window, own.uri if own else None, graphs[0])
    drift = input_dict.get(keys.DRIFT_KEY)
    if drift:
        fields["drift"] = drift_of(drift[0])
    return fields


class Executor(base_executor.BaseExecutor):
    """Writes the run report as one self-contained HTML page at the output's URI."""

    def Do(
        self,
        input_dict: dict[str, list[types.Artifact]],
        output_dict: dict[str, list[types.Artifact]],
        exec_properties: dict[str, Any],
    ) -> None:
        """Reads each input's section and writes the page.

        Args:
          input_dict: the run's artifacts, each optional (see ``component``).
          output_dict: ``report``, a ``system.HTML`` artifact, and ``training``, a
            ``system.Metrics`` one (``training_metrics``).
          exec_properties: the pipeline's name and whether its data are images.
        """
        page = artifact_utils.get_single_instance(output_dict[keys.REPORT_KEY])
        found = {
            key: artifact_utils.get_single_instance(input_dict[key])
            for key in ARTIFACT_SOURCES
            if input_dict.get(key)
        }
        fields = read_sections(run_artifacts(found, bool(exec_properties[keys.IMAGES_KEY])))
        fields["missing"]["components"] = COMPONENTS_ELSEWHERE
        fields.update(daily_sections(input_dict, found))
        report = RunReport(
            pipeline=exec_properties[keys.PIPELINE_NAME_KEY],
            run_id=run_folder(page.uri),
            written_by=WRITTEN_BY,
            **fields,
        )
        ui_artifacts.write_text(page, render(report))
        for training in output_dict.get(keys.TRAINING_METRICS_KEY, []):
            model_run = found.get(keys.MODEL_RUN_KEY)
            log_training(training, model_run.uri if model_run else None)
