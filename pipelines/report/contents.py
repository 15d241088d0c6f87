"""What a run's report shows that its artifacts alone tell: data, quarantine, features,
schema, training, evaluation and push.

Two writers find the artifacts: the report command in the run's ML Metadata
(``run_report``, which adds each component's state and cost, the window and the
drift), and the pipeline's report task on Kubeflow, which takes them as inputs
(``component``). Neither reads ML Metadata here.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.example_gen.quarantine import (
    QuarantineSummary,
    summarize_quarantine,
)
from tfrecord_pipelines.components.example_gen.shard_plan_report import (
    ShardPlanReport,
    read_shard_plan,
)
from tfrecord_pipelines.components.keys import (
    BLOCKED_PROPERTY,
    DRIFT_CHECK_ID,
    EVALUATOR_ID,
    EXAMPLE_GEN_ID,
    EXAMPLE_VALIDATOR_ID,
    PUSHER_ID,
    SPAN_WINDOW_ID,
    TRAINER_ID,
    TRANSFORM_ID,
)
from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.components.trainer.training_length import (
    TrainingLength,
    read_training_report,
)
from tfrecord_pipelines.report import charts, statistics, thumbnails
from tfrecord_pipelines.report.evaluation import EvaluationView, read_evaluation
from tfrecord_pipelines.report.training import TrainingView, read_training
from tfrecord_pipelines.report.verdicts import (
    coverage_text,
    coverage_warns,
    not_pushed_reasons,
    warm_started,
)

if TYPE_CHECKING:
    from tfx.types import Artifact

    from tfrecord_pipelines.components.daily.window_summary import WindowSummary

    # Types only: their modules read ML Metadata, which the report task has not.
    from tfrecord_pipelines.report.component_costs import ComponentCost

QUARANTINE_ROWS_SHOWN = 10
# The artifacts the report reads, by the Reporter's input key: the component that
# outputs each and its output key (None: whichever component outputs that key,
# as SchemaGen, ImportSchemaGen or a curated schema's component does the schema).
ARTIFACT_SOURCES = {
    keys.EXAMPLES_KEY: (EXAMPLE_GEN_ID, keys.EXAMPLES_KEY),
    keys.QUARANTINE_KEY: (EXAMPLE_GEN_ID, keys.QUARANTINE_KEY),
    keys.STATISTICS_KEY: (EXAMPLE_GEN_ID, keys.STATISTICS_KEY),
    # ExampleValidator's: DriftCheck's output has the same key.
    keys.ANOMALIES_KEY: (EXAMPLE_VALIDATOR_ID, keys.ANOMALIES_KEY),
    keys.SCHEMA_KEY: (None, keys.SCHEMA_KEY),
    keys.MODEL_RUN_KEY: (TRAINER_ID, keys.MODEL_RUN_KEY),
    keys.EVALUATION_KEY: (EVALUATOR_ID, keys.EVALUATION_KEY),
    keys.BLESSING_KEY: (EVALUATOR_ID, keys.BLESSING_KEY),
    keys.PUSHED_MODEL_KEY: (PUSHER_ID, keys.PUSHED_MODEL_KEY),
}
# On Kubeflow, the daily pipeline's artifacts the report shows the window and the drift from
# (a local run's report reads them from ML Metadata): by the Reporter's input key, as above.
DAILY_SOURCES = {
    keys.WINDOW_KEY: (SPAN_WINDOW_ID, keys.WINDOW_KEY),
    keys.TRANSFORM_GRAPH_KEY: (TRANSFORM_ID, keys.TRANSFORM_GRAPH_KEY),
    keys.DRIFT_KEY: (DRIFT_CHECK_ID, keys.ANOMALIES_KEY),
}
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
      run_id: the run: its ML Metadata ``pipeline_run`` context (local runs), or
        the run's folder under the pipeline root, which KFP names by the run's id.
      written_by: what wrote the page, from what.
      components: every component of the pipeline, in execution order (empty when
        the page is written by a task of the run, which cannot see the others).
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
      coverage_note: ``coverage`` in words, as the summary says it
        (``verdicts.coverage_text``); coverage_warns: whether it warns.
      evaluation: the Evaluator's metrics, thresholds and baseline.
      blessed: whether the Evaluator blessed the model.
      baseline_model: the model compared with (the last blessed one), if any.
      pushed_model: where the Pusher put the model, if it pushed.
      thumbnails: image data: a few eval images per class name.
      window: with a window of spans: its spans, their rows, which this run
        converted, and which Transform analyzed or took from its cache.
      drift: data in spans: the previous span and each feature's drift from it.
      blocked_by_drift: the drifted features that kept the model from being pushed.
      not_pushed: why the model was not pushed, as the summary says it
        (``verdicts.not_pushed_reasons``); empty when it was, or nothing says.
      missing: a note per section that could not be shown, saying why.
    """

    pipeline: str
    run_id: str
    written_by: str
    components: list[ComponentRow] = dataclasses.field(default_factory=list)
    shard_plan: ShardPlanReport | None = None
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
    coverage_note: str | None = None
    coverage_warns: bool = False
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
    not_pushed: list[str] = dataclasses.field(default_factory=list)
    missing: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class RunArtifacts:
    """Where a run's artifacts are, and what their properties say; None where the
    run did not produce one (its component did not finish).

    Attributes:
      examples_uri: ShardedExampleGen's examples.
      images: whether the examples are images (their eval split gets thumbnails).
      quarantine_uri: ShardedExampleGen's quarantine.
      statistics_uri: ShardedExampleGen's statistics.
      anomalies_uri: ExampleValidator's anomalies.
      schema_uri: the schema (SchemaGen's or the curated one).
      model_run_uri: the Trainer's logs.
      evaluation_uri: the Evaluator's evaluation.
      blessed: whether the Evaluator blessed the model (None: it did not finish).
      baseline_model: the model the Evaluator compared with, if any.
      pusher_finished: whether the Pusher finished (pushing or not).
      pushed_model: where the Pusher put the model, if it pushed.
      blocked_by_drift: the drifted features that kept the Pusher from pushing.
    """

    examples_uri: str | None = None
    images: bool = False
    quarantine_uri: str | None = None
    statistics_uri: str | None = None
    anomalies_uri: str | None = None
    schema_uri: str | None = None
    model_run_uri: str | None = None
    evaluation_uri: str | None = None
    blessed: bool | None = None
    baseline_model: str | None = None
    pusher_finished: bool = False
    pushed_model: str | None = None
    blocked_by_drift: str | None = None


