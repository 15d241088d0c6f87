"""A window's spans on disk against those ML Metadata holds conversions of.

ShardedExampleGen converts one span per run. The first run with ``--window
N`` (or a run after days without one) finds spans of its window that no run
converted; each is converted by the pipeline's ExampleGen alone
(``create_backfill_pipeline``), one LocalDagRunner run per span, before the
pipeline runs. A span whose newest ``{VERSION}`` was not converted counts
as not converted. Spans of the window that are not on disk are named, and
the window goes on without them.
"""

from __future__ import annotations

import dataclasses

from tfrecord_pipelines.components.keys import SHARD_PLAN_KEY
from tfrecord_pipelines.components.spans import SpanFolder, SpanPattern
from tfrecord_pipelines.local.run_record import NODE_CONTEXT


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
    """The (span, version) of every conversion the pipeline's ExampleGen has recorded."""
    context = store.get_context_by_type_and_name(NODE_CONTEXT, f"{pipeline_name}.{node_id}")
    if context is None:
        return set()
    found = set()
    for artifact in store.get_artifacts_by_context(context.id):
        props = artifact.custom_properties
        if SHARD_PLAN_KEY in props and "span" in props:
            version = props["version"].int_value if "version" in props else None
            found.add((props["span"].int_value, version))
    return found


def plan_window(
    pattern: SpanPattern, window: int, end: int, converted: set[tuple[int, int | None]]
) -> WindowPlan:
    """Which of the window's spans are on disk, converted, or missing."""
    on_disk = tuple(f for f in pattern.spans() if end - window < f.span <= end)
    spans = {f.span for f in on_disk}
    return WindowPlan(
        end=end,
        on_disk=on_disk,
        converted=tuple(f.span for f in on_disk if (f.span, f.version) in converted),
        missing=tuple(s for s in range(end - window + 1, end + 1) if s not in spans),
    )
