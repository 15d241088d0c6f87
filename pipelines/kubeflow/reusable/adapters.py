"""The TFX component each KFP component runs, built from the KFP task's parameters.

The KFP components' input and output names are the TFX components' keys, so
the TFX component built here gives the entry point everything it needs: its
executor class, its exec properties (as TFX serializes them) and the TFX type
of each input and output. The arguments are the ones the TFX pipeline gives
the node of the same name (``definition.pipeline``) for the built-in
preprocessing_fn and run_fn; a module file is the TFX pipeline's business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tfx import v1 as tfx
from tfx.types import Channel, standard_artifacts

from tfrecord_pipelines.components import code_version, data_source
from tfrecord_pipelines.components.evaluator.component import Evaluator
from tfrecord_pipelines.components.example_gen import ShardedExampleGen
from tfrecord_pipelines.components.example_gen.component import input_config_for
from tfrecord_pipelines.components.pusher.component import Pusher
from tfrecord_pipelines.components.task import CLASSIFICATION, Task, vocabulary_name
from tfrecord_pipelines.components.trainer.options import TrainingOptions
from tfrecord_pipelines.components.transform.component import Transform
from tfrecord_pipelines.definition.config import (
    EvaluationOptions,
    EvaluationThresholds,
    IngestOptions,
)
from tfrecord_pipelines.definition.evaluation import make_eval_config
from tfrecord_pipelines.definition.pipeline import BUILT_IN_PREPROCESSING_FN, BUILT_IN_RUN_FN

Parameters = Mapping[str, Any]


def _task(parameters: Parameters) -> Task:
    return Task(label=parameters["label"], problem=parameters.get("problem") or CLASSIFICATION)


def _example_gen(parameters: Parameters, inputs: set[str]):
    source = data_source.open_source(
        parameters["input_base"], parameters.get("source_format") or None
    )
    ingest = IngestOptions(num_readers=int(parameters.get("num_readers") or 0) or None)
    return ShardedExampleGen(
        input_base=source.input_base,
        input_config=input_config_for(source),
        source_format=source.format,
        sharding=ingest.sharding(),
        compression=ingest.compression_for(source),
        label_key=parameters.get("label") or None,
        code_version=code_version.code_version(code_version.EXAMPLE_GEN_CODE),
    )


def _schema_gen(parameters: Parameters, inputs: set[str]):
    return tfx.components.SchemaGen(
        statistics=Channel(type=standard_artifacts.ExampleStatistics), infer_feature_shape=True
    )


def _example_validator(parameters: Parameters, inputs: set[str]):
    return tfx.components.ExampleValidator(
        statistics=Channel(type=standard_artifacts.ExampleStatistics),
        schema=Channel(type=standard_artifacts.Schema),
    )


def _transform(parameters: Parameters, inputs: set[str]):
    return Transform(
        examples=Channel(type=standard_artifacts.Examples),
        statistics=(
            Channel(type=standard_artifacts.ExampleStatistics) if "statistics" in inputs else None
        ),
        schema=Channel(type=standard_artifacts.Schema),
        materialize=False,
        disable_statistics=True,
        disable_analyzer_cache=True,
        custom_config={
            **_task(parameters).to_custom_config(),
            **code_version.custom_config_entry(code_version.TRANSFORM_CODE),
        },
        preprocessing_fn=BUILT_IN_PREPROCESSING_FN,
    )


def _trainer(parameters: Parameters, inputs: set[str]):
    return tfx.components.Trainer(
        examples=Channel(type=standard_artifacts.Examples),
        transform_graph=Channel(type=standard_artifacts.TransformGraph),
        schema=Channel(type=standard_artifacts.Schema),
        train_args=tfx.proto.TrainArgs(num_steps=int(parameters.get("train_steps") or 0)),
        eval_args=tfx.proto.EvalArgs(num_steps=20),
        custom_config={
            **_task(parameters).to_custom_config(),
            **TrainingOptions(raw_examples=True).to_custom_config(),
            **code_version.custom_config_entry(code_version.TRAINER_CODE),
        },
        run_fn=BUILT_IN_RUN_FN,
    )


def _evaluator(parameters: Parameters, inputs: set[str]):
    task = _task(parameters)
    positive = parameters.get("positive_class") or None
    default = EvaluationThresholds().min_accuracy
    thresholds = EvaluationThresholds(min_accuracy=float(parameters.get("min_accuracy", default)))
    options = EvaluationOptions(num_classes=2 if positive else None, positive_class=positive)
    return Evaluator(
        examples=Channel(type=standard_artifacts.Examples),
        model=Channel(type=standard_artifacts.Model),
        eval_config=make_eval_config(task, thresholds, options),
        label_vocabulary=vocabulary_name(task.label) if task.is_classification else None,
        positive_class=positive if task.is_classification else None,
        code=code_version.code_version(code_version.EVALUATOR_CODE),
    )


def _pusher(parameters: Parameters, inputs: set[str]):
    return Pusher(
        model=Channel(type=standard_artifacts.Model),
        model_blessing=Channel(type=standard_artifacts.ModelBlessing),
        push_destination=tfx.proto.PushDestination(
            filesystem=tfx.proto.PushDestination.Filesystem(
                base_directory=parameters["serving_dir"]
            )
        ),
        custom_config=code_version.custom_config_entry(code_version.PUSHER_CODE),
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
