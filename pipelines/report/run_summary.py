"""What one local run produced, read back from its own executions in ML Metadata."""

from __future__ import annotations

import dataclasses

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.daily.baseline_model import (
    BASE_MODEL_RESOLVER,
    BASELINE_RESOLVER,
)
from tfrecord_pipelines.components.daily.resolvers import (
    ANALYZER_CACHE_RESOLVER,
    PREVIOUS_SPAN_RESOLVER,
    WINDOW_RESOLVER,
)
from tfrecord_pipelines.components.daily.window_summary import WindowSummary
from tfrecord_pipelines.components.evaluator import paired_change
from tfrecord_pipelines.components.evaluator.intervals import metric_intervals
from tfrecord_pipelines.components.evaluator.metric_values import (
    candidate_values,
    overall_metric_values,
)
from tfrecord_pipelines.components.evaluator.paired_change import PairedChange
from tfrecord_pipelines.components.keys import (
    BLOCKED_PROPERTY,
    EVALUATOR_ID,
    EXAMPLE_GEN_ID,
    PUSHER_ID,
    TRAINER_ID,
)
from tfrecord_pipelines.components.trainer.input_stall import HOST_NAME as HOST_STALL
from tfrecord_pipelines.components.trainer.input_stall import METRIC_NAME as STALL
from tfrecord_pipelines.components.trainer.input_stall import final_epoch, read_report
from tfrecord_pipelines.components.trainer.resume import resumed_steps
from tfrecord_pipelines.components.trainer.training_length import (
    TrainingLength,
    read_training_report,
)
from tfrecord_pipelines.components.trainer.warm_start import read_report as read_warm_start
from tfrecord_pipelines.local.run_record import NodeExecution, read_run
from tfrecord_pipelines.report.component_costs import (
    ComponentCost,
    component_costs,
    example_gen_shard_plan,
)
from tfrecord_pipelines.report.evaluation import LabelClasses, read_label_classes
from tfrecord_pipelines.report.span_window import read_drift, summarize_window

# Nodes that pick artifacts from ML Metadata: they run, but compute nothing a user counts.
RESOLVERS = (
    BASELINE_RESOLVER,
    BASE_MODEL_RESOLVER,
    WINDOW_RESOLVER,
    ANALYZER_CACHE_RESOLVER,
    PREVIOUS_SPAN_RESOLVER,
)


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """The outputs a user looks for after a run, all from that run's executions.

    Attributes:
      blessed: whether the Evaluator blessed this run's model.
      pushed_model: the pushed model's folder, or None if it was not pushed.
      model: the trained model artifact's folder.
      evaluation: the Evaluator's output folder (load with tfma.load_eval_result).
      metrics: this run's model's overall metrics on the eval split, by name
        (never the baseline's); ``example_count`` is the eval rows behind them.
      intervals: their 95% confidence intervals (low, high) and the eval rows
        behind each, by name, where known (``components.evaluator.intervals``).
      classes: the label's class names and positive class, as the Evaluator
        wrote them (None: regression, or a module file's preprocessing).
      model_run: the Trainer's TensorBoard logs and input-stall report.
      input_stall: the last training epoch's input stall (share of step time
        spent waiting for batches), or None if the Trainer wrote no report.
      host_stall: the last training epoch's host stall (share of step time
        spent waiting for the host between calls), or None.
      steps_per_call: the steps each call ran, or None if the report does not say.
      input_stall_verdict: the last epoch's verdict: input-bound, host-bound,
        device-bound, or too short to tell (an epoch of too few steps).
      training: the steps, examples and epochs the model was trained on, or
        None if the Trainer did not say (a module file's run_fn).
      warm_start: whether the Trainer started from an earlier blessed model,
        which, why (not), and its steps against a fresh start's
        (``warm_start.write_report``); None if the Trainer did not say.
      resumed_steps: training steps this run's Trainer took over from the
        backup of an interrupted execution (0: it trained from the start).
      quarantined: input records ExampleGen could not convert.
      quarantine: the folder of their JSON lines.
      skipped_files: an image folder's files left out as not named like
        images: how many, and the first of them (``image_folder.describe_skipped``).
      shards_adjusted: "split: why" for each split whose shard count the
        reader floor or the records' cap changed (``ShardPlan.adjusted``).
      span: the span ExampleGen converted, its version (None: the pattern has
        no {VERSION}) and the input pattern it read (span folders filled in):
        for data in spans; 0, None and the pattern otherwise.
      drift: data in spans: this span against the previous one, feature by
        feature (``{name: {measure, value, threshold, drifted}}``), and the
        previous span; None without spans or a previous span.
      blocked_by_drift: the drifted features that kept the model from being
        pushed ("" if none did).
      window: with ``--window``: the window's spans, their rows, and which
        spans Transform analyzed or took from its analyzer cache.
      pushed_earlier: the push was an earlier run's, reused with the Pusher.
      reused: the components whose earlier outputs were reused (CACHED).
      executed: the components that ran (not counting Resolvers).
      costs: each component that ran: wall and CPU time, records per second.
      against_baseline: the model against the baseline on the same eval rows (the
        paired test that gates the push), when there was a baseline.
    """

    blessed: bool
    pushed_model: str | None
    model: str
    evaluation: str
    metrics: dict[str, float]
    intervals: dict[str, tuple[tuple[float, float], int]]
    classes: LabelClasses | None
    model_run: str
    input_stall: float | None
    host_stall: float | None
    steps_per_call: int | None
    input_stall_verdict: str | None
    training: TrainingLength | None
    warm_start: dict | None
    resumed_steps: int
    quarantined: int
    quarantine: str
    skipped_files: tuple[int, list[str]]
    shards_adjusted: tuple[str, ...]
    span: tuple[int, int | None, str | None]
    window: WindowSummary | None
    drift: tuple[int, dict[str, dict]] | None
    blocked_by_drift: str
    pushed_earlier: bool
    reused: tuple[str, ...]
    executed: tuple[str, ...]
    costs: tuple[ComponentCost, ...] = ()
    against_baseline: PairedChange | None = None


