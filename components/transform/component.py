"""TFX's Transform, run by this project's executor (which says what it analyzed)."""

from __future__ import annotations

from tfx import v1 as tfx
from tfx.dsl.components.base import executor_spec

from tfrecord_pipelines.components.transform import executor


class Transform(tfx.components.Transform):
    """TFX's Transform, unchanged but for its executor (``executor.Executor``).

    Outputs as TFX's; the transform_graph artifact also carries the custom
    property ``analysis``: the train splits read, and those whose analysis
    came from the analyzer cache.
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)
