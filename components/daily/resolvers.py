"""The Resolvers of spans: a window's examples, the previous span's statistics and the
analyzer cache of earlier spans, picked from ML Metadata (local runs: Kubeflow Pipelines'
open-source backend runs no Resolver).

A rolling window of spans is this run's span and the N-1 before it (``window``).

ShardedExampleGen converts one span per execution; Transform and the Trainer
read the window's spans, which earlier runs converted. TFX 1.16's
``SpanRangeStrategy`` with a ``RollingRange`` comes close but not close
enough for daily runs:
- its window ends at the newest span in the store, so a run asked for an
  earlier span (``--span 20``, a re-run of a past day) would train on later
  days;
- it returns every artifact in range: a span converted twice (a new
  ``{VERSION}``, a changed converter) would be read twice.
``SpanWindowStrategy`` ends the window at this run's span (pinned when the
run starts) and keeps, per span, the highest version's newest conversion,
with the statistics ExampleGen wrote of it (Transform's analysis). Transform's analyzer
cache comes back through a second resolver: the latest ``updated_analyzer_cache`` of a
Transform that read earlier spans only.
"""

from __future__ import annotations

from ml_metadata.proto import metadata_store_pb2
from tfx import types
from tfx.dsl.components.base import base_node
from tfx.dsl.components.common.resolver import Resolver, ResolverStrategy
from tfx.types import standard_artifacts
from tfx.types.channel import Channel

from tfrecord_pipelines.components.daily import choices
from tfrecord_pipelines.components.keys import (
    EXAMPLES_KEY,
    SHARD_PLAN_KEY,
    SPAN_PROPERTY,
    STATISTICS_KEY,
    UPDATED_ANALYZER_CACHE_KEY,
)
from tfrecord_pipelines.components.spans.artifacts import has_span, span_of, version_of

WINDOW_RESOLVER = "span_window_resolver"
PREVIOUS_SPAN_RESOLVER = "previous_span_resolver"
ANALYZER_CACHE_RESOLVER = "analyzer_cache_resolver"
# The analyzer cache Resolver's output.
CACHE_KEY = "cache"


class SpanWindowStrategy(ResolverStrategy):
    """Spans ``end - num_spans + 1`` to ``end`` of ``examples``: per span the highest version's
    newest conversion, in span order (``choices.window_conversions``); and of ``statistics``,
    those the same ExampleGen executions wrote (each conversion's own)."""

    def __init__(self, num_spans: int, end: int):
        self._num_spans = num_spans
        self._end = end

    def resolve_artifacts(self, store, input_dict: dict[str, list[types.Artifact]]):  # noqa: D102
        # Only ExampleGen's own conversions: a materializing Transform's output is Examples too.
        found = [
            _converted(a)
            for a in input_dict.get(EXAMPLES_KEY, [])
            if a.has_custom_property(SHARD_PLAN_KEY)
        ]
        window = [c.item for c in choices.window_conversions(found, self._end, self._num_spans)]
        resolved = {EXAMPLES_KEY: window}
        if STATISTICS_KEY in input_dict:
            resolved[STATISTICS_KEY] = _written_beside(store, window, input_dict[STATISTICS_KEY])
        return resolved


def _written_beside(
    store, artifacts: list[types.Artifact], candidates: list[types.Artifact]
) -> list[types.Artifact]:
    """The ``candidates`` that the executions which wrote ``artifacts`` also wrote."""
    events = store.get_events_by_artifact_ids([a.id for a in artifacts])
    producers = {e.execution_id for e in events if e.type == metadata_store_pb2.Event.OUTPUT}
    siblings = {
        e.artifact_id
        for e in store.get_events_by_execution_ids(sorted(producers))
        if e.type == metadata_store_pb2.Event.OUTPUT
    }
    return [a for a in candidates if a.id in siblings]


def _converted(artifact: types.Artifact) -> choices.Converted:
    return choices.Converted(span_of(artifact), version_of(artifact), artifact.id, artifact)


