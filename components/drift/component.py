"""DriftCheck: this span's statistics against the previous span's (TFDV's drift comparators).

Inputs: ``statistics`` (this span's, ExampleGen's), ``previous_statistics``
(the span before it, from ML Metadata; none on a first run), ``schema``.
Output: ``anomalies`` (ExampleAnomalies, as ExampleValidator writes them, of
the train split), with the custom properties ``drift`` (JSON: each feature's
measure, value, threshold and verdict), ``drifted`` (the drifted features,
comma-separated) and ``previous_span``.
"""

from __future__ import annotations

from tfx import types
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.drift import executor
from tfrecord_pipelines.components.drift.thresholds import DEFAULT_MAX_JS, DEFAULT_MAX_LINF


class DriftCheckSpec(ComponentSpec):
    """DriftCheck's inputs, parameters and output."""

    PARAMETERS = {
        keys.MAX_JS_KEY: ExecutionParameter(type=float),
        keys.MAX_LINF_KEY: ExecutionParameter(type=float),
    }
    INPUTS = {
        keys.STATISTICS_KEY: ChannelParameter(type=standard_artifacts.ExampleStatistics),
        keys.PREVIOUS_STATISTICS_KEY: ChannelParameter(
            type=standard_artifacts.ExampleStatistics, optional=True
        ),
        keys.SCHEMA_KEY: ChannelParameter(type=standard_artifacts.Schema),
    }
    OUTPUTS = {
        keys.ANOMALIES_KEY: ChannelParameter(type=standard_artifacts.ExampleAnomalies),
    }


class DriftCheck(base_component.BaseComponent):
    """Compares a span's statistics with the previous span's; see the module docstring."""

    SPEC_CLASS = DriftCheckSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

    def __init__(
        self,
        statistics: types.BaseChannel,
        previous_statistics: types.BaseChannel,
        schema: types.BaseChannel,
        max_js: float = DEFAULT_MAX_JS,
        max_linf: float = DEFAULT_MAX_LINF,
    ):
        """Builds the component.

        Args:
          statistics: this span's ExampleStatistics.
          previous_statistics: the previous span's (may resolve to none).
          schema: the Schema; a feature's own ``drift_comparator`` threshold
            wins over max_js and max_linf.
          max_js: numeric features: the Jensen-Shannon divergence, on common
            bins, above which a feature has drifted.
          max_linf: categorical features: the L-infinity distance of the
            values' shares above which a feature has drifted.

        Raises:
          ValueError: if a threshold is outside (0, 1].
        """
        for name, value in (("max_js", max_js), ("max_linf", max_linf)):
            if not 0 < value <= 1:
                raise ValueError(f"{name} must be within (0, 1], got {value}.")
        super().__init__(
            spec=DriftCheckSpec(
                statistics=statistics,
                previous_statistics=previous_statistics,
                schema=schema,
                max_js=max_js,
                max_linf=max_linf,
                anomalies=types.Channel(type=standard_artifacts.ExampleAnomalies),
            )
        )
