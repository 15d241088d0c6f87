"""The report of one run as its ML Metadata store tells it: the components' states and
costs, the window of spans and the drift, and the sections its artifacts tell
(``contents``), found through the executions that published them.

A reused execution's artifacts are the earlier run's, linked into this one. A
section whose component did not finish says so instead of failing the report,
so a failed run gets a report too.
"""

from __future__ import annotations

import datetime

from tfx.types import Artifact, artifact_utils
from tfx.types import standard_component_specs as specs

from tfrecord_pipelines.components.data_source import IMAGES
from tfrecord_pipelines.components.keys import (
    EVALUATOR_ID,
    EXAMPLE_GEN_ID,
    NODE_CONTEXT,
    SOURCE_FORMAT_KEY,
)
from tfrecord_pipelines.components.trainer.training_length import TrainingLength
from tfrecord_pipelines.local.component_costs import read_cost
from tfrecord_pipelines.local.run_record import NodeExecution, read_run
from tfrecord_pipelines.report.component_costs import component_costs
from tfrecord_pipelines.report.contents import (
    ARTIFACT_SOURCES,
    ComponentRow,
    RunReport,
    read_sections,
    run_artifacts,
)
from tfrecord_pipelines.report.span_window import read_drift, summarize_window

WRITTEN_BY = "python -m tfrecord_pipelines report, from the run's ML Metadata store and artifacts"


def _time(millis: int) -> str:
    return datetime.datetime.fromtimestamp(millis / 1000).isoformat(sep=" ", timespec="seconds")


def _components(
    store, pipeline_name: str, run: dict[str, NodeExecution], training: TrainingLength | None
) -> list[ComponentRow]:
    rows = []
    costs = {cost.node_id: cost for cost in component_costs(run, training)}
    for node_id, node in run.items():
        execution = node.execution
        finished = node.state in ("complete", "cached", "failed", "canceled")
        metered = read_cost(execution)
        if metered is not None and metered.launch_seconds is not None:
            # Its own launch: the execution's last update is when the run's costs were written.
            seconds = metered.launch_seconds
        elif finished:
            seconds = (
                execution.last_update_time_since_epoch - execution.create_time_since_epoch
            ) / 1000
        else:
            seconds = None
        rows.append(
            ComponentRow(
                node_id,
                node.state,
                _time(execution.create_time_since_epoch),
                seconds,
                costs.get(node_id),
            )
        )
    if not any(node.state in ("failed", "canceled") for node in run.values()):
        return rows
    # A run that stopped: the components earlier runs had and this one never started.
    prefix = f"{pipeline_name}."
    for context in store.get_contexts_by_type(NODE_CONTEXT):
        node_id = context.name[len(prefix) :]
        if context.name.startswith(prefix) and node_id not in run:
            rows.append(ComponentRow(node_id, "not run", "", None))
    return rows


def _output(run: dict[str, NodeExecution], key: str, node_id: str | None = None):
    for node in run.values():
        if node_id not in (None, node.node_id) or node.state not in ("complete", "cached"):
            continue
        artifact = node.output(key)
        if artifact is not None:
            return artifact
    return None


def report_artifacts(store, run: dict[str, NodeExecution]) -> dict[str, Artifact]:
    """The run's artifacts the report reads, by ``ARTIFACT_SOURCES`` key, as TFX artifacts
    (the types the Reporter's executor gets); the ones not produced are absent."""
    found = {key: _output(run, output, node) for key, (node, output) in ARTIFACT_SOURCES.items()}
    found = {key: artifact for key, artifact in found.items() if artifact is not None}
    kinds = {
        kind.id: kind
        for kind in store.get_artifact_types_by_id(sorted({a.type_id for a in found.values()}))
    }
    return {
        key: artifact_utils.deserialize_artifact(kinds[artifact.type_id], artifact)
        for key, artifact in found.items()
    }


def _is_images(run: dict[str, NodeExecution]) -> bool:
    example_gen = run.get(EXAMPLE_GEN_ID)
    properties = example_gen.execution.custom_properties if example_gen else {}
    source_format = properties.get(SOURCE_FORMAT_KEY)
    return source_format is not None and source_format.string_value == IMAGES


def build_run_report(store, pipeline_name: str, run_id: str) -> RunReport:
    """Reads run ``run_id`` of ``pipeline_name`` from its store and artifacts.

    Raises:
      LookupError: if the store has no such run.
    """
    run = read_run(store, pipeline_name, run_id)
    if not run:
        raise LookupError(f"No run {run_id!r} of pipeline {pipeline_name!r} in its metadata.")
    evaluator = run.get(EVALUATOR_ID)
    baseline = evaluator.inputs.get(specs.BASELINE_MODEL_KEY) if evaluator else None
    artifacts = run_artifacts(
        report_artifacts(store, run), _is_images(run), baseline[0].uri if baseline else None
    )
    fields = read_sections(artifacts)
    return RunReport(
        pipeline=pipeline_name,
        run_id=run_id,
        written_by=WRITTEN_BY,
        components=_components(store, pipeline_name, run, fields.get("coverage")),
        window=summarize_window(run),
        drift=read_drift(run),
        **fields,
    )
