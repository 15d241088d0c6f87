"""A run's spans as its executions recorded them: the window's rows, what Transform analyzed,
and the drift from the previous span."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.keys import ANALYSIS_KEY, SHARD_PLAN_KEY
from tfrecord_pipelines.components.spans.resolvers import WINDOW_RESOLVER, span_of
from tfrecord_pipelines.components.spans.window import conversion
from tfrecord_pipelines.definition.pipeline import DRIFT_CHECK_ID, EXAMPLE_GEN_ID, TRANSFORM_ID

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
    """

    spans: tuple[WindowSpan, ...]
    analyzed: tuple[int, ...]
    from_cache: tuple[int, ...]

    def rows(self, split: str) -> int:
        """The window's rows of ``split``, all spans together."""
        return sum(s.rows.get(split, 0) for s in self.spans)

    def analyzed_rows(self) -> int:
        """The train rows Transform read: those of the spans its cache lacked."""
        return sum(s.rows.get("train", 0) for s in self.spans if s.span in self.analyzed)


def _span_of_pattern(pattern: str, spans_by_uri: dict[str, int]) -> int | None:
    return next((span for uri, span in spans_by_uri.items() if pattern.startswith(uri + "/")), None)


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
    spans, spans_by_uri = [], {}
    for artifact in transform.inputs.get(keys.EXAMPLES_KEY, []):
        props = artifact.custom_properties
        plan = json.loads(props[SHARD_PLAN_KEY].string_value) if SHARD_PLAN_KEY in props else {}
        span, version = conversion(props)
        rows = {name: split["records"] for name, split in plan.get("splits", {}).items()}
        spans.append(WindowSpan(span, version, rows, own is not None and own.id == artifact.id))
        spans_by_uri[artifact.uri.rstrip("/")] = span
    graph = transform.output(keys.TRANSFORM_GRAPH_KEY)
    analysis = {}
    if graph is not None and ANALYSIS_KEY in graph.custom_properties:
        analysis = json.loads(graph.custom_properties[ANALYSIS_KEY].string_value)
    return _summary(spans, spans_by_uri, analysis)


def _summary(
    spans: list[WindowSpan], spans_by_uri: dict[str, int], analysis: dict
) -> WindowSummary:
    """The window of ``spans`` (their conversions' folders: ``spans_by_uri``), with what
    Transform recorded of its analysis (``keys.ANALYSIS_KEY``)."""

    def spans_of(key: str) -> tuple[int, ...]:
        found = (_span_of_pattern(p, spans_by_uri) for p in analysis.get(key, []))
        return tuple(sorted(s for s in found if s is not None))

    return WindowSummary(
        spans=tuple(sorted(spans, key=lambda s: s.span)),
        analyzed=spans_of("analyzed"),
        from_cache=spans_of("from_cache"),
    )


def window_of_artifacts(
    window: list[types.Artifact], own_uri: str | None, graph: types.Artifact | None
) -> WindowSummary:
    """The window from its Examples artifacts as a Kubeflow task gets them (SpanWindow's),
    this run's conversion at ``own_uri``, and Transform's graph."""
    spans, spans_by_uri = [], {}
    for artifact in window:
        plan = json.loads(artifact.get_string_custom_property(SHARD_PLAN_KEY) or "{}")
        rows = {name: split["records"] for name, split in plan.get("splits", {}).items()}
        own = own_uri is not None and artifact.uri.rstrip("/") == own_uri.rstrip("/")
        spans.append(WindowSpan(span_of(artifact), None, rows, own))
        spans_by_uri[artifact.uri.rstrip("/")] = span_of(artifact)
    analysis = graph.get_string_custom_property(ANALYSIS_KEY) if graph is not None else ""
    return _summary(spans, spans_by_uri, json.loads(analysis or "{}"))


def drift_of(anomalies: types.Artifact) -> tuple[int, dict[str, dict]] | None:
    """The previous span and each feature's drift from it, from DriftCheck's output as a
    Kubeflow task gets it; None without a comparison."""
    if not anomalies.has_custom_property("previous_span"):
        return None
    report = json.loads(anomalies.get_string_custom_property("drift"))
    return anomalies.get_int_custom_property("previous_span"), report


def read_drift(run: dict[str, NodeExecution]) -> tuple[int, dict[str, dict]] | None:
    """The previous span and each feature's drift from it (``{name: {measure, value,
    threshold, drifted}}``), as DriftCheck recorded them; None without a comparison."""
    node = run.get(DRIFT_CHECK_ID)
    anomalies = node.output(keys.ANOMALIES_KEY) if node else None
    if anomalies is None or "previous_span" not in anomalies.custom_properties:
        return None
    report = json.loads(anomalies.custom_properties["drift"].string_value)
    return anomalies.custom_properties["previous_span"].int_value, report
