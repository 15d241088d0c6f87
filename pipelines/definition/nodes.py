"""Each component of the pipeline, built once from the pipeline's settings.

The TFX pipeline (``pipeline.create_pipeline``) and the KFP components
(``kubeflow.reusable.adapters``) both build their components here, from the
same settings and their defaults (``config``), so that a KFP user and a TFX
user get the same component from one release: the same parameters, the same
custom_config, the same inputs. What differs between them is which channels
feed a component, which is the caller's business.
"""

from __future__ import annotations

import dataclasses

from tfx import types
from tfx.components.trainer.component import Trainer
from tfx.proto import pusher_pb2, trainer_pb2

from tfrecord_pipelines.components import code_version, keys
from tfrecord_pipelines.components.data_source import DataSource
from tfrecord_pipelines.components.evaluator.component import Evaluator
from tfrecord_pipelines.components.example_gen import ShardedExampleGen
from tfrecord_pipelines.components.example_gen.component import input_config_for
from tfrecord_pipelines.components.example_gen.settings import (
    CsvOptions,
    ExampleGenSettings,
    SparkOptions,
)
from tfrecord_pipelines.components.pusher.component import Pusher
from tfrecord_pipelines.components.pusher.on_drift import BLOCK
from tfrecord_pipelines.components.task import Task, vocabulary_name
from tfrecord_pipelines.components.trainer.options import TrainingOptions
from tfrecord_pipelines.components.trainer.training_length import DEFAULT_MIN_STEPS
from tfrecord_pipelines.components.transform.component import Transform
from tfrecord_pipelines.definition.config import (
    EvaluationOptions,
    EvaluationThresholds,
    IngestOptions,
)
from tfrecord_pipelines.definition.evaluation import make_eval_config
from tfrecord_pipelines.definition.module_file import PREPROCESSING_FN, RUN_FN, ModuleFile

BUILT_IN_PREPROCESSING_FN = "tfrecord_pipelines.components.transform.preprocessing.preprocessing_fn"
BUILT_IN_RUN_FN = "tfrecord_pipelines.components.trainer.run.run_fn"


def _users(module_file: ModuleFile | None, function: str) -> bool:
    """Whether the user's module file defines ``function`` (run_fn, preprocessing_fn)."""
    return bool(module_file and module_file.defines(function))


def _user_code(module_file: ModuleFile | None, function: str, built_in: str) -> dict:
    """The Transform / Trainer argument naming the function to run: the user's, else ours."""
    if _users(module_file, function):
        return {"module_file": module_file.path}
    return {function: built_in}


def materializes(module_file: ModuleFile | None, source: DataSource) -> bool:
    """Whether Transform writes transformed examples: for a module file's run_fn on tabular
    data only, which is written against TFX's contract (transformed examples in
    fn_args.train_files). Images are never copied: a module file's run_fn gets
    ExampleGen's shards."""
    return _users(module_file, RUN_FN) and not source.is_images


def example_gen(
    source: DataSource,
    ingest: IngestOptions,
    label: str | None,
    *,
    categorical_label: bool = False,
    span=None,
    schema: types.BaseChannel | None = None,
) -> ShardedExampleGen:
    """ShardedExampleGen of ``source``'s data.

    Args:
      source: the data and its format.
      ingest: the shards it writes.
      label: the label (tabular: rows without it are quarantined).
      categorical_label: the label names classes (classification): its statistics
        count its values, so that Transform reads no record for them.
      span: data in spans: the span to convert (text, or a run-time parameter);
        None: the latest.
      schema: a curated schema's channel, which types the CSV columns; None:
        types inferred.
    """
    settings = ExampleGenSettings(
        source_format=source.format,
        label_key=label,
        categorical_label=categorical_label,
        sharding=ingest.sharding(),
        compression=ingest.compression_for(source),
        csv=CsvOptions(encoding=ingest.encoding, delimiter=source.delimiter),
        engine=ingest.engine,
        spark=SparkOptions(master=ingest.spark_master, conf=dict(ingest.spark_conf)),
    )
    return ShardedExampleGen(
        source.input_base,
        settings,
        input_config=input_config_for(source),
        schema=schema,
        code_version=code_version.code_version(code_version.EXAMPLE_GEN_CODE),
        span=span,
    )


def transform(
    task: Task,
    *,
    examples: types.BaseChannel,
    schema: types.BaseChannel,
    statistics: types.BaseChannel | None = None,
    analyzer_cache: types.BaseChannel | None = None,
    materialize: bool = False,
    module_file: ModuleFile | None = None,
) -> Transform:
    """Transform, with the built-in preprocessing_fn unless the module file defines one.

    Args:
      task: what to learn.
      examples: the examples it analyzes.
      schema: their schema.
      statistics: ExampleGen's statistics of ``examples``, one per span: the
        built-in preprocessing_fn takes its analyzers' results from them where
        they are exact (a user's preprocessing_fn is not given them).
      analyzer_cache: a window's analyzer cache; None: the cache is off.
      materialize: write transformed examples (``materializes``).
      module_file: the user's module file, if any.
    """
    return Transform(
        examples=examples,
        statistics=statistics if not _users(module_file, PREPROCESSING_FN) else None,
        schema=schema,
        materialize=materialize,
        # ExampleGen has described the data already; Transform's pre- and
        # post-transform statistics would be two more passes that nothing shows.
        disable_statistics=True,
        # The analyzer cache serves a window of spans where statistics do not
        # (a user's preprocessing_fn, a feature they cannot answer): each span
        # is analyzed once, by the first run whose window holds it. One span,
        # analyzed whole, would write it for nothing.
        analyzer_cache=analyzer_cache,
        disable_analyzer_cache=analyzer_cache is None,
        # The code version makes a changed built-in preprocessing_fn a cache
        # miss; a module file's content is in TFX's cache key already.
        custom_config={
            **task.to_custom_config(),
            **code_version.custom_config_entry(code_version.TRANSFORM_CODE),
        },
        **_user_code(module_file, PREPROCESSING_FN, BUILT_IN_PREPROCESSING_FN),
    )


