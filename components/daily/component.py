"""SpanWindow and RecordRun: a window of spans, the drift check's previous span, the warm
start and the analyzer cache on Kubeflow Pipelines, from the daily state in the object store.

A local run picks these from ML Metadata with TFX Resolvers
(``daily.resolvers``), which Kubeflow Pipelines' open-source backend does not
run. On Kubeflow, SpanWindow follows ExampleGen: it records ExampleGen's
conversion of the run's span, then picks, by the same rules
(``daily.choices``), from every run's records:

- ``window``: the window's conversions (Examples), one per span;
- ``window_statistics``: ExampleGen's statistics of each (Transform's analysis);
- ``previous_statistics``: the statistics of the span before the run's (DriftCheck);
- ``base_model``: the newest blessed model trained on earlier spans only (the warm start);
- ``baseline_model``: the newest blessed model (the Evaluator's baseline);
- ``analyzer_cache``: the newest analyzer cache of a Transform over earlier spans only.

Each output stands for 0 or more artifacts (``MEMBERS_PROPERTY``); the
Kubeflow entry point hands the task that reads it those artifacts. RecordRun,
after the Evaluator, records what the run trained: the model, its blessing,
the spans read and Transform's analyzer cache.
"""

from __future__ import annotations

from tfx import types
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.daily import executor
from tfrecord_pipelines.components.example_gen.component import Quarantine

# SpanWindow's outputs and their types.
WINDOW_OUTPUTS = {
    keys.WINDOW_KEY: standard_artifacts.Examples,
    keys.WINDOW_STATISTICS_KEY: standard_artifacts.ExampleStatistics,
    keys.PREVIOUS_STATISTICS_KEY: standard_artifacts.ExampleStatistics,
    keys.BASE_MODEL_KEY: standard_artifacts.Model,
    keys.BASELINE_MODEL_KEY: standard_artifacts.Model,
    keys.ANALYZER_CACHE_KEY: standard_artifacts.TransformCache,
}


class SpanWindowSpec(ComponentSpec):
    """SpanWindow's inputs, parameters and outputs."""

    PARAMETERS = {
        keys.STATE_DIR_KEY: ExecutionParameter(type=str),
        keys.NUM_SPANS_KEY: ExecutionParameter(type=int),
        keys.DATA_PATTERN_KEY: ExecutionParameter(type=str),
    }
    INPUTS = {
        keys.EXAMPLES_KEY: ChannelParameter(type=standard_artifacts.Examples),
        keys.STATISTICS_KEY: ChannelParameter(type=standard_artifacts.ExampleStatistics),
        keys.QUARANTINE_KEY: ChannelParameter(type=Quarantine, optional=True),
    }
    OUTPUTS = {key: ChannelParameter(type=kind) for key, kind in WINDOW_OUTPUTS.items()}


class SpanWindow(base_component.BaseComponent):
    """Records the run's conversion and picks what the run builds on; see the module docstring."""

    SPEC_CLASS = SpanWindowSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.SpanWindowExecutor)

    def __init__(
        self,
        examples: types.BaseChannel,
        statistics: types.BaseChannel,
        state_dir: str,
        window: int,
        data_pattern: str,
        quarantine: types.BaseChannel | None = None,
    ):
        """Builds the component.

        Args:
          examples: ExampleGen's conversion of the run's span.
          statistics: ExampleGen's statistics of it.
          state_dir: the daily state's folder (a bucket URI on a cluster).
          window: the window's length in spans.
          data_pattern: the data's path with its span spec, to tell a span that
            was never converted from one that is not on disk.
          quarantine: ExampleGen's quarantine of the span, recorded with it.

        Raises:
          ValueError: for a window under 1 span.
        """
        if window < 1:
            raise ValueError(f"A window holds at least 1 span, got {window}.")
        super().__init__(
            spec=SpanWindowSpec(
                examples=examples,
                statistics=statistics,
                quarantine=quarantine,
                state_dir=state_dir,
                num_spans=window,
                data_pattern=data_pattern,
                **{key: types.Channel(type=kind) for key, kind in WINDOW_OUTPUTS.items()},
            )
        )


class RecordRunSpec(ComponentSpec):
    """RecordRun's inputs and parameter; it has no output."""

    PARAMETERS = {keys.STATE_DIR_KEY: ExecutionParameter(type=str)}
    INPUTS = {
        keys.EXAMPLES_KEY: ChannelParameter(type=standard_artifacts.Examples),
        keys.MODEL_KEY: ChannelParameter(type=standard_artifacts.Model),
        keys.BLESSING_KEY: ChannelParameter(type=standard_artifacts.ModelBlessing),
        keys.ANALYZER_CACHE_KEY: ChannelParameter(
            type=standard_artifacts.TransformCache, optional=True
        ),
    }
    OUTPUTS = {}


class RecordRun(base_component.BaseComponent):
    """Records the run's model, blessing, spans and analyzer cache in the daily state."""

    SPEC_CLASS = RecordRunSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.RecordRunExecutor)

    def __init__(
        self,
        examples: types.BaseChannel,
        model: types.BaseChannel,
        blessing: types.BaseChannel,
        state_dir: str,
        analyzer_cache: types.BaseChannel | None = None,
    ):
        """Builds the component.

        Args:
          examples: the window the Trainer read (SpanWindow's examples).
          model: the Trainer's model.
          blessing: the Evaluator's blessing of it.
          state_dir: the daily state's folder.
          analyzer_cache: Transform's updated analyzer cache, if any.
        """
        super().__init__(
            spec=RecordRunSpec(
                examples=examples,
                model=model,
                blessing=blessing,
                analyzer_cache=analyzer_cache,
                state_dir=state_dir,
            )
        )
