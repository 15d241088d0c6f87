"""Runs the pipeline on this machine: LocalDagRunner, SQLite ML Metadata, Beam DirectRunner."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from tfx import v1 as tfx

from pipelines.config import PipelineConfig
from pipelines.pipeline import create_pipeline

# One process. The DirectRunner's multi_processing mode (a worker per core)
# lost 17-26% of the records of a 1 GB conversion here (Beam 2.62), silently
# for TFX's own components; spread work over cores with a real runner
# (Flink, Spark, Dataflow) through --beam-arg instead.
DEFAULT_BEAM_ARGS = ("--direct_running_mode=in_memory",)


@dataclasses.dataclass(frozen=True)
class LocalLayout:
    """Where a local run keeps its outputs, all under one output folder.

    Attributes:
      output_dir: the folder everything goes under.
      name: the pipeline name; each pipeline gets its own sub-folders.
    """

    output_dir: str
    name: str

    @property
    def pipeline_root(self) -> str:
        """Component artifacts: ``<output>/pipeline_root/<name>/<Component>/<output>/<id>``."""
        return os.path.join(self.output_dir, "pipeline_root", self.name)

    @property
    def metadata_path(self) -> str:
        """The SQLite ML Metadata store of this pipeline's runs."""
        return os.path.join(self.output_dir, "metadata", self.name, "metadata.db")

    @property
    def serving_dir(self) -> str:
        """Pushed models, one numbered version folder each."""
        return os.path.join(self.output_dir, "serving_model", self.name)


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
