"""Runs the pipeline on this machine: LocalDagRunner, SQLite ML Metadata, Beam DirectRunner."""

from __future__ import annotations

import os
from collections.abc import Sequence

from tfx import v1 as tfx

from pipelines.config import PipelineConfig
from pipelines.local_layout import LocalLayout
from pipelines.pipeline import create_pipeline

# One process. The DirectRunner's multi_processing mode (a worker per core)
# lost 17-26% of the records of a 1 GB conversion here (Beam 2.62), silently
# for TFX's own components; spread work over cores with a real runner
# (Flink, Spark, Dataflow) through --beam-arg instead.
DEFAULT_BEAM_ARGS = ("--direct_running_mode=in_memory",)


def run_locally(
    config: PipelineConfig, layout: LocalLayout, beam_pipeline_args: Sequence[str] = ()
) -> None:
    """Runs the pipeline end to end with LocalDagRunner.

    Args:
      config: the pipeline's settings; its serving_dir should be ``layout.serving_dir``.
      layout: where the run's artifacts and metadata go.
      beam_pipeline_args: Beam options; DEFAULT_BEAM_ARGS come first, so later
        ones override them.
    """
    os.makedirs(os.path.dirname(layout.metadata_path), exist_ok=True)
    pipeline = create_pipeline(
        config,
        layout.pipeline_root,
        compare_to_latest_blessed=True,
        metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
            layout.metadata_path
        ),
        beam_pipeline_args=[*DEFAULT_BEAM_ARGS, *beam_pipeline_args],
    )
    tfx.orchestration.LocalDagRunner().run(pipeline)
