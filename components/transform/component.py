"""TFX's Transform, run by this project's executor, which may take ExampleGen's statistics."""

from __future__ import annotations

from tfx import types
from tfx.components.transform.component import Transform as TfxTransform
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_artifacts, standard_component_specs
from tfx.types.component_spec import ChannelParameter

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.transform import executor


class TransformSpec(standard_component_specs.TransformSpec):
    """TFX's Transform spec plus ExampleGen's statistics of the examples (optional)."""

    INPUTS = {
        **standard_component_specs.TransformSpec.INPUTS,
        keys.STATISTICS_KEY: ChannelParameter(
            type=standard_artifacts.ExampleStatistics, optional=True
        ),
    }


class Transform(TfxTransform):
    """TFX's Transform, its parameters and outputs, run by ``executor.Executor``.

    Outputs as TFX's; the transform_graph artifact also carries the custom
    property ``analysis``: the train splits read, those whose analysis came
    from the analyzer cache, and those whose analysis came from ExampleGen's
    statistics (nothing read).
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(self, statistics: types.BaseChannel | None = None, **kwargs):
        """TFX's Transform (``kwargs``: its arguments), given ExampleGen's statistics.

        Args:
          statistics: ExampleGen's statistics of ``examples``, one artifact per
            span (a window's are merged): the built-in ``preprocessing_fn``
            then takes its analyzers' results from them where they are exact
            (see ``statistics_analysis``); tf.Transform analyzes the rest, with
            its analyzer cache if given one.
          **kwargs: TFX's Transform's arguments.
        """
        super().__init__(**kwargs)
        # TFX's constructor builds (and checks) its own spec class; this one holds the
        # same values and one more input.
        spec = self.spec
        self.spec = TransformSpec(
            **spec.inputs, **spec.outputs, **spec.exec_properties, statistics=statistics
        )