class PreviousSpanStrategy(ResolverStrategy):
    """The newest artifact of the highest span before ``end`` (its highest version), or none
    (``choices.previous_conversion``)."""

    def __init__(self, end: int):
        self._end = end

    def resolve_artifacts(self, store, input_dict: dict[str, list[types.Artifact]]):  # noqa: D102
        result = {}
        for key, found in input_dict.items():
            previous = choices.previous_conversion(
                [_converted(a) for a in found if has_span(a)], self._end
            )
            result[key] = [previous.item] if previous else []
        return result


def spans_read(store, artifact_id: int) -> set[int]:
    """The spans of the examples that the execution which produced ``artifact_id`` read."""
    events = store.get_events_by_artifact_ids([artifact_id])
    producers = [e.execution_id for e in events if e.type == metadata_store_pb2.Event.OUTPUT]
    inputs = [
        e.artifact_id
        for e in store.get_events_by_execution_ids(producers)
        if e.type == metadata_store_pb2.Event.INPUT
    ]
    return {
        a.custom_properties[SPAN_PROPERTY].int_value
        for a in store.get_artifacts_by_id(inputs)
        if SPAN_PROPERTY in a.custom_properties
    }


class LatestBeforeSpanStrategy(ResolverStrategy):
    """The newest artifact of each input whose producer read only spans before ``end``, or
    none (TFX's LatestArtifactStrategy fails the resolver when there is none: a first run
    has no analyzer cache yet).

    Not simply the newest: a re-run of day 3 would get day 3's own analyzer cache,
    Transform's inputs would change on every re-run, and it would never be reused.
    """

    def __init__(self, end: int):
        self._end = end

    def resolve_artifacts(self, store, input_dict: dict[str, list[types.Artifact]]):  # noqa: D102
        result = {}
        for key, found in input_dict.items():
            trained = [
                choices.Trained(frozenset(spans_read(store, a.id)), False, a.id, a) for a in found
            ]
            cache = choices.analyzer_cache(trained, self._end)
            result[key] = [cache.item] if cache else []
        return result


def outputs_of(artifact_type: type, component_id: str, output_key: str) -> Channel:
    """A plain Channel of every artifact ``component_id`` recorded under ``output_key``, in
    any run: what a Resolver picks from."""
    return Channel(type=artifact_type, producer_component_id=component_id, output_key=output_key)


def span_window_resolver(example_gen: base_node.BaseNode, num_spans: int, end: int) -> Resolver:
    """The Resolver handing Transform and the Trainer the window's Examples, and Transform
    their statistics (``keys.STATISTICS_KEY``: its analysis from them).

    Args:
      example_gen: the ExampleGen whose conversions fill the window; the
        Resolver runs after it, so that this run's span is among them.
      num_spans: the window's length in spans.
      end: the window's last span: the run's own.
    """
    resolver = Resolver(
        strategy_class=SpanWindowStrategy,
        config={"num_spans": num_spans, "end": end},
        # A plain Channel: every conversion ExampleGen recorded, of any run.
        examples=outputs_of(standard_artifacts.Examples, example_gen.id, EXAMPLES_KEY),
        statistics=outputs_of(standard_artifacts.ExampleStatistics, example_gen.id, STATISTICS_KEY),
    ).with_id(WINDOW_RESOLVER)
    resolver.add_upstream_node(example_gen)
    return resolver


def previous_span_statistics_resolver(example_gen_id: str, end: int) -> Resolver:
    """The Resolver handing DriftCheck the statistics of the span before ``end``."""
    return Resolver(
        strategy_class=PreviousSpanStrategy,
        config={"end": end},
        statistics=outputs_of(standard_artifacts.ExampleStatistics, example_gen_id, STATISTICS_KEY),
    ).with_id(PREVIOUS_SPAN_RESOLVER)


def analyzer_cache_resolver(transform_id: str, end: int) -> Resolver:
    """The Resolver handing Transform the analyzer cache the last execution over spans before
    ``end`` wrote."""
    return Resolver(
        strategy_class=LatestBeforeSpanStrategy,
        config={"end": end},
        cache=outputs_of(
            standard_artifacts.TransformCache, transform_id, UPDATED_ANALYZER_CACHE_KEY
        ),
    ).with_id(ANALYZER_CACHE_RESOLVER)
