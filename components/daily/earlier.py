"""What a run builds on from earlier runs, and the nodes that find it.

One answer for both runners: a local run finds its window, analyzer cache,
base model and previous span's statistics with TFX Resolvers over ML Metadata
(``resolvers``, ``baseline_model``); a Kubeflow run, whose open-source backend
has no Resolvers, with SpanWindow over the daily state, and records the run
for the next with RecordRun. The pipeline's definition asks for one or the
other and wires what it gets; it decides nothing about the window.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tfx.dsl.components.base.base_node import BaseNode

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.daily.baseline_model import base_model_resolver
from tfrecord_pipelines.components.daily.component import RecordRun, SpanWindow
from tfrecord_pipelines.components.daily.resolvers import (
    CACHE_KEY,
    analyzer_cache_resolver,
    previous_span_statistics_resolver,
    span_window_resolver,
)
from tfrecord_pipelines.components.keys import (
    EVALUATOR_ID,
    EXAMPLE_GEN_ID,
    RECORD_RUN_ID,
    SPAN_WINDOW_ID,
    TRAINER_ID,
    TRANSFORM_ID,
)


@dataclasses.dataclass(frozen=True)
class EarlierRuns:
    """What a run builds on from earlier runs, and the nodes that find it.

    Attributes:
      nodes: the Resolvers (local runs) or SpanWindow (Kubeflow).
      examples: what Transform and the Trainer read: the window's conversions,
        or ExampleGen's own.
      windowed: whether ``examples`` is a window of spans.
      window_statistics: a window's statistics, one per span (Transform's
        analysis); None without a window (ExampleGen's own).
      analyzer_cache: Transform's analyzer cache of earlier spans, or None (off).
      base_model: the Trainer's warm-start model, or None.
      baseline_model: the Evaluator's baseline, the latest blessed model; None:
        resolved after the Trainer (local runs) or none.
      previous_statistics: the previous span's statistics for DriftCheck, or
        None: no drift check.
      span_window: SpanWindow, whose window RecordRun records, or None.
    """

    nodes: tuple[BaseNode, ...] = ()
    examples: Any = None
    windowed: bool = False
    window_statistics: Any = None
    analyzer_cache: Any = None
    base_model: Any = None
    baseline_model: Any = None
    previous_statistics: Any = None
    span_window: SpanWindow | None = None


def from_resolvers(
    example_gen: BaseNode,
    *,
    window: int | None,
    span: int | None,
    in_spans: bool,
    warm_start: bool,
    compare_to_latest_blessed: bool,
) -> EarlierRuns:
    """A local run's: TFX Resolvers over ML Metadata.

    Args:
      example_gen: the run's ExampleGen.
      window: the spans Transform and the Trainer read, ending at ``span``; None
        or 0: ExampleGen's own.
      span: the run's span (None: the data is not in spans, or the latest).
      in_spans: the data is in spans and the run names its span.
      warm_start: start training from the latest blessed model of earlier spans.
      compare_to_latest_blessed: the run compares with earlier models, so it
        also checks drift from the previous span.
    """
    nodes, examples, cache = [], example_gen.outputs[keys.EXAMPLES_KEY], None
    window_statistics = None
    if window:
        if span is None:
            raise ValueError("A window of spans needs its last span: set config.span.")
        resolver = span_window_resolver(example_gen, window, span)
        cache = analyzer_cache_resolver(TRANSFORM_ID, span)
        nodes += [resolver, cache]
        examples = resolver.outputs[keys.EXAMPLES_KEY]
        window_statistics = resolver.outputs[keys.STATISTICS_KEY]
    base_model = previous = None
    if compare_to_latest_blessed and in_spans and warm_start:
        warm = base_model_resolver(TRAINER_ID, EVALUATOR_ID, span)
        nodes.append(warm)
        base_model = warm.outputs[keys.MODEL_KEY]
    if compare_to_latest_blessed and in_spans:
        resolver = previous_span_statistics_resolver(EXAMPLE_GEN_ID, span)
        nodes.append(resolver)
        previous = resolver.outputs[keys.STATISTICS_KEY]
    return EarlierRuns(
        nodes=tuple(nodes),
        examples=examples,
        windowed=bool(window),
        window_statistics=window_statistics,
        analyzer_cache=cache.outputs[CACHE_KEY] if cache else None,
        base_model=base_model,
        previous_statistics=previous,
    )


def from_daily_state(
    example_gen: BaseNode, state_dir: str, *, window: int, data_pattern: str, warm_start: bool
) -> EarlierRuns:
    """A Kubeflow run's: SpanWindow over the daily state in ``state_dir``, for a window of
    ``window`` spans of the data at ``data_pattern``."""
    span_window = SpanWindow(
        examples=example_gen.outputs[keys.EXAMPLES_KEY],
        statistics=example_gen.outputs[keys.STATISTICS_KEY],
        quarantine=example_gen.outputs[keys.QUARANTINE_KEY],
        state_dir=state_dir,
        window=window,
        data_pattern=data_pattern,
    ).with_id(SPAN_WINDOW_ID)
    return EarlierRuns(
        nodes=(span_window,),
        examples=span_window.outputs[keys.WINDOW_KEY],
        windowed=True,
        window_statistics=span_window.outputs[keys.WINDOW_STATISTICS_KEY],
        analyzer_cache=span_window.outputs[keys.ANALYZER_CACHE_KEY],
        base_model=span_window.outputs[keys.BASE_MODEL_KEY] if warm_start else None,
        baseline_model=span_window.outputs[keys.BASELINE_MODEL_KEY],
        previous_statistics=span_window.outputs[keys.PREVIOUS_STATISTICS_KEY],
        span_window=span_window,
    )


def record_run(
    earlier: EarlierRuns, transform: BaseNode, trainer: BaseNode, blessing, state_dir: str
) -> RecordRun:
    """Kubeflow's window: the run's model (``trainer``'s), its ``blessing`` and
    ``transform``'s updated analyzer cache, into the daily state."""
    return RecordRun(
        examples=earlier.examples,
        model=trainer.outputs[keys.MODEL_KEY],
        blessing=blessing,
        state_dir=state_dir,
        analyzer_cache=transform.outputs[keys.UPDATED_ANALYZER_CACHE_KEY],
    ).with_id(RECORD_RUN_ID)
