"""A rolling window of spans: which spans it holds, which conversions a store has of them,
and what a run finds on disk against them.

The same rules for every reader of a window: the Resolvers that hand
Transform and the Trainer the window's examples (``resolvers``), the local
runner that converts the window's missing spans first, and the report that
tells a run's window.

ShardedExampleGen converts one span per run. The first run with ``--window
N`` (or a run after days without one) finds spans of its window that no run
converted; the local runner converts each with the pipeline's ExampleGen
alone, one run per span, before the pipeline runs (``plan_window``). A span
whose newest ``{VERSION}`` was not converted counts as not converted. Spans of
the window that are not on disk are named, and the window goes on without
them. ShardedExampleGen records each conversion's span (and
``{VERSION}``) on its Examples, as TFX's ExampleGen driver writes them.
"""

from __future__ import annotations

import dataclasses

from tfrecord_pipelines.components.keys import NODE_CONTEXT, SHARD_PLAN_KEY
from tfrecord_pipelines.components.spans import SpanFolder, SpanPattern
from tfrecord_pipelines.components.spans.artifacts import conversion


def window_spans(end: int, num_spans: int) -> range:
    """The spans of a window of ``num_spans`` ending at ``end`` (its run's span)."""
    if num_spans < 1:
        raise ValueError(f"A window holds at least 1 span, got {num_spans}.")
    return range(end - num_spans + 1, end + 1)


@dataclasses.dataclass(frozen=True)
class WindowPlan:
    """What a window's run finds.

    Attributes:
      end: the window's last span: the run's own.
      on_disk: the window's spans on disk, each at its highest version.
      converted: the spans among them that an earlier run converted at that version.
      missing: the window's spans that are not on disk.
    """

    end: int
    on_disk: tuple[SpanFolder, ...]
    converted: tuple[int, ...]
    missing: tuple[int, ...]

    @property
    def to_convert(self) -> tuple[SpanFolder, ...]:
        """The spans to convert before the run: on disk, not converted, not the run's own."""
        return tuple(f for f in self.on_disk if f.span not in self.converted and f.span != self.end)


def converted_spans(store, pipeline_name: str, node_id: str) -> set[tuple[int, int | None]]:
    """The (span, version) of every conversion the pipeline's ExampleGen (``node_id``) has
    recorded in ML Metadata's ``store``."""
    context = store.get_context_by_type_and_name(NODE_CONTEXT, f"{pipeline_name}.{node_id}")
    if context is None:
        return set()
    found = set()
    for artifact in store.get_artifacts_by_context(context.id):
        props = artifact.custom_properties
        recorded = conversion(props)
        if SHARD_PLAN_KEY in props and recorded is not None:
            found.add(recorded)
    return found


def plan_window(
    pattern: SpanPattern, window: int, end: int, converted: set[tuple[int, int | None]]
) -> WindowPlan:
    """Which of the window's spans are on disk, converted (``converted``: the (span,
    version) of every conversion recorded), or missing."""
    spans = window_spans(end, window)
    on_disk = tuple(f for f in pattern.spans() if f.span in spans)
    found = {f.span for f in on_disk}
    return WindowPlan(
        end=end,
        on_disk=on_disk,
        converted=tuple(f.span for f in on_disk if (f.span, f.version) in converted),
        missing=tuple(s for s in spans if s not in found),
    )
