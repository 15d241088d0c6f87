"""Numeric histograms of two datasets on the same bins, for TFDV's Jensen-Shannon comparator.

TFDV draws each dataset's equal-width histogram over that dataset's own
[min, max], and its Jensen-Shannon comparator re-bins one onto the other
assuming values spread evenly inside a bucket. Integer-valued features are
nothing like that: two samples of one Poisson(3) measured 0.052 apart, and
Poisson(3) against Poisson(3.3) 0.021 (100,000 rows each, benchmarks/drift_bins.py),
so no threshold separates drift from none. Here both datasets get the same buckets, cut at
the previous dataset's quantiles (its quantile histogram, deduplicated: an
integer feature's cuts fall on its values), and each dataset's mass per
bucket comes from its own quantile histogram. On those, the same samples
measured 0.0000 apart and the shifted ones 0.0049.
"""

from __future__ import annotations

import copy

from tensorflow_metadata.proto.v0 import statistics_pb2

_QUANTILES = statistics_pb2.Histogram.QUANTILES
_STANDARD = statistics_pb2.Histogram.STANDARD
# Buckets at most: enough to see a shift, few enough that sampling noise on a
# span of a few thousand rows stays far below the default threshold.
MAX_BUCKETS = 20


def quantile_buckets(feature: statistics_pb2.FeatureNameStatistics) -> list | None:
    """A numeric feature's quantile histogram buckets (None for other features)."""
    if not feature.HasField("num_stats"):
        return None
    for histogram in feature.num_stats.histograms:
        if histogram.type == _QUANTILES and histogram.buckets:
            return list(histogram.buckets)
    return None


def _cdf(buckets: list, value: float) -> float:
    """The share of values at most ``value``, values spread evenly inside a quantile bucket."""
    total = sum(b.sample_count for b in buckets)
    if not total:
        return 0.0
    below = 0.0
    for b in buckets:
        if b.high_value <= value:
            below += b.sample_count
        elif b.low_value < value:
            below += b.sample_count * (value - b.low_value) / (b.high_value - b.low_value)
    return below / total


def common_edges(previous: list, current: list) -> list[float]:
    """The bucket edges both datasets are counted on: the previous one's quantile cuts,
    thinned to MAX_BUCKETS, widened to hold the current one's range."""
    cuts = sorted({b.low_value for b in previous} | {b.high_value for b in previous})
    if len(cuts) > MAX_BUCKETS + 1:
        step = (len(cuts) - 1) / MAX_BUCKETS
        cuts = sorted({cuts[round(i * step)] for i in range(MAX_BUCKETS + 1)})
    low = min(cuts[0], min(b.low_value for b in current))
    high = max(cuts[-1], max(b.high_value for b in current))
    span = (high - low) or 1.0
    # The lowest value's own mass needs a bucket below it; the current range may be wider.
    return [low - span * 1e-6, *[c for c in cuts if low <= c < high], high]


def shares_on(buckets: list, edges: list[float]) -> list[float]:
    """A dataset's share of values in each bucket (low, high] between consecutive
    ``edges``, from its quantile buckets; values spread evenly inside a quantile bucket."""
    cdf = [_cdf(buckets, edge) for edge in edges]
    return [high - low for low, high in zip(cdf, cdf[1:], strict=False)]


def equal_width_edges(bucket_lists: list[list], count: int = 10) -> list[float]:
    """Edges of ``count`` equal-width buckets over the range of every dataset, for drawing
    several on the same bins."""
    low = min(b.low_value for buckets in bucket_lists for b in buckets)
    high = max(b.high_value for buckets in bucket_lists for b in buckets)
    if high == low:
        return [low - 0.5, high + 0.5]
    # Just below the lowest value, so that its own mass falls in the first bucket.
    start = low - (high - low) * 1e-9
    return [start + (high - start) * i / count for i in range(count + 1)]


def _histogram(buckets: list, edges: list[float], count: float) -> statistics_pb2.Histogram:
    histogram = statistics_pb2.Histogram(type=_STANDARD)
    for (low, high), share in zip(
        zip(edges, edges[1:], strict=False), shares_on(buckets, edges), strict=True
    ):
        histogram.buckets.add(low_value=low, high_value=high, sample_count=share * count)
    return histogram


def on_common_bins(
    current: statistics_pb2.DatasetFeatureStatisticsList,
    previous: statistics_pb2.DatasetFeatureStatisticsList,
) -> tuple[
    statistics_pb2.DatasetFeatureStatisticsList, statistics_pb2.DatasetFeatureStatisticsList
]:
    """Copies of both statistics whose numeric features' standard histograms share buckets."""
    current, previous = copy.deepcopy(current), copy.deepcopy(previous)
    theirs = {f.path.SerializeToString(): f for f in previous.datasets[0].features}
    for feature in current.datasets[0].features:
        other = theirs.get(feature.path.SerializeToString())
        ours_q = quantile_buckets(feature)
        theirs_q = quantile_buckets(other) if other is not None else None
        if not ours_q or not theirs_q:
            continue
        edges = common_edges(theirs_q, ours_q)
        for target, buckets in ((feature, ours_q), (other, theirs_q)):
            count = sum(b.sample_count for b in buckets)
            kept = [h for h in target.num_stats.histograms if h.type != _STANDARD]
            del target.num_stats.histograms[:]
            target.num_stats.histograms.extend([*kept, _histogram(buckets, edges, count)])
    return current, previous