def run_artifacts(
    found: Mapping[str, Artifact], images: bool, baseline_model: str | None = None
) -> RunArtifacts:
    """What the report reads from the artifacts ``found`` (by ``ARTIFACT_SOURCES`` key;
    a key absent: not produced), whoever found them."""

    def uri(key: str) -> str | None:
        return found[key].uri if key in found else None

    blessing, pushed = found.get(keys.BLESSING_KEY), found.get(keys.PUSHED_MODEL_KEY)
    evaluated = blessing is not None
    was_pushed = pushed is not None and pushed.get_int_custom_property("pushed") == 1
    blocked = pushed is not None and pushed.has_custom_property(BLOCKED_PROPERTY)
    destination = pushed.get_string_custom_property("pushed_destination") if was_pushed else None
    return RunArtifacts(
        examples_uri=uri(keys.EXAMPLES_KEY),
        images=images,
        quarantine_uri=uri(keys.QUARANTINE_KEY),
        statistics_uri=uri(keys.STATISTICS_KEY),
        anomalies_uri=uri(keys.ANOMALIES_KEY),
        schema_uri=uri(keys.SCHEMA_KEY),
        model_run_uri=uri(keys.MODEL_RUN_KEY),
        evaluation_uri=uri(keys.EVALUATION_KEY),
        blessed=blessing.get_int_custom_property(keys.BLESSED_PROPERTY) == 1 if evaluated else None,
        baseline_model=baseline_model if evaluated else None,
        pusher_finished=pushed is not None,
        pushed_model=destination,
        blocked_by_drift=pushed.get_string_custom_property(BLOCKED_PROPERTY) if blocked else None,
    )


