"""Transform's analysis from ExampleGen's statistics, where they hold the exact answer.

tf.Transform's analyzers read and decode every train record again, after
ExampleGen has described the same records with TFDV in its own pass. On a
table of 700,000 train rows, reading and decoding cost 25 of the analysis'
58 CPU-s, and the vocabularies most of the rest. The statistics of the train
split already hold what the built-in ``preprocessing_fn`` asks its
analyzers for:

- a number's mean and standard deviation over its present values, as
  ``tft.scale_to_z_score`` and ``tft.mean`` compute them;
- every distinct value of a string and its count (TFDV's top values, all of
  them when there are no more than ``stats_options``' ``num_top_values``):
  a vocabulary ordered by the tokens' fingerprints needs only the set;
- the same of a classification's integer or boolean label, which ExampleGen's
  statistics count beside TFDV's numeric ones (``keys.VALUE_COUNTS_STATISTIC``,
  each value in decimal, as the ``preprocessing_fn`` turns them into text).

A window of spans has one statistics file per span (ExampleGen described
each span in its own run). They merge exactly: a mean and a variance from
each span's count, mean and variance (``_merged_moments``), a vocabulary as
the union of the spans' complete lists. A feature that one span's
statistics cannot answer keeps tf.Transform's analyzer over the whole window.

A feature whose statistics cannot answer exactly keeps tf.Transform's
analyzer: a vector (z-scores position by position), numbers with NaNs,
strings with more distinct values than the statistics keep or with bytes
that are not UTF-8 (TFDV shows those as one placeholder), an integer label
that statistics describe as numbers (``convert``'s, which are not told the
task). When no analyzer is left, TFX runs Transform in place: it traces the
graph and never reads the data.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import re
import tempfile

from tensorflow_metadata.proto.v0 import statistics_pb2

from tfrecord_pipelines.components.keys import VALUE_COUNTS_STATISTIC
from tfrecord_pipelines.components.storage import filesystem

# The custom_config key under which Transform's executor hands the built-in
# preprocessing_fn the statistics files of the train split: one per span read.
STATISTICS_PATH_KEY = "train_statistics"
# TFDV's stand-in for values that are not UTF-8 (tensorflow_data_validation.constants).
_NON_UTF8_PLACEHOLDER = "__BYTES_VALUE__"
# The tokens tf.Transform leaves out of a text vocabulary
# (analyzers._EMPTY_STRING_OR_NEWLINE_CHARS_REGEX).
_LEFT_OUT = re.compile(rb"^$|[\n\r]")
_VOCABULARY_DIR = "tfrecord-pipelines-vocabularies"


def _feature_name(feature: statistics_pb2.FeatureNameStatistics) -> str:
    return ".".join(feature.path.step) if feature.path.step else feature.name


class TrainStatistics:
    """The train split's statistics, one dataset per span read, read for the analyzers' results."""

    def __init__(self, *spans: statistics_pb2.DatasetFeatureStatistics):
        self._spans = [{_feature_name(f): f for f in span.features} for span in spans]

    def _in_every_span(self, name: str) -> list[statistics_pb2.FeatureNameStatistics] | None:
        found = [features.get(name) for features in self._spans]
        return None if not found or None in found else found

    def moments(self, name: str) -> tuple[float, float] | None:
        """A numeric feature's mean and variance over its present values, or None where
        the statistics do not hold them exactly (NaNs, no values, not numeric, a span
        without the feature)."""
        parts = []
        for feature in self._in_every_span(name) or []:
            if not feature.HasField("num_stats"):
                return None
            stats = feature.num_stats
            count = stats.common_stats.tot_num_values
            if count == 0:
                continue
            if any(h.num_nan for h in stats.histograms) or not math.isfinite(stats.mean):
                return None
            parts.append((count, stats.mean, stats.std_dev**2))
        return _merged_moments(parts) if parts else None

    def vocabulary(self, name: str) -> list[bytes] | None:
        """A string feature's (or a counted integer label's) vocabulary as tf.Transform
        orders it with ``fingerprint_shuffle`` (by the SHA-1 of each token), without the
        tokens it leaves out; None where a span's statistics do not list every distinct
        value."""
        found = self._in_every_span(name)
        if found is None:
            return None
        tokens = set()
        for feature in found:
            values = _distinct_values(feature)
            if values is None:
                return None
            tokens.update(v.encode() for v in values)
        return sorted((t for t in tokens if not _LEFT_OUT.search(t)), key=_fingerprint)


def _distinct_values(feature: statistics_pb2.FeatureNameStatistics) -> list[str] | None:
    """Every distinct value of a string feature, or of a counted integer label; None when
    the statistics do not list them all."""
    if feature.HasField("string_stats"):
        stats = feature.string_stats
        values = [v.value for v in stats.top_values]
        if len(values) != stats.unique or _NON_UTF8_PLACEHOLDER in values:
            return None
        return values
    counted = [s for s in feature.custom_stats if s.name == VALUE_COUNTS_STATISTIC]
    return [bucket.label for bucket in counted[0].rank_histogram.buckets] if counted else None


def _merged_moments(parts: list[tuple[int, float, float]]) -> tuple[float, float]:
    """The mean and (population) variance of values in parts, each given by its count, mean
    and variance: the variance is the parts' mean variance plus their means' spread. One
    part gives its own figures, as TFDV wrote them (the arithmetic could move them by an
    ulp)."""
    if len(parts) == 1:
        _, mean, variance = parts[0]
        return mean, variance
    total = sum(count for count, _, _ in parts)
    mean = math.fsum(count * m for count, m, _ in parts) / total
    variance = math.fsum(count * (v + (m - mean) ** 2) for count, m, v in parts) / total
    return mean, variance


def _fingerprint(token: bytes) -> bytes:
    return hashlib.sha1(token).digest()


@functools.lru_cache(maxsize=8)
def load(paths: tuple[str, ...]) -> TrainStatistics:
    """The statistics of one split, one file per span (``FeatureStats.pb`` files, as
    StatisticsGen writes)."""
    spans = []
    for path in paths:
        statistics = statistics_pb2.DatasetFeatureStatisticsList()
        with filesystem.open_file(path, "rb") as f:
            statistics.ParseFromString(f.read())
        if len(statistics.datasets) != 1:
            count = len(statistics.datasets)
            raise ValueError(f"{path} holds {count} datasets' statistics, not 1.")
        spans.append(statistics.datasets[0])
    return TrainStatistics(*spans)


def vocabulary_file(name: str, tokens: list[bytes]) -> str:
    """Writes ``tokens`` as a text vocabulary named ``name`` (the asset's name in the
    transform graph) in a folder of its content; returns its path."""
    content = b"".join(t + b"\n" for t in tokens)
    folder = os.path.join(
        tempfile.gettempdir(), _VOCABULARY_DIR, hashlib.sha256(content).hexdigest()[:24]
    )
    path = os.path.join(folder, name)
    if not filesystem.exists(path):
        filesystem.make_folder(folder)
        partial = f"{path}.{os.getpid()}.partial"
        with filesystem.open_file(partial, "wb") as f:
            f.write(content)
        filesystem.replace(partial, path)
    return path
