"""Compiles the pipeline into a Kubeflow Pipelines v2 PipelineSpec YAML."""

from __future__ import annotations

import os

from tfx import v1 as tfx

from pipelines.config import PipelineConfig
from pipelines.pipeline import TRAINER_ID, create_pipeline
from pipelines.trainer_resources import TrainerResources

# The image every component runs in; the project is installed in it.
DEFAULT_IMAGE = "ghcr.io/tfrecord-pipelines/tfrecord-pipelines:0.1.0"
# The YAML carries no pipeline root: KFP takes it when the run is created.
# TFX still wants one to build the pipeline object.
_PIPELINE_ROOT_SET_AT_SUBMISSION = "pipeline-root-set-at-submission"


def compile_for_kubeflow(
    config: PipelineConfig,
    output_file: str,
    image: str = DEFAULT_IMAGE,
    trainer_resources: TrainerResources | None = None,
) -> str:
    """Writes the pipeline as a KFP v2 PipelineSpec (schema 2.1.0) YAML file.

    The build has no Resolver node: KFP's open-source backend does not
    implement it, so the Evaluator has no baseline and applies only its value
    thresholds.

    Args:
      config: the pipeline's settings; its paths must be reachable from the
        cluster's pods (a bucket URI or a mounted volume).
      output_file: the YAML file to write; must end in .yaml or .yml.
      image: the container image the components run in.
      trainer_resources: the Trainer's GPUs, CPU and memory limits; None:
        the defaults (one nvidia.com/gpu).

    Returns:
      output_file.

    Raises:
      ValueError: if output_file does not end in .yaml or .yml.
    """
    if not output_file.endswith((".yaml", ".yml")):
        raise ValueError(f"Output {output_file!r} must end in .yaml or .yml.")
    pipeline = create_pipeline(
        config, _PIPELINE_ROOT_SET_AT_SUBMISSION, compare_to_latest_blessed=False
    )
    resources = trainer_resources or TrainerResources()
    trainer = next(c for c in pipeline.components if c.id == TRAINER_ID)
    trainer.with_platform_config(resources.to_resource_spec())
    runner = tfx.orchestration.experimental.KubeflowV2DagRunner(
        config=tfx.orchestration.experimental.KubeflowV2DagRunnerConfig(
            default_image=image, use_pipeline_spec_2_1=True
        ),
        output_dir=os.path.dirname(os.path.abspath(output_file)),
        output_filename=os.path.basename(output_file),
    )
    runner.run(pipeline, write_out=True)
    return output_file