def read_sections(artifacts: RunArtifacts) -> dict:
    """The ``RunReport`` fields that ``artifacts`` tell, ``missing`` included: a note
    per section whose artifact the run did not produce."""
    fields: dict = {"missing": {}}

    def missing(section: str, what: str) -> None:
        fields["missing"][section] = f"not produced by this run: {what} did not finish"

    if artifacts.examples_uri is not None:
        fields["examples_uri"] = artifacts.examples_uri
        plan = read_shard_plan(artifacts.examples_uri)
        fields["shard_plan"] = plan
        if plan:
            fields["shard_chart"] = charts.shard_sizes(plan)
        split_uri = os.path.join(artifacts.examples_uri, f"Split-{_THUMBNAIL_SPLIT}")
        if artifacts.images and filesystem.isdir(split_uri):
            fields["thumbnails"] = thumbnails.class_thumbnails(split_uri)
    else:
        missing("data", EXAMPLE_GEN_ID)
    if artifacts.quarantine_uri is not None:
        fields["quarantine_uri"] = artifacts.quarantine_uri
        fields["quarantine"] = summarize_quarantine(artifacts.quarantine_uri, QUARANTINE_ROWS_SHOWN)
    if artifacts.statistics_uri is not None:
        anomalies_uri = artifacts.anomalies_uri
        found = statistics.read_anomalies(anomalies_uri) if anomalies_uri is not None else {}
        fields["features"] = statistics.feature_views(
            statistics.read_statistics(artifacts.statistics_uri), found
        )
        fields["dataset_anomalies"] = statistics.dataset_anomalies(found)
        if anomalies_uri is not None:
            fields["anomaly_count"] = statistics.count_anomalies(found)
        else:
            missing("anomalies", EXAMPLE_VALIDATOR_ID)
    else:
        missing("statistics", EXAMPLE_GEN_ID)
    if artifacts.schema_uri is not None:
        fields["schema_uri"] = artifacts.schema_uri
        fields["schema"] = statistics.schema_features(statistics.read_schema(artifacts.schema_uri))
    else:
        missing("schema", "the schema's component")
    if artifacts.model_run_uri is not None:
        fields["model_run_uri"] = artifacts.model_run_uri
        fields["training"] = read_training(artifacts.model_run_uri)
        coverage = read_training_report(artifacts.model_run_uri)
        fields["coverage"] = coverage
        if coverage is not None:
            # Imported here: warm_start imports tf.Transform, which nothing else here needs.
            from tfrecord_pipelines.components.trainer.warm_start import read_report

            warm = warm_started(read_report(artifacts.model_run_uri))
            fields["coverage_note"] = coverage_text(coverage, warm)
            fields["coverage_warns"] = coverage_warns(coverage, warm)
    else:
        missing("training", TRAINER_ID)
    if artifacts.evaluation_uri is not None and artifacts.blessed is not None:
        fields["evaluation_uri"] = artifacts.evaluation_uri
        fields["evaluation"] = read_evaluation(artifacts.evaluation_uri)
        fields["blessed"] = artifacts.blessed
        fields["baseline_model"] = artifacts.baseline_model
    else:
        missing("evaluation", EVALUATOR_ID)
    if artifacts.pushed_model is not None:
        fields["pushed_model"] = artifacts.pushed_model
    elif artifacts.blocked_by_drift is not None or artifacts.pusher_finished:
        if artifacts.blocked_by_drift is not None:
            fields["blocked_by_drift"] = artifacts.blocked_by_drift
        fields["not_pushed"] = not_pushed_reasons(artifacts.blessed, artifacts.blocked_by_drift)
    else:
        missing("push", PUSHER_ID)
    return fields
