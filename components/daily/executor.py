"""SpanWindow's and RecordRun's executors (``component``)."""

from __future__ import annotations

import json
import logging
from typing import Any

from tfx import types
from tfx.components.evaluator import constants as evaluator_constants
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.daily import daily_state
from tfrecord_pipelines.components.daily.window import window_spans
from tfrecord_pipelines.components.spans import split_data_path
from tfrecord_pipelines.components.spans.artifacts import span_of, version_of


def set_members(reference: types.Artifact, members: list[dict]) -> None:
    """Makes ``reference`` stand for ``members`` (TFX's JSON of each artifact)."""
    reference.set_string_custom_property(keys.MEMBERS_PROPERTY, json.dumps(members))


def _never_converted(data_pattern: str, window: range, converted: set[int]) -> list[int]:
    """The window's spans that are on disk but that no run converted."""
    pattern = split_data_path(data_pattern)
    on_disk = {f.span for f in pattern.spans()} if pattern else set()
    return sorted((on_disk & set(window)) - converted)


class SpanWindowExecutor(base_executor.BaseExecutor):
    """Records the run's conversion, then picks the window, the previous span's statistics,
    the base model, the baseline and the analyzer cache from the daily state."""

    def Do(  # noqa: N802 - TFX API
        self,
        input_dict: dict[str, list[types.Artifact]],
        output_dict: dict[str, list[types.Artifact]],
        exec_properties: dict[str, Any],
    ) -> None:
        """See the class docstring.

        Raises:
          ValueError: in one line, when a span of the window is on disk but no run converted it.
        """
        state_dir = exec_properties[keys.STATE_DIR_KEY]
        num_spans = exec_properties[keys.NUM_SPANS_KEY]
        data_pattern = exec_properties[keys.DATA_PATTERN_KEY]
        examples = artifact_utils.get_single_instance(input_dict[keys.EXAMPLES_KEY])
        statistics = artifact_utils.get_single_instance(input_dict[keys.STATISTICS_KEY])
        span = span_of(examples)
        quarantine = input_dict.get(keys.QUARANTINE_KEY) or [None]
        daily_state.record_conversion(
            state_dir, span, version_of(examples), examples, statistics, quarantine[0]
        )

        window, previous = daily_state.window_conversions(state_dir, span, num_spans)
        spans = window_spans(span, num_spans)
        never = _never_converted(data_pattern, spans, {c.span for c in window})
        if never:
            listed = ", ".join(map(str, never))
            raise ValueError(
                f"The window of spans {spans.start}-{span} needs span(s) {listed}, which are on "
                f"disk but no run converted: submit a run for each first (submit --span "
                f"{never[0]}), then this one again."
            )
        earlier = daily_state.earlier_runs(state_dir, span)
        base, baseline, cache = earlier.base_model, earlier.baseline_model, earlier.analyzer_cache
        chosen = {
            keys.WINDOW_KEY: [c.item[keys.EXAMPLES_KEY] for c in window],
            keys.WINDOW_STATISTICS_KEY: [c.item[keys.STATISTICS_KEY] for c in window],
            keys.PREVIOUS_STATISTICS_KEY: [previous.item[keys.STATISTICS_KEY]] if previous else [],
            keys.BASE_MODEL_KEY: [base.item[keys.MODEL_KEY]] if base else [],
            keys.BASELINE_MODEL_KEY: [baseline.item[keys.MODEL_KEY]] if baseline else [],
            keys.ANALYZER_CACHE_KEY: [cache.item[keys.ANALYZER_CACHE_KEY]] if cache else [],
        }
        for key, members in chosen.items():
            set_members(artifact_utils.get_single_instance(output_dict[key]), members)
        logging.info(
            "Span %d: window %s; previous span %s; base model %s; analyzer cache of spans %s",
            span,
            [c.span for c in window],
            previous.span if previous else "none",
            sorted(base.spans) if base else "none",
            sorted(cache.spans) if cache else "none",
        )


class RecordRunExecutor(base_executor.BaseExecutor):
    """Records the run's model, its blessing, the spans it read and Transform's cache."""

    def Do(  # noqa: N802 - TFX API
        self,
        input_dict: dict[str, list[types.Artifact]],
        output_dict: dict[str, list[types.Artifact]],
        exec_properties: dict[str, Any],
    ) -> None:
        """See the class docstring."""
        model = artifact_utils.get_single_instance(input_dict[keys.MODEL_KEY])
        blessing = artifact_utils.get_single_instance(input_dict[keys.BLESSING_KEY])
        caches = input_dict.get(keys.ANALYZER_CACHE_KEY) or []
        spans = [span_of(e) for e in input_dict[keys.EXAMPLES_KEY]]
        path = daily_state.record_run(
            exec_properties[keys.STATE_DIR_KEY],
            spans,
            model,
            blessed=blessing.get_int_custom_property(
                evaluator_constants.ARTIFACT_PROPERTY_BLESSED_KEY
            )
            == 1,
            analyzer_cache=caches[0] if caches else None,
        )
        logging.info("Recorded the run over spans %s: %s", sorted(spans), path)
