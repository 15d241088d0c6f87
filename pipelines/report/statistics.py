"""Per-feature statistics of each split, the anomalies ExampleValidator found, the schema.

Read from the artifacts as TFDV wrote them, with TensorFlow Metadata's own
protos: the ``Split-*/FeatureStats.pb`` of ShardedExampleGen or StatisticsGen (a
``DatasetFeatureStatisticsList``), ExampleValidator's ``Split-*/SchemaDiff.pb``
(an ``Anomalies``) and the schema's ``schema.pbtxt``.
"""

from __future__ import annotations

import dataclasses
import os

from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import anomalies_pb2, schema_pb2, statistics_pb2

from tfrecord_pipelines.components.categorical import value_counts
from tfrecord_pipelines.components.drift import common_bins
from tfrecord_pipelines.components.keys import SPLIT_FOLDER_PREFIX
from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.report import charts

_STATS_FILE = "FeatureStats.pb"
_ANOMALIES_FILE = "SchemaDiff.pb"
_SCHEMA_FILE = "schema.pbtxt"
_TOP_VALUES = 8
_MOST_VALUES_CHARTED = 100
# What TFDV's string statistics show for a value that is not UTF-8 text.
_BYTES_PLACEHOLDER = "__BYTES_VALUE__"
_Histogram = statistics_pb2.Histogram


@dataclasses.dataclass(frozen=True)
class SplitFeature:
    """What one split's statistics say about one feature.

    Attributes:
      examples: examples in the split.
      missing: share of examples without a value.
      numbers: numeric features: mean, std, min, max, zeros (share); else empty.
      unique: string and bytes features, and categories: distinct values.
      top: string features and categories: the commonest values and their share of
        the examples.
      average_bytes: bytes features (images): mean size of a value.
      buckets: numeric features: the equal-width histogram as (low, high, count).
      quantiles: numeric features: TFDV's quantile buckets, from which the
        splits are drawn on common bins.
    """

    examples: int
    missing: float
    numbers: dict[str, float]
    unique: int | None
    top: dict[str, float]
    average_bytes: float | None
    buckets: list[tuple[float, float, float]]
    quantiles: list = dataclasses.field(default_factory=list)
    categorical: bool = False


@dataclasses.dataclass(frozen=True)
class Anomaly:
    """One anomaly ExampleValidator reported for a feature (or the dataset) in a split."""

    split: str
    severity: str
    short: str
    description: str


@dataclasses.dataclass(frozen=True)
class FeatureView:
    """A feature across splits: its statistics side by side, its anomalies, a chart."""

    name: str
    type: str
    splits: dict[str, SplitFeature]
    anomalies: list[Anomaly]
    chart: str


@dataclasses.dataclass(frozen=True)
class SchemaFeature:
    """A feature as the schema describes it, in words."""

    name: str
    type: str
    presence: str
    shape: str
    domain: str
    environments: str


def _split_order(split: str) -> tuple[int, str]:
    return ({"train": 0, "eval": 1}.get(split, 2), split)


def _by_split(uri: str, file_name: str) -> dict[str, bytes]:
    """Each split's file, train first, then eval, then the others by name."""
    found = {}
    for name in filesystem.listdir(uri):
        path = os.path.join(uri, name, file_name)
        if name.startswith(SPLIT_FOLDER_PREFIX) and filesystem.exists(path):
            with filesystem.open_binary(path) as f:
                found[name[len(SPLIT_FOLDER_PREFIX) :]] = f.read()
    return {split: found[split] for split in sorted(found, key=_split_order)}


def read_statistics(uri: str) -> dict[str, statistics_pb2.DatasetFeatureStatistics]:
    """Each split's statistics from an ``ExampleStatistics`` artifact (``Split-*/*.pb``)."""
    return {
        split: statistics_pb2.DatasetFeatureStatisticsList.FromString(data).datasets[0]
        for split, data in _by_split(uri, _STATS_FILE).items()
    }


