"""The training pipeline, shared by the local and the Kubeflow runner.

ShardedExampleGen (examples and their statistics, one pass) → SchemaGen (or a
curated schema through ImportSchemaGen, which then also types the CSV columns)
→ ExampleValidator → Transform → Trainer → Evaluator → Pusher.

One pipeline for every format; what differs is data, not structure. The
Trainer reads ExampleGen's own shards (the shard plan: at least one per
reader) and runs the Transform graph in its input pipeline, so Transform
only analyzes (one pass over the train split): no transformed copy, no
statistics of its own (ExampleGen has described the same data). A
materialized copy would be one file per split on the DirectRunner, read by
one reader (benchmarks/pipeline_scale.py compares a stock TFX pipeline, which
reads such a copy). There is no StatisticsGen: ExampleGen describes the
records with TFDV from the columns it encodes them from, as StatisticsGen
would after decoding them again (``example_gen.statistics``). Images are
also described as images (TFDV's image domain: formats, sizes) and decoded
in the Trainer's input pipeline.

A module file's own run_fn on tabular data is the exception: it is written
against TFX's contract, transformed examples in fn_args.train_files, so
Transform writes them for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ml_metadata.proto import metadata_store_pb2
from tfx.components.example_validator.component import ExampleValidator
from tfx.components.schema_gen.component import SchemaGen
from tfx.dsl.components.base.base_node import BaseNode
from tfx.orchestration.data_types import RuntimeParameter
from tfx.orchestration.pipeline import Pipeline
from tfx.types import BaseChannel

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.curated_schema.component import CuratedSchemaGen
from tfrecord_pipelines.components.daily import earlier as earlier_runs
from tfrecord_pipelines.components.daily.baseline_model import baseline_model_resolver
from tfrecord_pipelines.components.drift.component import DriftCheck
from tfrecord_pipelines.components.keys import (
    DRIFT_CHECK_ID,
    EVALUATOR_ID,
    EXAMPLE_GEN_ID,
    EXAMPLE_VALIDATOR_ID,
    PUSHER_ID,
    SCHEMA_IMPORT_ID,
    TRAINER_ID,
    TRANSFORM_ID,
)
from tfrecord_pipelines.definition import nodes
from tfrecord_pipelines.definition.config import PipelineConfig


def _ingest(config: PipelineConfig, span) -> tuple:
    """The curated schema's import (or None) and ShardedExampleGen for ``span``."""
    curated_schema = (
        CuratedSchemaGen(schema_file=config.schema_path).with_id(SCHEMA_IMPORT_ID)
        if config.schema_path
        else None
    )
    example_gen = nodes.example_gen(
        config.source,
        config.ingest,
        config.task.label,
        categorical_label=config.task.is_classification,
        span=span,
        # A curated schema types the CSV columns; otherwise they are inferred.
        schema=curated_schema.outputs[keys.SCHEMA_KEY] if curated_schema else None,
    ).with_id(EXAMPLE_GEN_ID)
    return curated_schema, example_gen


def create_backfill_pipeline(
    config: PipelineConfig,
    pipeline_root: str,
    span: int,
    *,
    metadata_connection_config: metadata_store_pb2.ConnectionConfig | None = None,
    beam_pipeline_args: Sequence[str] = (),
) -> Pipeline:
    """The pipeline's ExampleGen alone, converting ``span``: the first run of a window
    converts the window's earlier spans with it. Same name and node ids as
    ``create_pipeline``, so the window's Resolver finds what it wrote."""
    curated_schema, example_gen = _ingest(config, str(span))
    return Pipeline(
        pipeline_name=config.name,
        pipeline_root=pipeline_root,
        components=[c for c in (curated_schema, example_gen) if c],
        metadata_connection_config=metadata_connection_config,
        beam_pipeline_args=list(beam_pipeline_args),
        enable_cache=True,
    )


