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

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ml_metadata.proto import metadata_store_pb2
from tfx.components import ExampleValidator, SchemaGen
from tfx.dsl.components.base.base_node import BaseNode
from tfx.orchestration.data_types import RuntimeParameter
from tfx.orchestration.pipeline import Pipeline
from tfx.types import BaseChannel

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.curated_schema import CuratedSchemaGen
from tfrecord_pipelines.components.daily.baseline_model import (
    base_model_resolver,
    baseline_model_resolver,
)
from tfrecord_pipelines.components.daily.component import RecordRun, SpanWindow
from tfrecord_pipelines.components.daily.resolvers import (
    CACHE_KEY,
    analyzer_cache_resolver,
    previous_span_statistics_resolver,
    span_window_resolver,
)
from tfrecord_pipelines.components.drift.component import DriftCheck
from tfrecord_pipelines.components.example_gen import ShardedExampleGen
from tfrecord_pipelines.components.keys import (
    DRIFT_CHECK_ID,
    EVALUATOR_ID,
    EXAMPLE_GEN_ID,
    EXAMPLE_VALIDATOR_ID,
    PUSHER_ID,
    RECORD_RUN_ID,
    SCHEMA_IMPORT_ID,
    SPAN_WINDOW_ID,
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


@dataclasses.dataclass(frozen=True)
class _Earlier:
    """What a run builds on from earlier runs, and the nodes that find it.

    Attributes:
      nodes: the Resolvers (local runs) or SpanWindow (Kubeflow).
      examples: what Transform and the Trainer read: the window's conversions,
        or ExampleGen's own.
      windowed: whether ``examples`` is a window of spans.
      window_statistics: a window's statistics, one per span (Transform's
        analysis); None without a window (ExampleGen's own).
      analyzer_cache: Transform's analyzer cache of earlier spans, or None (off).
      base_model: the Trainer's warm-start model, or None.
      baseline_model: the Evaluator's baseline, the latest blessed model; None:
        resolved after the Trainer (local runs) or none.
      previous_statistics: the previous span's statistics for DriftCheck, or
        None: no drift check.
      span_window: SpanWindow, whose window RecordRun records, or None.
    """

    nodes: tuple[BaseNode, ...] = ()
    examples: Any = None
    windowed: bool = False
    window_statistics: Any = None
    analyzer_cache: Any = None
    base_model: Any = None
    baseline_model: Any = None
    previous_statistics: Any = None
    span_window: SpanWindow | None = None


def _from_resolvers(
    config: PipelineConfig, example_gen: ShardedExampleGen, compare_to_latest_blessed: bool
) -> _Earlier:
    """A local run's: TFX Resolvers over ML Metadata (``daily.resolvers``)."""
    in_spans = bool(config.source.spans) and config.span is not None
    nodes, examples, cache = [], example_gen.outputs[keys.EXAMPLES_KEY], None
    window_statistics = None
    if config.window:
        if config.span is None:
            raise ValueError("A window of spans needs its last span: set config.span.")
        window = span_window_resolver(example_gen, config.window, config.span)
        cache = analyzer_cache_resolver(TRANSFORM_ID, config.span)
        nodes += [window, cache]
        examples = window.outputs[keys.EXAMPLES_KEY]
        window_statistics = window.outputs[keys.STATISTICS_KEY]
    base_model = previous = None
    if compare_to_latest_blessed and in_spans and config.warm_start:
        warm_start = base_model_resolver(TRAINER_ID, EVALUATOR_ID, config.span)
        nodes.append(warm_start)
        base_model = warm_start.outputs[keys.MODEL_KEY]
    if compare_to_latest_blessed and in_spans:
        resolver = previous_span_statistics_resolver(EXAMPLE_GEN_ID, config.span)
        nodes.append(resolver)
        previous = resolver.outputs[keys.STATISTICS_KEY]
    return _Earlier(
        nodes=tuple(nodes),
        examples=examples,
        windowed=bool(config.window),
        window_statistics=window_statistics,
        analyzer_cache=cache.outputs[CACHE_KEY] if cache else None,
        base_model=base_model,
        previous_statistics=previous,
    )


def _from_daily_state(
    config: PipelineConfig, example_gen: ShardedExampleGen, state_dir: str
) -> _Earlier:
    """A Kubeflow run's: SpanWindow over the daily state in ``state_dir``."""
    window = SpanWindow(
        examples=example_gen.outputs[keys.EXAMPLES_KEY],
        statistics=example_gen.outputs[keys.STATISTICS_KEY],
        quarantine=example_gen.outputs[keys.QUARANTINE_KEY],
        state_dir=state_dir,
        window=config.window,
        data_pattern=config.source.spans.path,
    ).with_id(SPAN_WINDOW_ID)
    return _Earlier(
        nodes=(window,),
        examples=window.outputs[keys.WINDOW_KEY],
        windowed=True,
        window_statistics=window.outputs[keys.WINDOW_STATISTICS_KEY],
        analyzer_cache=window.outputs[keys.ANALYZER_CACHE_KEY],
        base_model=window.outputs[keys.BASE_MODEL_KEY] if config.warm_start else None,
        baseline_model=window.outputs[keys.BASELINE_MODEL_KEY],
        previous_statistics=window.outputs[keys.PREVIOUS_STATISTICS_KEY],
        span_window=window,
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
    earlier = (
        _from_daily_state(config, example_gen, state_dir)
        if state_dir
        else _from_resolvers(config, example_gen, compare_to_latest_blessed)
    )
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
        components.append(_record_run(earlier, transform, trainer, blessing, state_dir))
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


def _schema_and_validation(curated_schema, statistics) -> tuple:
    """The schema (the curated one, or SchemaGen's inferred from the statistics) and the
    ExampleValidator that holds the statistics to it."""
    schema_gen = curated_schema or SchemaGen(statistics=statistics, infer_feature_shape=True)
    example_validator = ExampleValidator(
        statistics=statistics, schema=schema_gen.outputs[keys.SCHEMA_KEY]
    ).with_id(EXAMPLE_VALIDATOR_ID)
    return schema_gen, example_validator


def _record_run(earlier, transform, trainer, blessing, state_dir: str) -> RecordRun:
    """Kubeflow's window: the run's model, blessing and analyzer cache, into the daily state."""
    return RecordRun(
        examples=earlier.examples,
        model=trainer.outputs[keys.MODEL_KEY],
        blessing=blessing,
        state_dir=state_dir,
        analyzer_cache=transform.outputs[keys.UPDATED_ANALYZER_CACHE_KEY],
    ).with_id(RECORD_RUN_ID)


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
