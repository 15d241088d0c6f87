"""The Beam arguments of local runs and conversions.

Apart from the runner so that ``convert`` gets them without importing
LocalDagRunner and the pipeline's definition (9.7 s of CPU on this machine).
"""

from __future__ import annotations

from collections.abc import Sequence

from tfrecord_pipelines.definition.beam_args import without_tfx_package

# One process. The DirectRunner's multi_processing mode (a worker per core)
# lost 17-26% of the records of a 1 GB conversion here (Beam 2.62), silently
# for TFX's own components; spread work over cores with a real runner
# (Flink, Spark, Dataflow) through --beam-arg instead.
DEFAULT_BEAM_ARGS = ("--direct_running_mode=in_memory",)


def local_beam_args(user_args: Sequence[str] = ()) -> list[str]:
    """The Beam arguments of a local run or conversion: the defaults, then the user's.

    With the DirectRunner (no --runner, or a direct one), TFX is also told
    not to package itself for workers that do not exist.
    """
    return without_tfx_package([*DEFAULT_BEAM_ARGS, *user_args])