def create_pipeline(
    config: PipelineConfig,
    pipeline_root: str,
    *,
    compare_to_latest_blessed: bool,
    enable_cache: bool = True,
    publish_after_metadata: bool = False,
    metadata_connection_config: metadata_store_pb2.ConnectionConfig | None = None,
    beam_pipeline_args: Sequence[str] = (),
    requested_span: RuntimeParameter | None = None,
    state_dir: str | None = None,
    last_task: Callable[[dict[str, BaseNode]], BaseNode] | None = None,
) -> Pipeline:
    """Builds the pipeline.

    Args:
      config: what to read, learn and keep.
      pipeline_root: where components write their artifacts.
      compare_to_latest_blessed: resolve the latest blessed model and require a
        new model to be no worse. Kubeflow Pipelines' open-source backend has no
        Resolver support, so its build passes False.
      enable_cache: reuse the outputs of an earlier execution whose inputs,
        parameters and code are the same (TFX's caching through ML Metadata).
      publish_after_metadata: the Pusher leaves the model staged for the
        orchestrator to move into the serving folder once the push is
        recorded (local runs: ``tfrecord_pipelines.local.staged_models``); otherwise it
        moves the model into place itself when the copy is complete.
      metadata_connection_config: the ML Metadata store (local runs); None
        leaves it to the orchestrator.
      beam_pipeline_args: Beam options for the data components (runner,
        workers, ...).
      requested_span: data in spans: the span ExampleGen converts, as a
        run-time parameter each run fills (Kubeflow: a recurring run's
        schedule); None: ``config.span``.
      state_dir: a window of spans on Kubeflow: the daily state's folder, which
        SpanWindow and RecordRun keep in place of the Resolvers (local runs: None).
      last_task: builds a task that follows every other, from the components
        by id (Kubeflow's report task); None: no such task.

    Returns:
      The TFX pipeline.
    """
    curated_schema, example_gen = _ingest(
        config, config.span if requested_span is None else requested_span
    )
    statistics = example_gen.outputs[keys.STATISTICS_KEY]
    earlier = _earlier_runs(config, example_gen, state_dir, compare_to_latest_blessed)
    schema_gen, example_validator = _schema_and_validation(curated_schema, statistics)
    schema = schema_gen.outputs[keys.SCHEMA_KEY]
    transform, trainer = _transform_and_train(config, earlier, statistics, schema)
    judged, blessing = _judge_and_push(
        config,
        example_gen,
        trainer,
        earlier,
        schema,
        compare_to_latest_blessed=compare_to_latest_blessed,
        publish_after_metadata=publish_after_metadata,
    )
    checked = [example_gen, schema_gen, example_validator, *earlier.nodes]
    components = [*checked, transform, trainer, *judged]
    if earlier.span_window:
        components.append(earlier_runs.record_run(earlier, transform, trainer, blessing, state_dir))
    if last_task is not None:
        # Built before the Pipeline: TFX accepts only the nodes that exist when it is.
        components.append(last_task({c.id: c for c in components}))
    return Pipeline(
        pipeline_name=config.name,
        pipeline_root=pipeline_root,
        components=components,
        metadata_connection_config=metadata_connection_config,
        beam_pipeline_args=list(beam_pipeline_args),
        enable_cache=enable_cache,
    )


def _earlier_runs(
    config: PipelineConfig, example_gen, state_dir: str | None, compare_to_latest_blessed: bool
) -> earlier_runs.EarlierRuns:
    """What the run builds on: SpanWindow over the daily state on Kubeflow, Resolvers over
    ML Metadata on local runs (``daily.earlier``)."""
    if state_dir:
        return earlier_runs.from_daily_state(
            example_gen,
            state_dir,
            window=config.window,
            data_pattern=config.source.spans.path,
            warm_start=config.warm_start,
        )
    return earlier_runs.from_resolvers(
        example_gen,
        window=config.window,
        span=config.span,
        in_spans=bool(config.source.spans) and config.span is not None,
        warm_start=config.warm_start,
        compare_to_latest_blessed=compare_to_latest_blessed,
    )


