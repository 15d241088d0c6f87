"""What a windowed run's spans hold and how Transform came by each one's analysis.

One summary for every reader: the local report reads the window's conversions from
ML Metadata, the Reporter task on Kubeflow from SpanWindow's artifacts; both hand
them here.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

from tfrecord_pipelines.components.daily.resolvers import span_of
from tfrecord_pipelines.components.example_gen.shard_plan_report import ShardPlanReport
from tfrecord_pipelines.components.keys import ANALYSIS_KEY, SHARD_PLAN_KEY
from tfrecord_pipelines.components.storage.launcher_copies import remote_uri

if TYPE_CHECKING:
    from tfx import types


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


def summarize_conversions(conversions: list[tuple], analysis: str) -> WindowSummary:
    """The window of ``conversions`` (each: its folder, span, version, shard plan's JSON and
    whether this run converted it), with what Transform recorded of its analysis (the
    graph's ``keys.ANALYSIS_KEY``, JSON; "" when it recorded none): the rows of each span
    and which spans Transform analyzed, found in its cache or took from statistics."""
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


def _same(uri: str, other: str) -> bool:
    """Whether two paths name one artifact (a launcher's copy and its URI alike)."""
    return remote_uri(uri).rstrip("/") == remote_uri(other).rstrip("/")


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
            own_uri is not None and _same(artifact.uri, own_uri),
        )
        for artifact in window
    ]
    analysis = graph.get_string_custom_property(ANALYSIS_KEY) if graph is not None else ""
    return summarize_conversions(conversions, analysis)
