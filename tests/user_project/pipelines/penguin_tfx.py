"""TFX's penguin pipeline, as a user writes it, on ShardedExampleGen's shards.

    python -m pipelines.penguin_tfx {stock,ours} DATA_DIR PIPELINE_ROOT SERVING_DIR

``stock``: TFX's StatisticsGen, SchemaGen, Transform, Trainer (the user's
module file ``components.penguin_model``), Evaluator and Pusher, in the
shape of TFX's penguin example (tfx/examples/penguin, v1.16.0).
``ours``: tfrecord-pipelines' Transform with its built-in preprocessing_fn,
its Trainer run_fn, its Evaluator and its Pusher executor in their place.
Both runs share one pipeline name and metadata store, so the second reuses
the first's ExampleGen from TFX's cache.
"""

# --8<-- [start:keras]
import os

# TFX 1.16 needs Keras 2: say so before anything imports TensorFlow.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
# --8<-- [end:keras]

import sys  # noqa: E402

import tensorflow_model_analysis as tfma  # noqa: E402
from absl import logging as absl_logging  # noqa: E402
from tfx import v1 as tfx  # noqa: E402

from tfrecord_pipelines.components.example_gen import ShardedExampleGen  # noqa: E402
from tfrecord_pipelines.components.example_gen.settings import ExampleGenSettings  # noqa: E402

MODULE_FILE = os.path.join(os.path.dirname(__file__), "..", "components", "penguin_model.py")
TRAIN_STEPS = 100


def _push_destination(serving_dir: str):
    return tfx.proto.PushDestination(
        filesystem=tfx.proto.PushDestination.Filesystem(base_directory=serving_dir)
    )


def stock_components(example_gen, serving_dir: str) -> list:
    """TFX's penguin example after its ExampleGen: every component TFX's own."""
    statistics = tfx.components.StatisticsGen(examples=example_gen.outputs["examples"])
    schema = tfx.components.SchemaGen(statistics=statistics.outputs["statistics"])
    # --8<-- [start:stock]
    transform = tfx.components.Transform(
        examples=example_gen.outputs["examples"],
        schema=schema.outputs["schema"],
        module_file=MODULE_FILE,
    )
    trainer = tfx.components.Trainer(
        module_file=MODULE_FILE,
        examples=transform.outputs["transformed_examples"],
        transform_graph=transform.outputs["transform_graph"],
        schema=schema.outputs["schema"],
        train_args=tfx.proto.TrainArgs(num_steps=TRAIN_STEPS),
        eval_args=tfx.proto.EvalArgs(num_steps=5),
    )
    eval_config = tfma.EvalConfig(
        model_specs=[
            tfma.ModelSpec(
                signature_name="serving_default",
                # The transformed label: the species' index in its vocabulary.
                label_key="species_xf",
                preprocessing_function_names=["transform_features"],
            )
        ],
        slicing_specs=[tfma.SlicingSpec()],
        metrics_specs=[
            tfma.MetricsSpec(
                metrics=[
                    tfma.MetricConfig(class_name="ExampleCount"),
                    tfma.MetricConfig(
                        class_name="SparseCategoricalAccuracy",
                        threshold=tfma.MetricThreshold(
                            value_threshold=tfma.GenericValueThreshold(lower_bound={"value": 0.6})
                        ),
                    ),
                ]
            )
        ],
    )
    evaluator = tfx.components.Evaluator(
        examples=example_gen.outputs["examples"],
        model=trainer.outputs["model"],
        eval_config=eval_config,
    )
    # --8<-- [end:stock]
    pusher = tfx.components.Pusher(
        model=trainer.outputs["model"],
        model_blessing=evaluator.outputs["blessing"],
        push_destination=_push_destination(serving_dir),
    )
    return [statistics, schema, transform, trainer, evaluator, pusher]


def our_components(example_gen, serving_dir: str) -> list:
    """The same pipeline with tfrecord-pipelines' Transform, run_fn, Evaluator and Pusher."""
    # --8<-- [start:ours]
    from tfx.dsl.components.base import executor_spec

    from tfrecord_pipelines.components.evaluator.component import Evaluator
    from tfrecord_pipelines.components.pusher.executor import Executor as StagedPusherExecutor
    from tfrecord_pipelines.components.task import Task, vocabulary_name
    from tfrecord_pipelines.components.trainer.options import TrainingOptions
    from tfrecord_pipelines.components.transform.component import Transform
    from tfrecord_pipelines.definition.config import EvaluationThresholds
    from tfrecord_pipelines.definition.evaluation import make_eval_config

    task = Task(label="species")  # a classification: the species become classes
    # ExampleGen's statistics, computed as it converts, feed SchemaGen directly.
    schema = tfx.components.SchemaGen(statistics=example_gen.outputs["statistics"])
    transform = Transform(
        examples=example_gen.outputs["examples"],
        schema=schema.outputs["schema"],
        # The built-in preprocessing_fn takes its analyzers' results from them.
        statistics=example_gen.outputs["statistics"],
        preprocessing_fn="tfrecord_pipelines.components.transform.preprocessing_fn",
        custom_config=task.to_custom_config(),
        materialize=False,
        disable_statistics=True,
    )
    trainer = tfx.components.Trainer(
        run_fn="tfrecord_pipelines.components.trainer.run.run_fn",
        examples=example_gen.outputs["examples"],
        transform_graph=transform.outputs["transform_graph"],
        schema=schema.outputs["schema"],
        train_args=tfx.proto.TrainArgs(num_steps=TRAIN_STEPS),
        eval_args=tfx.proto.EvalArgs(num_steps=5),
        custom_config={
            **task.to_custom_config(),
            # ExampleGen's examples, transformed as they are read: no transformed copy.
            **TrainingOptions(raw_examples=True).to_custom_config(),
        },
    )
    evaluator = Evaluator(
        examples=example_gen.outputs["examples"],
        model=trainer.outputs["model"],
        eval_config=make_eval_config(task, EvaluationThresholds(min_accuracy=0.6)),
        # The class names, from the vocabulary the built-in preprocessing_fn writes.
        label_vocabulary=vocabulary_name(task.label),
    )
    pusher = tfx.components.Pusher(
        model=trainer.outputs["model"],
        model_blessing=evaluator.outputs["blessing"],
        push_destination=_push_destination(serving_dir),
        # Copies into .staged-<version>, then renames: a model server never sees half a model.
        custom_executor_spec=executor_spec.ExecutorClassSpec(StagedPusherExecutor),
    )
    # --8<-- [end:ours]
    return [schema, transform, trainer, evaluator, pusher]


def create_pipeline(which: str, data_dir: str, pipeline_root: str, serving_dir: str):
    """ShardedExampleGen, then ``stock`` or ``ours`` (the module docstring)."""
    example_gen = ShardedExampleGen(data_dir, ExampleGenSettings(label_key="species"))
    rest = {"stock": stock_components, "ours": our_components}[which]
    return tfx.dsl.Pipeline(
        pipeline_name="user-penguin-tfx",
        pipeline_root=pipeline_root,
        components=[example_gen, *rest(example_gen, serving_dir)],
        enable_cache=True,
        metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
            os.path.join(pipeline_root, "metadata.db")
        ),
    )


if __name__ == "__main__":
    # As TFX's examples do: components say at INFO what they did.
    absl_logging.set_verbosity(absl_logging.INFO)
    tfx.orchestration.LocalDagRunner().run(create_pipeline(*sys.argv[1:5]))