def read_anomalies(uri: str) -> dict[str, anomalies_pb2.Anomalies]:
    """Each split's anomalies from an ExampleValidator ``ExampleAnomalies`` artifact."""
    return {
        split: anomalies_pb2.Anomalies.FromString(data)
        for split, data in _by_split(uri, _ANOMALIES_FILE).items()
    }


def read_schema(uri: str) -> schema_pb2.Schema:
    """The schema of a ``Schema`` artifact (SchemaGen's or ImportSchemaGen's)."""
    with filesystem.open_text(os.path.join(uri, _SCHEMA_FILE)) as f:
        return text_format.Parse(f.read(), schema_pb2.Schema())


def anomaly_list(split: str, info: anomalies_pb2.AnomalyInfo) -> list[Anomaly]:
    """The reasons of one AnomalyInfo (one per reason; the info's own text if it has none)."""
    severity = anomalies_pb2.AnomalyInfo.Severity.Name(info.severity).lower()
    reasons = info.reason or [info]
    return [Anomaly(split, severity, r.short_description, r.description) for r in reasons]


def count_anomalies(anomalies: dict[str, anomalies_pb2.Anomalies]) -> int:
    """Anomalous features and dataset-level anomalies, summed over splits."""
    return sum(
        len(a.anomaly_info) + (1 if a.dataset_anomaly_info.reason else 0)
        for a in anomalies.values()
    )


def _feature_name(stats: statistics_pb2.FeatureNameStatistics) -> str:
    return ".".join(stats.path.step) or stats.name


def _categories(examples: int, missing: float, counts: list[tuple[str, int]]) -> SplitFeature:
    """An integer the pipeline one-hot encodes, as its categories: no mean of codes or years."""
    return SplitFeature(
        examples=examples,
        missing=missing,
        numbers={},
        unique=len(counts),
        top={value: count / examples if examples else 0.0 for value, count in counts[:_TOP_VALUES]},
        average_bytes=None,
        buckets=[],
        categorical=True,
    )


def _split_feature(stats: statistics_pb2.FeatureNameStatistics, examples: int) -> SplitFeature:
    kind = stats.WhichOneof("stats")
    common = getattr(stats, kind).common_stats if kind else statistics_pb2.CommonStatistics()
    total = common.num_missing + common.num_non_missing
    missing = common.num_missing / total if total else 0.0
    counts = value_counts(stats)
    if counts is not None:
        return _categories(examples, missing, counts)
    numbers, unique, top, average_bytes, buckets = {}, None, {}, None, []
    if kind == "num_stats":
        n = stats.num_stats
        numbers = {
            "mean": n.mean,
            "std": n.std_dev,
            "min": n.min,
            "max": n.max,
            "zeros": n.num_zeros / common.num_non_missing if common.num_non_missing else 0.0,
        }
        standard = [h for h in n.histograms if h.type == _Histogram.STANDARD]
        if standard:
            buckets = [(b.low_value, b.high_value, b.sample_count) for b in standard[0].buckets]
    elif kind == "string_stats":
        unique = stats.string_stats.unique
        top = {
            v.value: v.frequency / examples if examples else 0.0
            for v in stats.string_stats.top_values[:_TOP_VALUES]
        }
    elif kind == "bytes_stats":
        unique = stats.bytes_stats.unique
        average_bytes = stats.bytes_stats.avg_num_bytes
    return SplitFeature(
        examples=examples,
        missing=missing,
        numbers=numbers,
        unique=unique,
        top=top,
        average_bytes=average_bytes,
        buckets=buckets,
        quantiles=common_bins.quantile_buckets(stats) or [] if kind == "num_stats" else [],
    )


def _on_common_bins(splits: dict[str, SplitFeature]) -> dict[str, list]:
    """Each split's buckets on the same equal-width bins (TFDV draws each split over its own
    range, so that equal distributions look different); from the quantiles where all have them."""
    numeric = {name: s for name, s in splits.items() if s.buckets or s.quantiles}
    if not numeric or not all(s.quantiles for s in numeric.values()):
        return {name: s.buckets for name, s in numeric.items() if s.buckets}
    edges = common_bins.equal_width_edges([s.quantiles for s in numeric.values()])
    return {
        name: [
            (low, high, share)
            for (low, high), share in zip(
                zip(edges, edges[1:], strict=False),
                common_bins.shares_on(s.quantiles, edges),
                strict=True,
            )
        ]
        for name, s in numeric.items()
    }


