"""Everything the report shows about one run, read from ML Metadata and the run's artifacts.

Each section is read from the artifacts that run's executions published (a
reused execution's are the earlier run's, linked into this one). A section
whose component did not finish says so instead of failing the report, so a
failed run gets a report too.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os

from ml_metadata.proto import metadata_store_pb2
from tfx.types import standard_component_specs as specs

from tfrecord_pipelines.components import filesystem
from tfrecord_pipelines.components.data_source import IMAGES
from tfrecord_pipelines.components.example_gen.keys import (
    QUARANTINE_KEY,
    SHARD_PLAN_FILE,
    SOURCE_FORMAT_KEY,
)
from tfrecord_pipelines.components.example_gen.quarantine import (
    QuarantineSummary,
    summarize_quarantine,
)
from tfrecord_pipelines.components.pusher.executor import BLOCKED_PROPERTY
from tfrecord_pipelines.components.trainer.training_length import (
    TrainingLength,
    read_training_report,
)
from tfrecord_pipelines.definition.pipeline import (
    EVALUATOR_ID,
    EXAMPLE_GEN_ID,
    EXAMPLE_VALIDATOR_ID,
    PUSHER_ID,
    TRAINER_ID,
)
from tfrecord_pipelines.local.component_costs import read_cost
from tfrecord_pipelines.local.run_record import NODE_CONTEXT, NodeExecution, read_run
from tfrecord_pipelines.report import charts, statistics, thumbnails
from tfrecord_pipelines.report.component_costs import ComponentCost, component_costs
from tfrecord_pipelines.report.evaluation import EvaluationView, read_evaluation
from tfrecord_pipelines.report.span_window import WindowSummary, read_drift, summarize_window
from tfrecord_pipelines.report.training import TrainingView, read_training

QUARANTINE_ROWS_SHOWN = 10
_THUMBNAIL_SPLIT = "eval"


@dataclasses.dataclass(frozen=True)
class ComponentRow:
    """A component in this run.

    Attributes:
      node_id: the component's id.
      state: ``complete`` (ran), ``cached`` (reused), ``failed``, ``canceled``,
        ``running`` or ``not run``.
      started: when its execution was created (local time).
      seconds: its own duration, once finished: its launch, driver to publisher
        (local runs), else from its creation to its last update.
      cost: its executor's wall and CPU time and records per second, when
        it ran in a local run.
    """

    node_id: str
    state: str
    started: str
    seconds: float | None
    cost: ComponentCost | None = None


@dataclasses.dataclass(frozen=True)
class RunReport:
    """What the report page shows; a section is None when its component did not finish.

    Attributes:
      pipeline: the pipeline's name.
      run_id: the run (its ML Metadata ``pipeline_run`` context).
      components: every component of the pipeline, in execution order.
      shard_plan: ShardedExampleGen's ``shard_plan.json`` (splits, shards, sizes).
      shard_chart: each shard's size against the target, as inline SVG.
      examples_uri: the examples artifact's folder.
      quarantine: what ExampleGen could not convert, with the first records.
      quarantine_uri: the quarantine's folder.
      features: each feature's statistics per split with its anomalies.
      dataset_anomalies: anomalies of whole splits.
      anomaly_count: anomalous features plus dataset anomalies, over all splits.
      schema: the schema's features in words; schema_uri its folder.
      training: the Trainer's epochs, input stall and verdict.
      coverage: the steps, examples and epochs of the training split the
        model saw (None: the Trainer did not say, e.g. a module file's run_fn).
      evaluation: the Evaluator's metrics, thresholds and baseline.
      blessed: whether the Evaluator blessed the model.
      baseline_model: the model compared with (the last blessed one), if any.
      pushed_model: where the Pusher put the model, if it pushed.
      thumbnails: image data: a few eval images per class name.
      window: with a window of spans: its spans, their rows, which this run
        converted, and which Transform analyzed or took from its cache.
      drift: data in spans: the previous span and each feature's drift from it.
      blocked_by_drift: the drifted features that kept the model from being pushed.
      missing: a note per section that could not be shown, saying why.
    """

    pipeline: str
    run_id: str
    components: list[ComponentRow]
    shard_plan: dict | None = None
    shard_chart: str | None = None
    examples_uri: str | None = None
    quarantine: QuarantineSummary | None = None
    quarantine_uri: str | None = None
    features: list[statistics.FeatureView] = dataclasses.field(default_factory=list)
    dataset_anomalies: list[statistics.Anomaly] = dataclasses.field(default_factory=list)
    anomaly_count: int | None = None
    schema: list[statistics.SchemaFeature] = dataclasses.field(default_factory=list)
    schema_uri: str | None = None
    training: TrainingView | None = None
    coverage: TrainingLength | None = None
    model_run_uri: str | None = None
    evaluation: EvaluationView | None = None
    evaluation_uri: str | None = None
    blessed: bool | None = None
    baseline_model: str | None = None
    pushed_model: str | None = None
    thumbnails: dict[str, list[thumbnails.Thumbnail]] = dataclasses.field(default_factory=dict)
    window: WindowSummary | None = None
    drift: tuple[int, dict[str, dict]] | None = None
    blocked_by_drift: str | None = None
    missing: dict[str, str] = dataclasses.field(default_factory=dict)


def _time(millis: int) -> str:
    return datetime.datetime.fromtimestamp(millis / 1000).isoformat(sep=" ", timespec="seconds")


def _components(
    store, pipeline_name: str, run: dict[str, NodeExecution], training: TrainingLength | None
) -> list[ComponentRow]:
    rows = []
    costs = {cost.node_id: cost for cost in component_costs(run, training)}
    for node_id, node in run.items():
        execution = node.execution
        finished = node.state in ("complete", "cached", "failed", "canceled")
        metered = read_cost(execution)
        if metered is not None and metered.launch_seconds is not None:
            # Its own launch: the execution's last update is when the run's costs were written.
            seconds = metered.launch_seconds
        elif finished:
            seconds = (
                execution.last_update_time_since_epoch - execution.create_time_since_epoch
            ) / 1000
        else:
            seconds = None
        rows.append(
            ComponentRow(
                node_id,
                node.state,
                _time(execution.create_time_since_epoch),
                seconds,
                costs.get(node_id),
            )
        )
    if not any(node.state in ("failed", "canceled") for node in run.values()):
        return rows
    # A run that stopped: the components earlier runs had and this one never started.
    prefix = f"{pipeline_name}."
    for context in store.get_contexts_by_type(NODE_CONTEXT):
        node_id = context.name[len(prefix) :]
        if context.name.startswith(prefix) and node_id not in run:
            rows.append(ComponentRow(node_id, "not run", "", None))
    return rows


def _output(run: dict[str, NodeExecution], key: str, node_id: str | None = None):
    for node in run.values():
        if node_id not in (None, node.node_id) or node.state not in ("complete", "cached"):
            continue
        artifact = node.output(key)
        if artifact is not None:
            return artifact
    return None


def _input_uri(store, node: NodeExecution, key: str) -> str | None:
    """The folder of the artifact an execution took as input ``key``, if it took one."""
    for event in store.get_events_by_execution_ids([node.execution.id]):
        steps = event.path.steps
        if event.type == metadata_store_pb2.Event.INPUT and steps and steps[0].key == key:
            (artifact,) = store.get_artifacts_by_id([event.artifact_id])
            return artifact.uri
    return None


def _read_json(path: str) -> dict | None:
    if not filesystem.exists(path):
        return None
    with filesystem.open_text(path) as f:
        return json.load(f)


def _is_images(run: dict[str, NodeExecution]) -> bool:
    example_gen = run.get(EXAMPLE_GEN_ID)
    properties = example_gen.execution.custom_properties if example_gen else {}
    source_format = properties.get(SOURCE_FORMAT_KEY)
    return source_format is not None and source_format.string_value == IMAGES


def build_run_report(store, pipeline_name: str, run_id: str) -> RunReport:
    """Reads run ``run_id`` of ``pipeline_name`` from its store and artifacts.

    Raises:
      LookupError: if the store has no such run.
    """
    run = read_run(store, pipeline_name, run_id)
    if not run:
        raise LookupError(f"No run {run_id!r} of pipeline {pipeline_name!r} in its metadata.")
    fields: dict = {"missing": {}}

    def missing(section: str, what: str) -> None:
        fields["missing"][section] = f"not produced by this run: {what} did not finish"

    fields["window"] = summarize_window(run)
    fields["drift"] = read_drift(run)
    examples = _output(run, specs.EXAMPLES_KEY, EXAMPLE_GEN_ID)
    if examples is not None:
        fields["examples_uri"] = examples.uri
        plan = _read_json(os.path.join(examples.uri, SHARD_PLAN_FILE))
        fields["shard_plan"] = plan
        if plan:
            fields["shard_chart"] = charts.shard_sizes(plan)
        if _is_images(run):
            split_uri = os.path.join(examples.uri, f"Split-{_THUMBNAIL_SPLIT}")
            if filesystem.isdir(split_uri):
                fields["thumbnails"] = thumbnails.class_thumbnails(split_uri)
    else:
        missing("data", EXAMPLE_GEN_ID)
    quarantine = _output(run, QUARANTINE_KEY, EXAMPLE_GEN_ID)
    if quarantine is not None:
        fields["quarantine_uri"] = quarantine.uri
        fields["quarantine"] = summarize_quarantine(quarantine.uri, QUARANTINE_ROWS_SHOWN)
    stats = _output(run, specs.STATISTICS_KEY)
    # ExampleValidator's: DriftCheck's output has the same key.
    anomalies = _output(run, specs.ANOMALIES_KEY, EXAMPLE_VALIDATOR_ID)
    if stats is not None:
        found = statistics.read_anomalies(anomalies.uri) if anomalies is not None else {}
        fields["features"] = statistics.feature_views(statistics.read_statistics(stats.uri), found)
        fields["dataset_anomalies"] = statistics.dataset_anomalies(found)
        if anomalies is not None:
            fields["anomaly_count"] = statistics.count_anomalies(found)
        else:
            missing("anomalies", "ExampleValidator")
    else:
        missing("statistics", EXAMPLE_GEN_ID)
    schema = _output(run, specs.SCHEMA_KEY)
    if schema is not None:
        fields["schema_uri"] = schema.uri
        fields["schema"] = statistics.schema_features(statistics.read_schema(schema.uri))
    else:
        missing("schema", "the schema's component")
    model_run = _output(run, specs.MODEL_RUN_KEY, TRAINER_ID)
    if model_run is not None:
        fields["model_run_uri"] = model_run.uri
        fields["training"] = read_training(model_run.uri)
        fields["coverage"] = read_training_report(model_run.uri)
    else:
        missing("training", TRAINER_ID)
    evaluation = _output(run, specs.EVALUATION_KEY, EVALUATOR_ID)
    blessing = _output(run, specs.BLESSING_KEY, EVALUATOR_ID)
    if evaluation is not None and blessing is not None:
        fields["evaluation_uri"] = evaluation.uri
        fields["evaluation"] = read_evaluation(evaluation.uri)
        fields["blessed"] = blessing.custom_properties["blessed"].int_value == 1
        fields["baseline_model"] = _input_uri(store, run[EVALUATOR_ID], specs.BASELINE_MODEL_KEY)
    else:
        missing("evaluation", EVALUATOR_ID)
    pushed = _output(run, specs.PUSHED_MODEL_KEY, PUSHER_ID)
    if pushed is not None and pushed.custom_properties["pushed"].int_value == 1:
        fields["pushed_model"] = pushed.custom_properties["pushed_destination"].string_value
    elif pushed is not None and BLOCKED_PROPERTY in pushed.custom_properties:
        fields["blocked_by_drift"] = pushed.custom_properties[BLOCKED_PROPERTY].string_value
    elif pushed is None:
        missing("push", PUSHER_ID)
    return RunReport(
        pipeline=pipeline_name,
        run_id=run_id,
        components=_components(store, pipeline_name, run, fields.get("coverage")),
        **fields,
    )