def overall_metrics(evaluation_uri: str) -> dict[str, float]:
    """The candidate model's metrics on the whole eval split (never the baseline's)."""
    return candidate_values(overall_metric_values(evaluation_uri))


def _node(run: dict[str, NodeExecution], node_id: str) -> NodeExecution:
    node = run.get(node_id)
    if node is None or node.state not in ("complete", "cached"):
        state = node.state if node else "never started"
        raise LookupError(f"This run's {node_id} did not finish ({state}).")
    return node


def summarize_run(store, pipeline_name: str, run_id: str) -> RunSummary:
    """Reads run ``run_id``'s model, blessing, push, metrics and quarantine.

    Raises:
      LookupError: if the run has no finished Pusher, Evaluator, Trainer or ExampleGen.
    """
    run = read_run(store, pipeline_name, run_id)
    pusher_execution = _node(run, PUSHER_ID)
    pusher = pusher_execution.output(keys.PUSHED_MODEL_KEY)
    evaluator = _node(run, EVALUATOR_ID)
    trainer = _node(run, TRAINER_ID)
    example_gen = _node(run, EXAMPLE_GEN_ID)
    quarantine = example_gen.output(keys.QUARANTINE_KEY)
    plan = example_gen_shard_plan(run)
    skipped = plan.skipped_files if plan else None
    evaluation = evaluator.output(keys.EVALUATION_KEY)
    model_run = trainer.output(keys.MODEL_RUN_KEY)
    was_pushed = pusher.custom_properties["pushed"].int_value == 1
    training = read_training_report(model_run.uri)
    # One read of TFMA's metrics and plots: the intervals come from the same values.
    metrics = overall_metrics(evaluation.uri)
    window = summarize_window(run)
    # One read of the input-stall report: its last epoch and its steps a call.
    stall_report = read_report(model_run.uri)
    stall = final_epoch(stall_report)
    return RunSummary(
        blessed=evaluator.output(keys.BLESSING_KEY)
        .custom_properties[keys.BLESSED_PROPERTY]
        .int_value
        == 1,
        pushed_model=(
            pusher.custom_properties["pushed_destination"].string_value if was_pushed else None
        ),
        model=trainer.output(keys.MODEL_KEY).uri,
        evaluation=evaluation.uri,
        metrics=metrics,
        intervals=metric_intervals(metrics),
        classes=read_label_classes(evaluation.uri),
        model_run=model_run.uri,
        input_stall=stall[STALL] if stall else None,
        host_stall=stall.get(HOST_STALL) if stall else None,
        steps_per_call=stall_report.get("steps_per_call") if stall_report else None,
        input_stall_verdict=stall["verdict"] if stall else None,
        training=training,
        warm_start=read_warm_start(model_run.uri),
        resumed_steps=resumed_steps(model_run.uri),
        quarantined=quarantine.custom_properties[keys.QUARANTINE_COUNT_PROPERTY].int_value,
        quarantine=quarantine.uri,
        skipped_files=(skipped.count, list(skipped.first)) if skipped else (0, []),
        shards_adjusted=tuple(
            f"{name} {why}" for name, why in (plan.shards_adjusted if plan else {}).items()
        ),
        span=(plan.span, plan.version, plan.input_pattern) if plan else (0, None, None),
        window=window,
        drift=read_drift(run),
        blocked_by_drift=pusher.custom_properties[BLOCKED_PROPERTY].string_value
        if BLOCKED_PROPERTY in pusher.custom_properties
        else "",
        pushed_earlier=pusher_execution.state == "cached",
        reused=tuple(n for n, e in run.items() if e.state == "cached"),
        executed=tuple(n for n, e in run.items() if e.state == "complete" and n not in RESOLVERS),
        costs=tuple(component_costs(run, training, window.analyzed_rows() if window else None)),
        against_baseline=paired_change.read(evaluation.uri),
    )