def _chart(splits: dict[str, SplitFeature]) -> str:
    if any(s.buckets for s in splits.values()):
        return charts.histogram(_on_common_bins(splits))
    # Commonest values tell something only when values repeat: not for ids,
    # file names or TFDV's placeholder for binary values (images).
    informative = any(
        s.top
        and s.unique is not None
        and s.unique <= _MOST_VALUES_CHARTED
        and _BYTES_PLACEHOLDER not in s.top
        for s in splits.values()
    )
    if informative:
        return charts.top_values({name: s.top for name, s in splits.items()})
    return ""


def feature_views(
    statistics: dict[str, statistics_pb2.DatasetFeatureStatistics],
    anomalies: dict[str, anomalies_pb2.Anomalies],
) -> list[FeatureView]:
    """Every feature with its statistics per split, its anomalies and a chart.

    Features with anomalies come first, each group by name.
    """
    features: dict[str, dict[str, SplitFeature]] = {}
    types: dict[str, str] = {}
    for split, dataset in statistics.items():
        for stats in dataset.features:
            name = _feature_name(stats)
            feature = _split_feature(stats, dataset.num_examples)
            type_name = statistics_pb2.FeatureNameStatistics.Type.Name(stats.type)
            types[name] = f"{type_name}, categories" if feature.categorical else type_name
            features.setdefault(name, {})[split] = feature
    views = []
    for name in sorted(features):
        found = [
            anomaly
            for split, split_anomalies in anomalies.items()
            if name in split_anomalies.anomaly_info
            for anomaly in anomaly_list(split, split_anomalies.anomaly_info[name])
        ]
        views.append(FeatureView(name, types[name], features[name], found, _chart(features[name])))
    return sorted(views, key=lambda view: (not view.anomalies, view.name))


def dataset_anomalies(anomalies: dict[str, anomalies_pb2.Anomalies]) -> list[Anomaly]:
    """Anomalies of whole splits (e.g. too few examples), not of one feature."""
    return [
        anomaly
        for split, a in anomalies.items()
        if a.dataset_anomaly_info.reason
        for anomaly in anomaly_list(split, a.dataset_anomaly_info)
    ]


def _domain(feature: schema_pb2.Feature, schema: schema_pb2.Schema) -> str:
    kind = feature.WhichOneof("domain_info")
    if kind == "domain":
        for domain in schema.string_domain:
            if domain.name == feature.domain:
                return ", ".join(domain.value)
        return feature.domain
    if kind == "string_domain":
        return ", ".join(feature.string_domain.value)
    if kind in ("int_domain", "float_domain"):
        domain = getattr(feature, kind)
        low = domain.min if domain.HasField("min") else "-inf"
        high = domain.max if domain.HasField("max") else "inf"
        return f"{low:g} to {high:g}" if kind == "float_domain" else f"{low} to {high}"
    return kind.replace("_domain", "") if kind else ""


def schema_features(schema: schema_pb2.Schema) -> list[SchemaFeature]:
    """The schema's features, each described in words."""
    rows = []
    for f in schema.feature:
        if f.HasField("shape"):
            shape = "fixed [" + ", ".join(str(d.size) for d in f.shape.dim) + "]"
        elif f.HasField("value_count"):
            shape = f"{f.value_count.min}-{f.value_count.max} values"
        else:
            shape = "any number of values"
        presence = (
            f"in {100 * f.presence.min_fraction:g}% of examples"
            if f.presence.HasField("min_fraction")
            else "optional"
        )
        rows.append(
            SchemaFeature(
                name=f.name,
                type=schema_pb2.FeatureType.Name(f.type),
                presence=presence,
                shape=shape,
                domain=_domain(f, schema),
                environments=", ".join(f"not in {e}" for e in f.not_in_environment),
            )
        )
    return rows
