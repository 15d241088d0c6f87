"""ExampleGen's page for Kubeflow Pipelines' UI (system.Markdown): what was converted, into
which shards, what was quarantined, and each feature's statistics on the train split.

Written from the shard plan and the statistics ExampleGen has just written:
no record is read again. What the data names is escaped (``markdown_text``).
"""

from __future__ import annotations

from tensorflow_metadata.proto.v0 import statistics_pb2

from tfrecord_pipelines.components.categorical import value_counts
from tfrecord_pipelines.components.example_gen.shard_plan_report import ShardPlanReport
from tfrecord_pipelines.components.markdown_text import markdown_text
from tfrecord_pipelines.components.storage import filesystem

TOP_VALUES_SHOWN = 3
_DESCRIBED_SPLIT = "train"


def _statistics(path: str) -> statistics_pb2.DatasetFeatureStatistics | None:
    if not filesystem.exists(path):
        return None
    with filesystem.open_file(path, "rb") as f:
        found = statistics_pb2.DatasetFeatureStatisticsList.FromString(f.read())
    return found.datasets[0] if found.datasets else None


def _feature_row(feature: statistics_pb2.FeatureNameStatistics, rows: int) -> str:
    name = ".".join(feature.path.step) or feature.name
    kind = statistics_pb2.FeatureNameStatistics.Type.Name(feature.type).lower()
    counts = value_counts(feature)
    if counts is not None:  # categories (a categorical integer, a class label): no mean
        missing = feature.num_stats.common_stats.num_missing
        top = ", ".join(f"{value} ({count:,})" for value, count in counts[:TOP_VALUES_SHOWN])
        described = f"{len(counts):,} distinct; most common: {top}"
        kind += ", categories"
    elif feature.HasField("num_stats"):
        stats = feature.num_stats
        missing = stats.common_stats.num_missing
        described = (
            f"mean {stats.mean:.4g}, std dev {stats.std_dev:.4g}, "
            f"min {stats.min:.4g}, max {stats.max:.4g}"
        )
    elif feature.HasField("string_stats"):
        stats = feature.string_stats
        missing = stats.common_stats.num_missing
        top = ", ".join(
            f"{v.value} ({int(v.frequency):,})" for v in stats.top_values[:TOP_VALUES_SHOWN]
        )
        described = f"{stats.unique:,} distinct; most common: {top}"
    else:
        missing, described = 0, ""
    share = f"{missing / rows:.1%}" if rows else ""
    return f"| {markdown_text(name)} | {kind} | {share} | {markdown_text(described)} |"


def render(plan: ShardPlanReport, statistics_paths: dict[str, str] | None) -> str:
    """The page, from the shard plan (``shard_plan.json``) and each split's statistics file."""
    lines = [
        f"## Examples: {plan.records_written:,} records in "
        f"{sum(len(s.shards) for s in plan.splits.values())} shards",
        "",
        f"{plan.records_read:,} records read, {plan.quarantined:,} quarantined; "
        f"shards compressed {plan.compression}.",
        "",
        "| split | records | shards | bytes |",
        "| --- | --- | --- | --- |",
    ]
    for name, split in plan.splits.items():
        lines.append(
            f"| {markdown_text(name)} | {split.records:,} | {len(split.shards)} | {split.bytes:,} |"
        )
    if plan.quarantined:
        lines += ["", "Quarantined, by reason:", ""]
        lines += [
            f"- {markdown_text(reason)}: {count:,}"
            for reason, count in plan.quarantined_by_reason.items()
        ]
    dataset = _statistics((statistics_paths or {}).get(_DESCRIBED_SPLIT, ""))
    if dataset is not None:
        lines += [
            "",
            f"### Features of the {_DESCRIBED_SPLIT} split ({dataset.num_examples:,} records)",
            "",
            "| feature | type | missing | statistics |",
            "| --- | --- | --- | --- |",
            *(_feature_row(f, dataset.num_examples) for f in dataset.features),
        ]
    return "\n".join(lines) + "\n"
