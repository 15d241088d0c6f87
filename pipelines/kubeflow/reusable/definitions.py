"""The project's components as KFP container components, with KFP's artifact types.

Each runs the published image's entry point
(``python -m tfrecord_pipelines.kubeflow.reusable.entry NAME {{$}}``), which
runs the same TFX executor as the TFX pipeline's node of that name. This
module imports kfp and the pipeline config's defaults (``definition.config``,
which imports no TFX): ``python -m tfrecord_pipelines components`` compiles
these functions into the YAML specs under ``kfp_components/``, which
``kfp.components.load_component_from_file`` loads where only kfp is installed.

Types: examples are a ``Dataset`` (TFX's layout: ``Split-<name>/`` folders of
TFRecord shards; ``split_names`` and ``shard_plan`` in its metadata); models a
``Model`` (``Format-Serving/``, the SavedModel); the Evaluator's verdict is
also ``Metrics``, ``ClassificationMetrics`` and ``Markdown``, which KFP's UI
draws. What has no KFP type (statistics, schema, transform graph, blessing) is
an ``Artifact`` in TFX's layout: the KFP SDK (2.13) refuses any schema title
outside its ``system`` and ``google`` namespaces, TFX's ``tfx.*`` included, when a
component is defined or loaded. Inputs are described under ``Args:``, outputs
under ``Returns:``, where KFP's compiler reads each.
"""

from kfp import dsl
from kfp.dsl import (
    Artifact,
    ClassificationMetrics,
    Dataset,
    Input,
    Markdown,
    Metrics,
    Model,
    Output,
)

from tfrecord_pipelines.components.example_gen.shard_plan import DEFAULT_NUM_READERS
from tfrecord_pipelines.components.task import CLASSIFICATION
from tfrecord_pipelines.definition.config import EvaluationThresholds

# The image every component runs (``make image``); a generated spec may name another.
IMAGE = "ghcr.io/tfrecord-pipelines/tfrecord-pipelines:0.1.0"
ENTRY = ["python", "-m", "tfrecord_pipelines.kubeflow.reusable.entry"]
# KFP substitutes the task's ExecutorInput (JSON) for this placeholder.
EXECUTOR_INPUT = "{{$}}"


def _container(name: str) -> dsl.ContainerSpec:
    return dsl.ContainerSpec(image=IMAGE, command=ENTRY, args=[name, EXECUTOR_INPUT])


@dsl.container_component
def sharded_example_gen(
    input_base: str,
    examples: Output[Dataset],
    statistics: Output[Artifact],
    quarantine: Output[Dataset],
    examples_summary: Output[Markdown],
    label: str = "",
    problem: str = CLASSIFICATION,
    source_format: str = "",
    num_readers: int = DEFAULT_NUM_READERS,
):
    """Converts CSV, Parquet or image data into sharded TFRecords of tf.Examples, with their
    statistics, in one pass.

    Args:
      input_base: a data file, glob or folder (gs://, s3:// or a path the task reads).
      label: tabular data: the column to predict (rows without it are quarantined);
        images: the feature of the class's id (default ``label``; the class by name is
        ``class_name``).
      problem: classification (the statistics count the label's values, integers
        too, so that Transform reads no record for its classes) or regression.
      source_format: csv, parquet or images; empty: found from the files.
      num_readers: workers expected to read the shards in parallel; each split
        gets at least as many shards, data allowing.

    Returns:
      examples: train and eval splits of gzipped TFRecord shards.
      statistics: TFDV's statistics of each split (FeatureStats.pb).
      quarantine: the rows that could not be converted, with their reasons.
      examples_summary: the shards, the quarantine and each feature's statistics (Markdown).
    """
    return _container("sharded_example_gen")


@dsl.container_component
def schema_gen(statistics: Input[Artifact], schema: Output[Artifact]):
    """Infers a schema from ExampleGen's statistics (TFX's SchemaGen).

    Args:
      statistics: ShardedExampleGen's statistics.

    Returns:
      schema: schema.pbtxt, a TensorFlow Metadata Schema.
    """
    return _container("schema_gen")


@dsl.container_component
def example_validator(
    statistics: Input[Artifact],
    schema: Input[Artifact],
    anomalies: Output[Artifact],
):
    """Checks each split's statistics against the schema (TFX's ExampleValidator).

    Args:
      statistics: ShardedExampleGen's statistics.
      schema: the schema to hold the data to, inferred or written by hand.

    Returns:
      anomalies: each split's anomalies (SchemaDiff.pb); the task fails on none.
    """
    return _container("example_validator")


