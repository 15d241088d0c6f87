"""One construction per component: from one config, the TFX pipeline's nodes and the KFP
components (as their entry point builds them from a task's parameters) have the same exec
properties, every one of them by value, and the same inputs."""

import json

import pytest
from google.protobuf import json_format, message

from conftest import REPO_ROOT
from tfrecord_pipelines.components.data_source import open_source
from tfrecord_pipelines.components.example_gen.shard_plan import DEFAULT_NUM_READERS
from tfrecord_pipelines.components.task import Task
from tfrecord_pipelines.definition.config import (
    EvaluationOptions,
    EvaluationThresholds,
    IngestOptions,
    PipelineConfig,
)
from tfrecord_pipelines.definition.pipeline import create_pipeline
from tfrecord_pipelines.kubeflow.reusable.adapters import BUILDERS
from tfrecord_pipelines.kubeflow.reusable.definitions import COMPONENTS


def _config(**evaluation) -> PipelineConfig:
    return PipelineConfig(
        name="penguins",
        source=open_source(str(REPO_ROOT / "data" / "penguins")),
        task=Task(label="species"),
        serving_dir="/serving/penguins",
        # What a KFP task's parameters can say; the rest are the config's defaults.
        ingest=IngestOptions(num_readers=DEFAULT_NUM_READERS),
        train_steps=300,
        thresholds=EvaluationThresholds(min_accuracy=0.8),
        evaluation=EvaluationOptions(**evaluation),
    )


def _parameters(config: PipelineConfig) -> dict[str, dict]:
    """The parameters a KFP pipeline gives each component for ``config``."""
    label = {"label": config.task.label, "problem": config.task.problem}
    return {
        "sharded_example_gen": {
            "input_base": config.source.root,
            "label": config.task.label,
            "source_format": config.source.format,
            "num_readers": config.ingest.num_readers,
        },
        "schema_gen": {},
        "example_validator": {},
        "transform": label,
        "trainer": {**label, "train_steps": config.train_steps},
        "evaluator": {
            **label,
            "min_accuracy": config.thresholds.min_accuracy,
            "positive_class": config.evaluation.positive_class or "",
            "num_classes": config.evaluation.num_classes or 0,
        },
        "pusher": {"serving_dir": config.serving_dir},
    }


NODE_IDS = {
    "sharded_example_gen": "ShardedExampleGen",
    "schema_gen": "SchemaGen",
    "example_validator": "ExampleValidator",
    "transform": "Transform",
    "trainer": "Trainer",
    "evaluator": "Evaluator",
    "pusher": "Pusher",
}


def _value(value):
    if isinstance(value, message.Message):
        return json_format.MessageToDict(value)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _exec_properties(component) -> dict:
    return {key: _value(value) for key, value in component.exec_properties.items()}


def _inputs(component) -> set[str]:
    return {key for key, channel in component.inputs.items() if channel is not None}


@pytest.mark.parametrize(
    "evaluation",
    [{"num_classes": 3}, {"num_classes": 2, "positive_class": "Gentoo"}, {}],
    ids=["three classes", "a positive class", "classes unknown"],
)
def test_the_tfx_pipeline_and_the_kfp_components_build_the_same_components(tmp_path, evaluation):
    config = _config(**evaluation)
    # The Kubeflow build: no Resolver, so no baseline model and no drift check.
    pipeline = create_pipeline(config, str(tmp_path), compare_to_latest_blessed=False)
    nodes = {node.id: node for node in pipeline.components}
    parameters = _parameters(config)
    assert set(parameters) == set(COMPONENTS) == set(BUILDERS)
    for name, node_id in NODE_IDS.items():
        node = nodes[node_id]
        built = BUILDERS[name](parameters[name], _inputs(node))
        assert type(built) is type(node), name
        assert _exec_properties(built) == _exec_properties(node), name
        assert _inputs(built) == _inputs(node), name
