"""Which integer features a schema marks categorical: codes and ids, whose values name
categories rather than measure an amount (``int_domain { is_categorical: true }``), and
the counts of their values in ExampleGen's statistics.

ExampleGen counts their values in its statistics and the built-in
``preprocessing_fn`` maps them through a vocabulary, as it does strings.
"""

from __future__ import annotations

from tensorflow_metadata.proto.v0 import schema_pb2, statistics_pb2

from tfrecord_pipelines.components.keys import VALUE_COUNTS_STATISTIC


def categorical_integers(schema: schema_pb2.Schema | None) -> list[str]:
    """The INT features ``schema`` marks categorical, in its order; none without a schema."""
    if schema is None:
        return []
    return [
        f.name for f in schema.feature if f.type == schema_pb2.INT and f.int_domain.is_categorical
    ]


def value_counts(feature: statistics_pb2.FeatureNameStatistics) -> list[tuple[str, int]] | None:
    """Each value of a feature the pipeline treats as categories and its count, commonest
    first, as ExampleGen's statistics keep them (``keys.VALUE_COUNTS_STATISTIC``: a
    categorical integer, a label naming classes); None for any other feature."""
    for custom in feature.custom_stats:
        if custom.name == VALUE_COUNTS_STATISTIC:
            counted = [(b.label, int(b.sample_count)) for b in custom.rank_histogram.buckets]
            return sorted(counted, key=lambda pair: -pair[1])
    return None
