"""Reporter: the run report as a pipeline task, for orchestrators that run no command
after the run (Kubeflow Pipelines), whose UI shows its page.

Inputs, each optional: ShardedExampleGen's ``examples``, ``quarantine`` and
``statistics``; ExampleValidator's ``anomalies``; the ``schema``; the Trainer's
``model_run``; the Evaluator's ``evaluation`` and ``blessing``; the Pusher's
``pushed_model``. Output: ``report`` (``system.HTML``), the page the report
command writes for a local run, less what only ML Metadata holds (each
component's state and cost, a window of spans, drift).
"""

from __future__ import annotations

from collections.abc import Mapping

from tfx import types
from tfx.dsl.components.base import base_component, base_node, executor_spec
from tfx.types import standard_artifacts
from tfx.types import standard_component_specs as specs
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from tfrecord_pipelines.components.example_gen.component import Quarantine
from tfrecord_pipelines.components.example_gen.keys import QUARANTINE_KEY
from tfrecord_pipelines.components.ui_artifacts import Html
from tfrecord_pipelines.definition.pipeline import (
    EVALUATOR_ID,
    EXAMPLE_GEN_ID,
    EXAMPLE_VALIDATOR_ID,
    PUSHER_ID,
    TRAINER_ID,
)
from tfrecord_pipelines.report import executor

REPORTER_ID = "Reporter"
_INPUT_TYPES = {
    specs.EXAMPLES_KEY: standard_artifacts.Examples,
    QUARANTINE_KEY: Quarantine,
    specs.STATISTICS_KEY: standard_artifacts.ExampleStatistics,
    specs.ANOMALIES_KEY: standard_artifacts.ExampleAnomalies,
    specs.SCHEMA_KEY: standard_artifacts.Schema,
    specs.MODEL_RUN_KEY: standard_artifacts.ModelRun,
    specs.EVALUATION_KEY: standard_artifacts.ModelEvaluation,
    specs.BLESSING_KEY: standard_artifacts.ModelBlessing,
    specs.PUSHED_MODEL_KEY: standard_artifacts.PushedModel,
}


class ReporterSpec(ComponentSpec):
    """The Reporter's inputs, parameters and output."""

    PARAMETERS = {
        executor.PIPELINE_NAME_KEY: ExecutionParameter(type=str),
        executor.IMAGES_KEY: ExecutionParameter(type=int),
    }
    INPUTS = {key: ChannelParameter(type=kind, optional=True) for key, kind in _INPUT_TYPES.items()}
    OUTPUTS = {executor.REPORT_KEY: ChannelParameter(type=Html)}


class Reporter(base_component.BaseComponent):
    """Writes the run report from the run's artifacts; see the module docstring."""

    SPEC_CLASS = ReporterSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

    def __init__(self, pipeline_name: str, images: bool, **artifacts: types.BaseChannel):
        """Builds the component.

        Args:
          pipeline_name: the pipeline's name, the page's title.
          images: whether the examples are images (the page shows some per class).
          **artifacts: the run's artifacts by input key (module docstring).

        Raises:
          ValueError: for a key that is not one of the inputs.
        """
        unknown = sorted(set(artifacts) - set(_INPUT_TYPES))
        if unknown:
            raise ValueError(f"Reporter has no input {unknown}; its inputs: {list(_INPUT_TYPES)}.")
        super().__init__(
            spec=ReporterSpec(
                pipeline_name=pipeline_name,
                images=int(images),
                report=types.Channel(type=Html),
                **artifacts,
            )
        )


def reporter_of(
    components: Mapping[str, base_node.BaseNode], pipeline_name: str, images: bool
) -> Reporter:
    """A Reporter fed by the outputs of the pipeline's ``components`` (by id, as
    ``create_pipeline`` names them).

    Args:
      components: the pipeline's components by id.
      pipeline_name: the pipeline's name.
      images: whether the examples are images.
    """
    example_gen = components[EXAMPLE_GEN_ID].outputs
    validator = components[EXAMPLE_VALIDATOR_ID]
    evaluator = components[EVALUATOR_ID].outputs
    return Reporter(
        pipeline_name=pipeline_name,
        images=images,
        examples=example_gen[specs.EXAMPLES_KEY],
        quarantine=example_gen[QUARANTINE_KEY],
        statistics=example_gen[specs.STATISTICS_KEY],
        anomalies=validator.outputs[specs.ANOMALIES_KEY],
        # SchemaGen's or the curated schema's: what the validator checked against.
        schema=validator.inputs[specs.SCHEMA_KEY],
        model_run=components[TRAINER_ID].outputs[specs.MODEL_RUN_KEY],
        evaluation=evaluator[specs.EVALUATION_KEY],
        blessing=evaluator[specs.BLESSING_KEY],
        pushed_model=components[PUSHER_ID].outputs[specs.PUSHED_MODEL_KEY],
    ).with_id(REPORTER_ID)
