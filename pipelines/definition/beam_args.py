"""Beam arguments every runner of the pipeline gives TFX's Beam executors, local or in a pod.

Apart from the pipeline's definition so that a pod's entry point and ``convert`` get
them without importing TFX's pipeline classes.
"""

from __future__ import annotations

from collections.abc import Sequence

# TFX's Beam executors, given any Beam argument and none of Beam's dependency
# flags, copy TFX's whole installation to a temporary folder and build an
# sdist of it for remote workers (dependency_utils.make_beam_dependency_flags):
# 1.6 s of CPU and 42 MB left in /tmp per Beam component per run. The
# DirectRunner runs in this process's environment and ignores the image this
# names; its only effect is that TFX skips the package.
_NO_TFX_PACKAGE_FOR_DIRECT_RUNNER = "--sdk_container_image=unused:direct-runner-runs-in-process"
_DIRECT_RUNNERS = (None, "DirectRunner", "direct", "BundleBasedDirectRunner")


def without_tfx_package(args: Sequence[str]) -> list[str]:
    """``args``, and with the DirectRunner (no --runner, or a direct one) the flag that tells
    TFX not to package itself for workers that do not exist; other runners' are left to TFX
    and Beam, and so is an image the user names."""
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

    options = PipelineOptions(list(args))
    if options.view_as(StandardOptions).runner in _DIRECT_RUNNERS and not (
        options.get_all_options().get("sdk_container_image")
    ):
        return [*args, _NO_TFX_PACKAGE_FOR_DIRECT_RUNNER]
    return list(args)
