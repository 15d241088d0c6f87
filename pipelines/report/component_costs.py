"""What each component of a run cost: wall time, CPU time and records per second."""

from __future__ import annotations

import dataclasses
import json

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.example_gen.shard_plan_report import ShardPlanReport
from tfrecord_pipelines.components.keys import (
    EVALUATOR_ID,
    EXAMPLE_GEN_ID,
    SHARD_PLAN_KEY,
    TRAINER_ID,
    TRANSFORM_ID,
)
from tfrecord_pipelines.components.trainer.training_length import TrainingLength
from tfrecord_pipelines.local.component_costs import read_cost
from tfrecord_pipelines.local.run_record import NodeExecution
from tfrecord_pipelines.report.span_window import recorded_analysis

# What each data component's records are: a user compares rates of like with like.
RECORDS_MEANING = {
    EXAMPLE_GEN_ID: "input rows read (converted and described)",
    TRANSFORM_ID: "train examples read and analyzed",
    TRAINER_ID: "examples trained on",
    EVALUATOR_ID: "eval examples scored",
}


@dataclasses.dataclass(frozen=True)
class ComponentCost:
    """One component's cost in a run.

    Attributes:
      node_id: the component's id.
      wall_seconds: its executor's wall time (None: reused, or not metered).
      cpu_seconds: its executor's CPU time, user + sys.
      records: the records it processed (see RECORDS_MEANING), if it reads data.
    """

    node_id: str
    wall_seconds: float | None
    cpu_seconds: float | None
    records: int | None

    @property
    def records_meaning(self) -> str | None:
        """What this component's records are, e.g. "train examples read and analyzed"."""
        return RECORDS_MEANING.get(self.node_id)

    @property
    def records_per_second(self) -> float | None:
        """Records per wall second, where both are known."""
        if not self.records or not self.wall_seconds:
            return None
        return self.records / self.wall_seconds


def example_gen_shard_plan(run: dict[str, NodeExecution]) -> ShardPlanReport | None:
    """The run's ShardedExampleGen shard plan, as its examples artifact records it (or None)."""
    node = run.get(EXAMPLE_GEN_ID)
    examples = node.output(keys.EXAMPLES_KEY) if node else None
    if examples is None or SHARD_PLAN_KEY not in examples.custom_properties:
        return None
    return ShardPlanReport.loads(examples.custom_properties[SHARD_PLAN_KEY].string_value)


def _split_records(run: dict[str, NodeExecution]) -> tuple[int | None, dict[str, int]]:
    plan = example_gen_shard_plan(run)
    if plan is None:
        return None, {}
    return plan.records_read, plan.split_records


def _analysis_from_statistics(run: dict[str, NodeExecution]) -> bool:
    """Whether Transform took its whole analysis from ExampleGen's statistics (read nothing)."""
    analysis = json.loads(recorded_analysis(run) or "{}")
    return bool(analysis.get("from_statistics")) and not analysis.get("analyzed")


def component_costs(
    run: dict[str, NodeExecution],
    training: TrainingLength | None,
    analyzed_rows: int | None = None,
) -> list[ComponentCost]:
    """Every executed component's cost, in execution order (reused ones cost nothing).

    Args:
      run: the run's executions by node id.
      training: what the run's Trainer trained on (its ``training.json``), if it said.
      analyzed_rows: the train rows Transform read, where they are not this
        run's train split (a window of spans: the spans its cache lacked).
    """
    read, splits = _split_records(run)
    if analyzed_rows is None:
        analyzed_rows = None if _analysis_from_statistics(run) else splits.get("train")
    records = {
        EXAMPLE_GEN_ID: read,
        TRANSFORM_ID: analyzed_rows,
        TRAINER_ID: training.examples if training else None,
        EVALUATOR_ID: splits.get("eval"),
    }
    costs = []
    for node_id, node in run.items():
        cost = read_cost(node.execution)
        if cost is None:
            continue
        costs.append(
            ComponentCost(node_id, cost.wall_seconds, cost.cpu_seconds, records.get(node_id))
        )
    return costs
