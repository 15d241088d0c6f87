"""A run's spans as its executions recorded them: its window's conversions and what
Transform recorded of its analysis (summarized by ``daily.window_summary``), and the
drift from the previous span."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.daily.resolvers import WINDOW_RESOLVER
from tfrecord_pipelines.components.daily.window_summary import WindowSummary, summarize_conversions
from tfrecord_pipelines.components.keys import (
    ANALYSIS_KEY,
    DRIFT_CHECK_ID,
    DRIFT_REPORT_PROPERTY,
    EXAMPLE_GEN_ID,
    PREVIOUS_SPAN_PROPERTY,
    SHARD_PLAN_KEY,
    TRANSFORM_ID,
)
from tfrecord_pipelines.components.spans.artifacts import conversion

if TYPE_CHECKING:
    from tfx import types

    # Types only: the Reporter task on Kubeflow reads its window from artifacts, not ML Metadata.
    from tfrecord_pipelines.local.run_record import NodeExecution


def recorded_analysis(run: dict[str, NodeExecution]) -> str:
    """What the run's Transform recorded of its analysis (its graph's
    ``keys.ANALYSIS_KEY``, JSON); "" when it recorded none."""
    transform = run.get(TRANSFORM_ID)
    graph = transform.output(keys.TRANSFORM_GRAPH_KEY) if transform is not None else None
    properties = graph.custom_properties if graph is not None else {}
    return properties[ANALYSIS_KEY].string_value if ANALYSIS_KEY in properties else ""


def summarize_window(run: dict[str, NodeExecution]) -> WindowSummary | None:
    """The window of a run with ``--window``; None for a run without one."""
    transform = run.get(TRANSFORM_ID)
    if WINDOW_RESOLVER not in run or transform is None:
        return None
    example_gen = run.get(EXAMPLE_GEN_ID)
    own = (
        example_gen.output(keys.EXAMPLES_KEY)
        if example_gen and example_gen.state == "complete"
        else None
    )
    conversions = []
    for artifact in transform.inputs.get(keys.EXAMPLES_KEY, []):
        props = artifact.custom_properties
        span, version = conversion(props)
        plan = props[SHARD_PLAN_KEY].string_value if SHARD_PLAN_KEY in props else ""
        conversions.append(
            (artifact.uri, span, version, plan, own is not None and own.id == artifact.id)
        )
    return summarize_conversions(conversions, recorded_analysis(run))


def drift_of(anomalies: types.Artifact) -> tuple[int, dict[str, dict]] | None:
    """The previous span and each feature's drift from it, from DriftCheck's output as a
    Kubeflow task gets it; None without a comparison."""
    if not anomalies.has_custom_property(PREVIOUS_SPAN_PROPERTY):
        return None
    report = json.loads(anomalies.get_string_custom_property(DRIFT_REPORT_PROPERTY))
    return anomalies.get_int_custom_property(PREVIOUS_SPAN_PROPERTY), report


def read_drift(run: dict[str, NodeExecution]) -> tuple[int, dict[str, dict]] | None:
    """The previous span and each feature's drift from it (``{name: {measure, value,
    threshold, drifted}}``), as DriftCheck recorded them; None without a comparison."""
    node = run.get(DRIFT_CHECK_ID)
    anomalies = node.output(keys.ANOMALIES_KEY) if node else None
    props = anomalies.custom_properties if anomalies is not None else {}
    if PREVIOUS_SPAN_PROPERTY not in props:
        return None
    report = json.loads(props[DRIFT_REPORT_PROPERTY].string_value)
    return props[PREVIOUS_SPAN_PROPERTY].int_value, report
