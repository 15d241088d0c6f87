"""The Beam arguments of local runs and conversions.

Apart from the runner so that ``convert`` gets them without importing
LocalDagRunner and the pipeline's definition (9.7 s of CPU on this machine).
"""

from __future__ import annotations

from collections.abc import Sequence

# One process. The DirectRunner's multi_processing mode (a worker per core)
# lost 17-26% of the records of a 1 GB conversion here (Beam 2.62), silently
# for TFX's own components; spread work over cores with a real runner
# (Flink, Spark, Dataflow) through --beam-arg instead.
DEFAULT_BEAM_ARGS = ("--direct_running_mode=in_memory",)
# TFX's Beam executors, given any Beam argument and none of Beam's dependency
# flags, copy TFX's whole installation to a temporary folder and build an
# sdist of it for remote workers (dependency_utils.make_beam_dependency_flags):
# 1.6 s of CPU and 42 MB left in /tmp per Beam component per run. The
# DirectRunner runs in this process's environment and ignores the image this
# names; its only effect is that TFX skips the package.
_NO_TFX_PACKAGE_FOR_DIRECT_RUNNER = "--sdk_container_image=unused:direct-runner-runs-in-process"
_DIRECT_RUNNERS = (None, "DirectRunner", "direct", "BundleBasedDirectRunner")


def local_beam_args(user_args: Sequence[str] = ()) -> list[str]:
    """The Beam arguments of a local run or conversion: the defaults, then the user's.

    With the DirectRunner (no --runner, or a direct one), TFX is also told
    not to package itself for workers that do not exist.
    """
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

    args = [*DEFAULT_BEAM_ARGS, *user_args]
    options = PipelineOptions(args)
    if options.view_as(StandardOptions).runner in _DIRECT_RUNNERS and not (
        options.get_all_options().get("sdk_container_image")
    ):
        args.append(_NO_TFX_PACKAGE_FOR_DIRECT_RUNNER)
    return args