@dsl.container_component
def transform(
    examples: Input[Dataset],
    schema: Input[Artifact],
    transform_graph: Output[Artifact],
    label: str = "",
    problem: str = "",
    statistics: Input[Artifact] = None,
):
    """Analyzes the train split with tf.Transform: z-scores and vocabularies, as a graph the
    Trainer runs in its input pipeline and the model serves with.

    Args:
      examples: the examples (a Dataset of Split-train/ and Split-eval/ shards).
      schema: their schema.
      label: the feature to predict; "": the label ShardedExampleGen recorded on the
        examples (given here too, it must be the same).
      problem: classification or regression; "": as recorded on the examples
        (classification when they record none).
      statistics: ExampleGen's statistics; when given, means, variances and
        vocabularies come from them and no record is read.

    Returns:
      transform_graph: tf.Transform's output: transform_fn/ and transformed_metadata/.
    """
    return _container("transform")


@dsl.container_component
def trainer(
    examples: Input[Dataset],
    schema: Input[Artifact],
    transform_graph: Input[Artifact],
    model: Output[Model],
    model_run: Output[Artifact],
    label: str = "",
    problem: str = "",
    train_steps: int = 0,
):
    """Trains the built-in model on the shards: parallel reads, whole-batch parsing, the
    Transform graph in the input pipeline, cache and prefetch.

    Args:
      examples: raw examples (Split-train/ and Split-eval/ TFRecord shards).
      schema: their schema.
      transform_graph: Transform's graph.
      label: the feature to predict; "": the label ShardedExampleGen recorded on the
        examples (given here too, it must be the same).
      problem: classification or regression; "": as recorded on the examples
        (classification when they record none).
      train_steps: training steps; 0: planned from the data's size.

    Returns:
      model: the SavedModel (Format-Serving/), serving tf.Examples.
      model_run: TensorBoard logs and the input stall report.
    """
    return _container("trainer")


@dsl.container_component
def evaluator(
    examples: Input[Dataset],
    model: Input[Model],
    evaluation: Output[Artifact],
    blessing: Output[Artifact],
    metrics: Output[Metrics],
    classification_metrics: Output[ClassificationMetrics],
    evaluation_summary: Output[Markdown],
    label: str = "",
    problem: str = "",
    min_accuracy: float = EvaluationThresholds.min_accuracy,
    positive_class: str = "",
    num_classes: int = 0,
):
    """Evaluates the model on the eval split, with 95% intervals, and blesses it or not.

    Args:
      examples: the examples; the eval split is read.
      model: the Trainer's model.
      label: the feature to predict; "": the label ShardedExampleGen recorded on the
        examples (given here too, it must be the same).
      problem: classification or regression; "": as recorded on the examples
        (classification when they record none).
      min_accuracy: the accuracy that blesses a model (classification; run's default).
      positive_class: two classes: the label value whose ROC curve and AUC are reported.
      num_classes: classification: how many classes the label has (up to 32: each
        class's AUC, precision and recall); 0: unknown, accuracy and the
        confusion matrix only.

    Returns:
      evaluation: TFMA's evaluation files.
      blessing: BLESSED or NOT_BLESSED, for the Pusher.
      metrics: each metric, its 95% interval and the eval rows (drawn by KFP's UI).
      classification_metrics: the confusion matrix; for two classes, the ROC curve.
      evaluation_summary: the verdict and the metrics table (Markdown).
    """
    return _container("evaluator")


@dsl.container_component
def pusher(
    model: Input[Model],
    model_blessing: Input[Artifact],
    serving_dir: str,
    pushed_model: Output[Model],
):
    """Copies a blessed model into the next numbered version folder of ``serving_dir``.

    Args:
      model: the Trainer's model.
      model_blessing: the Evaluator's blessing; a model not blessed is not pushed.
      serving_dir: the serving folder (gs://, s3:// or a mounted volume).

    Returns:
      pushed_model: the push record; its metadata names the version folder.
    """
    return _container("pusher")


COMPONENTS = {
    c.name.replace("-", "_"): c
    for c in (
        sharded_example_gen,
        schema_gen,
        example_validator,
        transform,
        trainer,
        evaluator,
        pusher,
    )
}
