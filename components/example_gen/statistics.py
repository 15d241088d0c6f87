"""The examples' statistics, by TFDV, in ExampleGen's own pass: no second pass to describe them.

StatisticsGen reads back and decodes every record ExampleGen has just
encoded, and the decoding is most of its cost. On Beam, the converters hand
over the Arrow columns each batch of records was encoded from
(``SplitRecords.columns``) and TFDV's ``GenerateStatistics`` describes
those: the same values, so the same statistics. TFDV's exact top values
and unique counts make a Beam element of each distinct value; ExampleGen
counts them in Arrow instead (``exact_top_values``), the same figures. They
are written where and
as StatisticsGen writes them (``Split-<name>/FeatureStats.pb`` of an
``ExampleStatistics`` artifact), for SchemaGen, ExampleValidator and the
report.

On Spark they cannot be: TFDV computes statistics only as a Beam transform
(its generators' accumulators and their merge are not public API), so a
Spark task cannot describe its part for the driver to merge. There
ExampleGen reads the written shards back through TFDV once the Spark job is
done, StatisticsGen's pass, on the pipeline's Beam runner.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import tensorflow_data_validation as tfdv
from tensorflow_data_validation.statistics.generators.basic_stats_generator import (
    BasicStatsGenerator,
)
from tensorflow_metadata.proto.v0 import statistics_pb2
from tfx_bsl.public import tfxio

from tfrecord_pipelines.components.data_source import IMAGES
from tfrecord_pipelines.components.example_gen.exact_top_values import ExactTopValues
from tfrecord_pipelines.components.keys import VALUE_COUNTS_STATISTIC

# StatisticsGen's file name, which SchemaGen and ExampleValidator look for.
STATISTICS_FILE = "FeatureStats.pb"
_TELEMETRY = ["tfrecord_pipelines", "ShardedExampleGen"]


# Quantile buckets per numeric feature (TFDV's default: 10): the drift check
# counts two spans on common bins cut from them (drift.common_bins); deciles
# cannot see a mean move by a tenth.
QUANTILE_BUCKETS = 100
# Distinct values listed per string feature, with their counts (TFDV's default:
# 20). TFDV counts every value anyway; listing up to this many lets Transform
# take a vocabulary from the statistics instead of reading the data again
# (transform.statistics_analysis). A feature with more keeps tf.Transform's analyzer.
TOP_VALUES = 10_000


def stats_options(source_format: str, counted: Sequence[str] = ()) -> tfdv.StatsOptions:
    """TFDV's options: images also get image statistics (formats, sizes), not string ones;
    percentiles, not deciles; up to ``TOP_VALUES`` values of each string, not 20; each
    value of the ``counted`` integer features counted (``ValueCounts``: a classification's
    label, the categorical integers a schema marks).

    TFDV's default generators are replaced by the same two, but for the top values and
    unique counts counted in Arrow (``ExactTopValues``): the same statistics, without a
    Beam element per distinct value."""
    return with_exact_top_values(
        tfdv.StatsOptions(
            generators=[ValueCounts(name) for name in counted] or None,
            enable_semantic_domain_stats=source_format == IMAGES,
            num_quantiles_histogram_buckets=QUANTILE_BUCKETS,
            num_top_values=TOP_VALUES,
        )
    )


def with_exact_top_values(options: tfdv.StatsOptions) -> tfdv.StatsOptions:
    """OPTIONS (changed in place) with TFDV's default generators replaced by the same ones
    built as TFDV builds them (stats_impl._get_default_generators), but for the top values
    and unique counts, counted in Arrow (``ExactTopValues``)."""
    basic = BasicStatsGenerator(
        schema=options.schema,
        example_weight_map=options.example_weight_map,
        num_values_histogram_buckets=options.num_values_histogram_buckets,
        num_histogram_buckets=options.num_histogram_buckets,
        num_quantiles_histogram_buckets=options.num_quantiles_histogram_buckets,
        epsilon=options.epsilon,
    )
    top_values = ExactTopValues(
        schema=options.schema,
        num_top_values=options.num_top_values,
        num_rank_histogram_buckets=options.num_rank_histogram_buckets,
        frequency_threshold=options.frequency_threshold,
    )
    options.add_default_generators = False
    options.generators = [basic, top_values, *(options.generators or [])]
    return options


class ValueCounts(tfdv.CombinerStatsGenerator):
    """Counts each value of an integer feature (a label, a 0/1 or boolean one too, or a
    categorical integer), beside TFDV's numeric statistics of it, as the custom statistic
    ``keys.VALUE_COUNTS_STATISTIC``: a rank histogram of each value (in decimal) and its
    count.

    TFDV lists the values of strings only; marking the feature categorical in TFDV's
    stats options would list them instead of its numeric statistics, and SchemaGen would
    then infer a string domain for an INT feature, which TFDV's own validation refuses.
    With more than ``TOP_VALUES`` values, or values that are not integers, nothing is
    written.
    """

    def __init__(self, feature: str):
        super().__init__(name=f"ValueCounts[{feature}]")
        self._feature = feature

    def create_accumulator(self) -> dict[int, int] | None:
        return {}

    def add_input(self, accumulator, input_record_batch: pa.RecordBatch):
        index = input_record_batch.schema.get_field_index(self._feature)
        if accumulator is None or index < 0:
            return accumulator
        column = input_record_batch.column(index)
        if pa.types.is_null(column.type):
            return accumulator
        values = pc.list_flatten(column)
        if not pa.types.is_integer(values.type):
            return None
        counts = pc.value_counts(values.drop_null())
        for value, count in zip(
            counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True
        ):
            accumulator[value] = accumulator.get(value, 0) + count
        return accumulator if len(accumulator) <= TOP_VALUES else None

    def merge_accumulators(self, accumulators):
        accumulators = list(accumulators)
        if any(accumulator is None for accumulator in accumulators):
            return None
        merged: dict[int, int] = {}
        for accumulator in accumulators:
            for value, count in accumulator.items():
                merged[value] = merged.get(value, 0) + count
        return merged if len(merged) <= TOP_VALUES else None

    def extract_output(self, accumulator) -> statistics_pb2.DatasetFeatureStatistics:
        statistics = statistics_pb2.DatasetFeatureStatistics()
        if not accumulator:
            return statistics
        feature = statistics.features.add()
        feature.path.step.append(self._feature)
        histogram = feature.custom_stats.add(name=VALUE_COUNTS_STATISTIC).rank_histogram
        for rank, (value, count) in enumerate(sorted(accumulator.items())):
            histogram.buckets.add(
                low_rank=rank, high_rank=rank, label=str(value), sample_count=count
            )
        return statistics


@beam.ptransform_fn
def WriteStatistics(  # noqa: N802 - Beam transforms are named like classes
    columns: beam.PCollection, path: str, options: tfdv.StatsOptions
):
    """Describes a split's record batches with TFDV; writes the statistics to ``path``."""
    return (
        columns
        | "Generate" >> tfdv.GenerateStatistics(options)
        | "Write" >> tfdv.WriteStatisticsToBinaryFile(path)
    )


@beam.ptransform_fn
def ReadShardColumns(pipeline: beam.Pipeline, split_dir: str):  # noqa: N802
    """A split's written shards, decoded into record batches (the read-back pass)."""
    source = tfxio.TFExampleRecord(
        file_pattern=os.path.join(split_dir, "*"), telemetry_descriptors=_TELEMETRY
    )
    return pipeline | "Read" >> source.BeamSource()