def train_steps(steps: int | None, module_file: ModuleFile | None) -> int:
    """TrainArgs' num_steps: the user's, else 0 (planned from the data) or, for a module file's
    run_fn, which is told steps only, the built-in default."""
    if steps is not None:
        return steps
    return DEFAULT_MIN_STEPS if _users(module_file, RUN_FN) else 0


def trainer(
    task: Task,
    training: TrainingOptions,
    *,
    examples: types.BaseChannel,
    transform_graph: types.BaseChannel,
    schema: types.BaseChannel,
    steps: int | None = None,
    eval_steps: int,
    base_model: types.BaseChannel | None = None,
    materialized: bool = False,
    module_file: ModuleFile | None = None,
) -> Trainer:
    """TFX's Trainer, running the built-in run_fn unless the module file defines one.

    Args:
      task: what to learn.
      training: how the built-in run_fn trains.
      examples: ExampleGen's examples, or Transform's transformed ones (``materialized``).
      transform_graph: Transform's graph.
      schema: the examples' schema.
      steps: training steps; None: planned (``train_steps``).
      eval_steps: validation steps after training.
      base_model: a blessed model to warm-start from, if any.
      materialized: ``examples`` are Transform's transformed examples.
      module_file: the user's module file, if any.
    """
    return Trainer(
        examples=examples,
        transform_graph=transform_graph,
        schema=schema,
        base_model=base_model,
        # 0 is TFX's "not set": the built-in run_fn then plans from the data's size.
        train_args=trainer_pb2.TrainArgs(num_steps=train_steps(steps, module_file)),
        eval_args=trainer_pb2.EvalArgs(num_steps=eval_steps),
        custom_config={
            **task.to_custom_config(),
            **dataclasses.replace(training, raw_examples=not materialized).to_custom_config(),
            **code_version.custom_config_entry(code_version.TRAINER_CODE),
        },
        **_user_code(module_file, RUN_FN, BUILT_IN_RUN_FN),
    )


def evaluator(
    task: Task,
    thresholds: EvaluationThresholds,
    evaluation: EvaluationOptions,
    *,
    examples: types.BaseChannel,
    model: types.BaseChannel,
    baseline_model: types.BaseChannel | None = None,
    module_file: ModuleFile | None = None,
) -> Evaluator:
    """The Evaluator: TFMA's metrics against the thresholds (and the baseline model).

    Args:
      task: what the model learned.
      thresholds: what blesses it.
      evaluation: its per-class metrics, slices and positive class.
      examples: the examples; the eval split is read.
      model: the Trainer's model.
      baseline_model: the latest blessed model, if any.
      module_file: the user's module file, if any.
    """
    # The built-in preprocessing_fn names the label's vocabulary; a module file's may not.
    built_in_label = task.is_classification and not _users(module_file, PREPROCESSING_FN)
    return Evaluator(
        examples=examples,
        model=model,
        baseline_model=baseline_model,
        eval_config=make_eval_config(task, thresholds, evaluation),
        label_vocabulary=vocabulary_name(task.label) if built_in_label else None,
        positive_class=evaluation.positive_class if built_in_label else None,
        code=code_version.code_version(code_version.EVALUATOR_CODE),
    )


def pusher(
    serving_dir: str,
    *,
    model: types.BaseChannel,
    blessing: types.BaseChannel,
    drift: types.BaseChannel | None = None,
    on_drift: str = BLOCK,
    publish_after_metadata: bool = False,
) -> Pusher:
    """The Pusher, into ``serving_dir`` through a staging folder.

    Args:
      serving_dir: where blessed models go, one numbered version folder each.
      model: the Trainer's model.
      blessing: the Evaluator's blessing.
      drift: DriftCheck's anomalies of the span the model trained on, if any.
      on_drift: ``block`` (a drifted span's model is not pushed) or ``warn``.
      publish_after_metadata: leave the staged model for the orchestrator to
        publish once the push is recorded (local runs).
    """
    return Pusher(
        model=model,
        model_blessing=blessing,
        push_destination=pusher_pb2.PushDestination(
            filesystem=pusher_pb2.PushDestination.Filesystem(base_directory=serving_dir)
        ),
        custom_config={
            **code_version.custom_config_entry(code_version.PUSHER_CODE),
            **({keys.PUBLISH_KEY: keys.PUBLISH_AFTER_METADATA} if publish_after_metadata else {}),
        },
        drift=drift,
        on_drift=on_drift,
    )
