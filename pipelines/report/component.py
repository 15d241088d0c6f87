"""Reporter: the run report as a pipeline task, for orchestrators that run no command
after the run (Kubeflow Pipelines), whose UI shows its page.

Inputs, each optional: ShardedExampleGen's ``examples``, ``quarantine`` and
``statistics``; ExampleValidator's ``anomalies``; the ``schema``; the Trainer's
``model_run``; the Evaluator's ``evaluation`` and ``blessing``; the Pusher's
``pushed_model``; in the daily pipeline, SpanWindow's ``window``,
Transform's ``transform_graph`` and DriftCheck's anomalies as ``drift``.
Outputs: ``report`` (``system.HTML``), the page the report command writes for a
local run, less what only ML Metadata holds (each component's state and cost);
``training`` (``system.Metrics``), the Trainer's last epoch as rows of KFP's
scalar table: its input and host stall, the steps a call and the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping

from tfx import types
from tfx.dsl.components.base import base_component, base_node, executor_spec
from tfx.types import standard_artifacts
from tfx.types import standard_component_specs as specs
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.example_gen.component import Quarantine
from tfrecord_pipelines.components.keys import QUARANTINE_KEY, SPAN_WINDOW_ID
from tfrecord_pipelines.components.ui_artifacts import Html, Metrics
from tfrecord_pipelines.report import executor
from tfrecord_pipelines.report.contents import ARTIFACT_SOURCES, DAILY_SOURCES

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
    # The daily pipeline on Kubeflow: the window's examples, Transform's graph, the drift.
    keys.WINDOW_KEY: standard_artifacts.Examples,
    keys.TRANSFORM_GRAPH_KEY: standard_artifacts.TransformGraph,
    keys.DRIFT_KEY: standard_artifacts.ExampleAnomalies,
}


class ReporterSpec(ComponentSpec):
    """The Reporter's inputs, parameters and output."""

    PARAMETERS = {
        keys.PIPELINE_NAME_KEY: ExecutionParameter(type=str),
        keys.IMAGES_KEY: ExecutionParameter(type=int),
    }
    INPUTS = {key: ChannelParameter(type=kind, optional=True) for key, kind in _INPUT_TYPES.items()}
    OUTPUTS = {
        keys.REPORT_KEY: ChannelParameter(type=Html),
        keys.TRAINING_METRICS_KEY: ChannelParameter(type=Metrics),
    }


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
                training=types.Channel(type=Metrics),
                **artifacts,
            )
        )


def _channel(components: Mapping[str, base_node.BaseNode], node_id: str | None, key: str):
    if node_id is not None:
        return components[node_id].outputs[key]
    return next(c.outputs[key] for c in components.values() if key in c.outputs)


def reporter_of(
    components: Mapping[str, base_node.BaseNode], pipeline_name: str, images: bool
) -> Reporter:
    """A Reporter fed by the outputs of the pipeline's ``components`` (by id, as
    ``create_pipeline`` names them) that ``ARTIFACT_SOURCES`` names, and those of
    ``DAILY_SOURCES`` that the pipeline has.

    Args:
      components: the pipeline's components by id.
      pipeline_name: the pipeline's name.
      images: whether the examples are images.
    """
    return Reporter(
        pipeline_name=pipeline_name,
        images=images,
        **{
            key: _channel(components, node_id, output)
            for key, (node_id, output) in ARTIFACT_SOURCES.items()
        },
        **{
            key: components[node_id].outputs[output]
            for key, (node_id, output) in DAILY_SOURCES.items()
            if node_id in components and SPAN_WINDOW_ID in components
        },
    ).with_id(REPORTER_ID)
