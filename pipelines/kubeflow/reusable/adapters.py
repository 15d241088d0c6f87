"""The TFX component each KFP component runs, built from the KFP task's parameters.

The KFP components' input and output names are the TFX components' keys, so
the TFX component built here gives the entry point everything it needs: its
executor class, its exec properties (as TFX serializes them) and the TFX type
of each input and output. Each is built by ``definition.nodes``, as the TFX
pipeline builds the node of the same name, from the settings the task's
parameters give and the config's defaults for the rest; a module file, a
window of spans and a curated schema are the TFX pipeline's business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tfx.components.example_validator.component import ExampleValidator
from tfx.components.schema_gen.component import SchemaGen
from tfx.types import Channel, standard_artifacts

from tfrecord_pipelines.components import data_source, keys
from tfrecord_pipelines.components.task import CLASSIFICATION, Task
from tfrecord_pipelines.components.trainer.options import TrainingOptions
from tfrecord_pipelines.definition import nodes
from tfrecord_pipelines.definition.config import (
    DEFAULT_EVAL_STEPS,
    EvaluationOptions,
    EvaluationThresholds,
    IngestOptions,
)
from tfrecord_pipelines.kubeflow.reusable import parameter_names as names

Parameters = Mapping[str, Any]


def _task(parameters: Parameters) -> Task:
    return Task(
        label=parameters[names.LABEL], problem=parameters.get(names.PROBLEM) or CLASSIFICATION
    )


def _example_gen(parameters: Parameters, inputs: set[str]):
    source = data_source.open_source(
        parameters[keys.INPUT_BASE_KEY], parameters.get(keys.SOURCE_FORMAT_KEY) or None
    )
    ingest = IngestOptions(num_readers=int(parameters.get(keys.NUM_READERS_KEY) or 0) or None)
    label = parameters.get(names.LABEL) or None
    categorical = bool(label) and _task(parameters).is_classification
    return nodes.example_gen(source, ingest, label, categorical_label=categorical)


def _schema_gen(parameters: Parameters, inputs: set[str]):
    return SchemaGen(
        statistics=Channel(type=standard_artifacts.ExampleStatistics), infer_feature_shape=True
    )


def _example_validator(parameters: Parameters, inputs: set[str]):
    return ExampleValidator(
        statistics=Channel(type=standard_artifacts.ExampleStatistics),
        schema=Channel(type=standard_artifacts.Schema),
    )


def _transform(parameters: Parameters, inputs: set[str]):
    return nodes.transform(
        _task(parameters),
        examples=Channel(type=standard_artifacts.Examples),
        schema=Channel(type=standard_artifacts.Schema),
        statistics=(
            Channel(type=standard_artifacts.ExampleStatistics)
            if keys.STATISTICS_KEY in inputs
            else None
        ),
    )


def _trainer(parameters: Parameters, inputs: set[str]):
    return nodes.trainer(
        _task(parameters),
        TrainingOptions(),
        examples=Channel(type=standard_artifacts.Examples),
        transform_graph=Channel(type=standard_artifacts.TransformGraph),
        schema=Channel(type=standard_artifacts.Schema),
        steps=int(parameters.get(names.TRAIN_STEPS) or 0) or None,
        eval_steps=DEFAULT_EVAL_STEPS,
    )


def _evaluator(parameters: Parameters, inputs: set[str]):
    positive = parameters.get(keys.POSITIVE_CLASS_KEY) or None
    classes = int(parameters.get(names.NUM_CLASSES) or 0) or (2 if positive else None)
    default = EvaluationThresholds.min_accuracy
    return nodes.evaluator(
        _task(parameters),
        EvaluationThresholds(min_accuracy=float(parameters.get(names.MIN_ACCURACY, default))),
        EvaluationOptions(num_classes=classes, positive_class=positive),
        examples=Channel(type=standard_artifacts.Examples),
        model=Channel(type=standard_artifacts.Model),
    )


def _pusher(parameters: Parameters, inputs: set[str]):
    return nodes.pusher(
        parameters[names.SERVING_DIR],
        model=Channel(type=standard_artifacts.Model),
        blessing=Channel(type=standard_artifacts.ModelBlessing),
    )


# KFP component name → builder(parameters, names of the inputs the task was given).
BUILDERS: dict[str, Callable[[Parameters, set[str]], Any]] = {
    "sharded_example_gen": _example_gen,
    "schema_gen": _schema_gen,
    "example_validator": _example_validator,
    "transform": _transform,
    "trainer": _trainer,
    "evaluator": _evaluator,
    "pusher": _pusher,
}
