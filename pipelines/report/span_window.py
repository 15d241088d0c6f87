"""A run's spans as its executions recorded them: the window's rows, what Transform analyzed,
and the drift from the previous span."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.daily.resolvers import WINDOW_RESOLVER, span_of
from tfrecord_pipelines.components.example_gen.shard_plan_report import ShardPlanReport
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


@dataclasses.dataclass(frozen=True)
class WindowSpan:
    """One span of a window: its number and version, its rows per split, and whether this
    run's ExampleGen converted it (else an earlier run did, and it came from the store)."""

    span: int
    version: int | None
    rows: dict[str, int]
    converted_here: bool = False


@dataclasses.dataclass(frozen=True)
class WindowSummary:
    """The spans Transform and the Trainer read in a windowed run.

    Attributes:
      spans: the window's spans, in order.
      analyzed: the spans whose train split Transform read and analyzed.
      from_cache: the spans whose analysis came from Transform's analyzer cache.
      from_statistics: the spans whose analysis came from ExampleGen's statistics
        alone (no record read).
    """

    spans: tuple[WindowSpan, ...]
    analyzed: tuple[int, ...]
    from_cache: tuple[int, ...]
    from_statistics: tuple[int, ...] = ()

    def rows(self, split: str) -> int:
        """The window's rows of ``split``, all spans together."""
        return sum(s.rows.get(split, 0) for s in self.spans)

    def analyzed_rows(self) -> int:
        """The train rows Transform read: those of the spans its cache lacked."""
        return sum(s.rows.get("train", 0) for s in self.spans if s.span in self.analyzed)


def _span_of_pattern(pattern: str, spans_by_uri: dict[str, int]) -> int | None:
    return next((span for uri, span in spans_by_uri.items() if pattern.startswith(uri + "/")), None)


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
    return _summary(conversions, recorded_analysis(run))


def _summary(conversions: list[tuple], analysis: str) -> WindowSummary:
    """The window of ``conversions`` (each: its folder, span, version, shard plan's JSON and
    whether this run converted it), with what Transform recorded of its analysis (the
    graph's ``keys.ANALYSIS_KEY``, JSON; "" when it recorded none)."""
    spans, spans_by_uri = [], {}
    for uri, span, version, plan_text, own in conversions:
        plan = ShardPlanReport.loads(plan_text)
        rows = plan.split_records if plan else {}
        spans.append(WindowSpan(span, version, rows, own))
        spans_by_uri[uri.rstrip("/")] = span
    analyzed = json.loads(analysis or "{}")

    def spans_of(key: str) -> tuple[int, ...]:
        found = (_span_of_pattern(p, spans_by_uri) for p in analyzed.get(key, []))
        return tuple(sorted(s for s in found if s is not None))

    return WindowSummary(
        spans=tuple(sorted(spans, key=lambda s: s.span)),
        analyzed=spans_of("analyzed"),
        from_cache=spans_of("from_cache"),
        from_statistics=spans_of("from_statistics"),
    )


def window_of_artifacts(
    window: list[types.Artifact], own_uri: str | None, graph: types.Artifact | None
) -> WindowSummary:
    """The window from its Examples artifacts as a Kubeflow task gets them (SpanWindow's),
    this run's conversion at ``own_uri``, and Transform's graph."""
    conversions = [
        (
            artifact.uri,
            span_of(artifact),
            None,
            artifact.get_string_custom_property(SHARD_PLAN_KEY),
            own_uri is not None and artifact.uri.rstrip("/") == own_uri.rstrip("/"),
        )
        for artifact in window
    ]
    analysis = graph.get_string_custom_property(ANALYSIS_KEY) if graph is not None else ""
    return _summary(conversions, analysis)


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
