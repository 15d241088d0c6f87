"""A run's spans as its executions recorded them: the window's rows, what Transform analyzed,
and the drift from the previous span."""

from __future__ import annotations

import dataclasses
import json

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.keys import ANALYSIS_KEY, SHARD_PLAN_KEY
from tfrecord_pipelines.components.spans.resolvers import WINDOW_RESOLVER
from tfrecord_pipelines.components.spans.window import conversion
from tfrecord_pipelines.definition.pipeline import DRIFT_CHECK_ID, EXAMPLE_GEN_ID, TRANSFORM_ID
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

    def spans_of(key: str) -> tuple[int, ...]:
        found = (_span_of_pattern(p, spans_by_uri) for p in analysis.get(key, []))
        return tuple(sorted(s for s in found if s is not None))

    return WindowSummary(
        spans=tuple(sorted(spans, key=lambda s: s.span)),
        analyzed=spans_of("analyzed"),
        from_cache=spans_of("from_cache"),
    )


def read_drift(run: dict[str, NodeExecution]) -> tuple[int, dict[str, dict]] | None:
    """The previous span and each feature's drift from it (``{name: {measure, value,
    threshold, drifted}}``), as DriftCheck recorded them; None without a comparison."""
    node = run.get(DRIFT_CHECK_ID)
    anomalies = node.output(keys.ANOMALIES_KEY) if node else None
    if anomalies is None or "previous_span" not in anomalies.custom_properties:
        return None
    report = json.loads(anomalies.custom_properties["drift"].string_value)
    return anomalies.custom_properties["previous_span"].int_value, report
