"""A window's spans on disk against those ML Metadata holds conversions of.

ShardedExampleGen converts one span per run. The first run with ``--window
N`` (or a run after days without one) finds spans of its window that no run
converted; each is converted by the pipeline's ExampleGen alone
(``create_backfill_pipeline``), one LocalDagRunner run per span, before the
pipeline runs (``daily.window.plan_window``). A span whose newest
``{VERSION}`` was not converted counts as not converted. Spans of the window
that are not on disk are named, and the window goes on without them.
"""

from __future__ import annotations

from tfrecord_pipelines.components.keys import NODE_CONTEXT, SHARD_PLAN_KEY
from tfrecord_pipelines.components.spans.artifacts import conversion


def converted_spans(store, pipeline_name: str, node_id: str) -> set[tuple[int, int | None]]:
    """The (span, version) of every conversion the pipeline's ExampleGen has recorded."""
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