def _schema_and_validation(curated_schema, statistics) -> tuple:
    """The schema (the curated one, or SchemaGen's inferred from the statistics) and the
    ExampleValidator that holds the statistics to it."""
    schema_gen = curated_schema or SchemaGen(statistics=statistics, infer_feature_shape=True)
    example_validator = ExampleValidator(
        statistics=statistics, schema=schema_gen.outputs[keys.SCHEMA_KEY]
    ).with_id(EXAMPLE_VALIDATOR_ID)
    return schema_gen, example_validator


def _transform_and_train(config: PipelineConfig, earlier, statistics, schema) -> tuple:
    """Transform and the Trainer over the run's examples (or its window's)."""
    materialize = nodes.materializes(config.module_file, config.source)
    transform = nodes.transform(
        config.task,
        examples=earlier.examples,
        schema=schema,
        # The built-in preprocessing_fn takes its analyzers' results from ExampleGen's
        # statistics where they are exact: a window's, one per span, merged.
        statistics=earlier.window_statistics if earlier.windowed else statistics,
        analyzer_cache=earlier.analyzer_cache,
        materialize=materialize,
        module_file=config.module_file,
    ).with_id(TRANSFORM_ID)
    trainer = nodes.trainer(
        config.task,
        config.training,
        examples=(
            transform.outputs[keys.TRANSFORMED_EXAMPLES_KEY] if materialize else earlier.examples
        ),
        transform_graph=transform.outputs[keys.TRANSFORM_GRAPH_KEY],
        schema=schema,
        steps=config.train_steps,
        eval_steps=config.eval_steps,
        base_model=earlier.base_model,
        materialized=materialize,
        module_file=config.module_file,
    ).with_id(TRAINER_ID)
    return transform, trainer


def _judge_and_push(
    config: PipelineConfig,
    example_gen,
    trainer,
    earlier,
    schema,
    *,
    compare_to_latest_blessed: bool,
    publish_after_metadata: bool,
) -> tuple[list[BaseNode], BaseChannel]:
    """The latest blessed model's Resolver (if asked), the span's DriftCheck (with a previous
    span), the Evaluator and the Pusher, in that order; and the Evaluator's blessing."""
    judged: list[BaseNode] = []
    baseline_model = earlier.baseline_model
    if compare_to_latest_blessed:
        resolver = baseline_model_resolver(trainer.outputs[keys.MODEL_KEY])
        baseline_model = resolver.outputs[keys.MODEL_KEY]
        judged.append(resolver)
    drift_check = None
    if earlier.previous_statistics is not None:
        drift_check = DriftCheck(
            statistics=example_gen.outputs[keys.STATISTICS_KEY],
            previous_statistics=earlier.previous_statistics,
            schema=schema,
            max_js=config.drift.max_js,
            max_linf=config.drift.max_linf,
        ).with_id(DRIFT_CHECK_ID)
        judged.append(drift_check)
    evaluator = nodes.evaluator(
        config.task,
        config.thresholds,
        config.evaluation,
        examples=example_gen.outputs[keys.EXAMPLES_KEY],
        model=trainer.outputs[keys.MODEL_KEY],
        baseline_model=baseline_model,
        module_file=config.module_file,
    ).with_id(EVALUATOR_ID)
    pusher = nodes.pusher(
        config.serving_dir,
        model=trainer.outputs[keys.MODEL_KEY],
        blessing=evaluator.outputs[keys.BLESSING_KEY],
        drift=drift_check.outputs[keys.ANOMALIES_KEY] if drift_check else None,
        on_drift=config.drift.on_drift,
        publish_after_metadata=publish_after_metadata,
    ).with_id(PUSHER_ID)
    return [*judged, evaluator, pusher], evaluator.outputs[keys.BLESSING_KEY]
