"""The Reporter's executor: the run report, written from its input artifacts as a
``system.HTML`` page, where Kubeflow Pipelines' UI shows it."""

from __future__ import annotations

import os
from typing import Any

from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from tfrecord_pipelines.components import keys, ui_artifacts
from tfrecord_pipelines.report.contents import (
    ARTIFACT_SOURCES,
    RunReport,
    read_sections,
    run_artifacts,
)
from tfrecord_pipelines.report.render import render

WRITTEN_BY = "the run's Reporter task, from its input artifacts"
COMPONENTS_ELSEWHERE = (
    "Each task's state and duration: on the run's page in Kubeflow Pipelines' UI. This page "
    "was written by a task of the run, which sees the other tasks' artifacts, not their times."
)


def run_folder(page_uri: str) -> str:
    """The run's folder's name: pipeline roots hold ``<run>/<task>/<output>`` (KFP's
    driver names the run's folder by its id, under the pipeline's name)."""
    return os.path.basename(os.path.dirname(os.path.dirname(page_uri.rstrip("/"))))


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
          output_dict: ``report``, a ``system.HTML`` artifact.
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
        report = RunReport(
            pipeline=exec_properties[keys.PIPELINE_NAME_KEY],
            run_id=run_folder(page.uri),
            written_by=WRITTEN_BY,
            **fields,
        )
        ui_artifacts.write_text(page, render(report))
