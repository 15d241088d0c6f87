"""The Reporter's executor: the run report, written from its input artifacts as a
``system.HTML`` page, where Kubeflow Pipelines' UI shows it."""

from __future__ import annotations

import os
from typing import Any

from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils
from tfx.types import standard_component_specs as specs

from tfrecord_pipelines.components import ui_artifacts
from tfrecord_pipelines.components.example_gen.keys import QUARANTINE_KEY
from tfrecord_pipelines.components.pusher.executor import BLOCKED_PROPERTY
from tfrecord_pipelines.report.contents import RunArtifacts, RunReport, read_sections
from tfrecord_pipelines.report.render import render

PIPELINE_NAME_KEY = "pipeline_name"
IMAGES_KEY = "images"
REPORT_KEY = "report"
WRITTEN_BY = "the run's Reporter task, from its input artifacts"
COMPONENTS_ELSEWHERE = (
    "Each task's state and duration: on the run's page in Kubeflow Pipelines' UI. This page "
    "was written by a task of the run, which sees the other tasks' artifacts, not their times."
)


def _single(input_dict: dict[str, list[types.Artifact]], key: str) -> types.Artifact | None:
    found = input_dict.get(key) or []
    return artifact_utils.get_single_instance(found) if found else None


def _uri(input_dict: dict[str, list[types.Artifact]], key: str) -> str | None:
    artifact = _single(input_dict, key)
    return artifact.uri if artifact is not None else None


def run_artifacts(input_dict: dict[str, list[types.Artifact]], images: bool) -> RunArtifacts:
    """Where the Reporter's inputs are, and what the blessing and the push say."""
    blessing = _single(input_dict, specs.BLESSING_KEY)
    pushed = _single(input_dict, specs.PUSHED_MODEL_KEY)
    was_pushed = pushed is not None and pushed.get_int_custom_property("pushed") == 1
    blocked = pushed is not None and pushed.has_custom_property(BLOCKED_PROPERTY)
    return RunArtifacts(
        examples_uri=_uri(input_dict, specs.EXAMPLES_KEY),
        images=images,
        quarantine_uri=_uri(input_dict, QUARANTINE_KEY),
        statistics_uri=_uri(input_dict, specs.STATISTICS_KEY),
        anomalies_uri=_uri(input_dict, specs.ANOMALIES_KEY),
        schema_uri=_uri(input_dict, specs.SCHEMA_KEY),
        model_run_uri=_uri(input_dict, specs.MODEL_RUN_KEY),
        evaluation_uri=_uri(input_dict, specs.EVALUATION_KEY),
        blessed=(
            blessing.get_int_custom_property("blessed") == 1 if blessing is not None else None
        ),
        pusher_finished=pushed is not None,
        pushed_model=(
            pushed.get_string_custom_property("pushed_destination") if was_pushed else None
        ),
        blocked_by_drift=(pushed.get_string_custom_property(BLOCKED_PROPERTY) if blocked else None),
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
        page = artifact_utils.get_single_instance(output_dict[REPORT_KEY])
        fields = read_sections(run_artifacts(input_dict, bool(exec_properties[IMAGES_KEY])))
        fields["missing"]["components"] = COMPONENTS_ELSEWHERE
        report = RunReport(
            pipeline=exec_properties[PIPELINE_NAME_KEY],
            run_id=run_folder(page.uri),
            written_by=WRITTEN_BY,
            **fields,
        )
        ui_artifacts.write_text(page, render(report))
