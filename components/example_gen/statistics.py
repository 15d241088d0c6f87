"""The examples' statistics, by TFDV, in ExampleGen's own pass: no second pass to describe them.

StatisticsGen reads back and decodes every record ExampleGen has just
encoded, and the decoding is most of its cost. On Beam, the converters hand
over the Arrow columns each batch of records was encoded from
(``SplitRecords.columns``) and TFDV's ``GenerateStatistics`` describes
those: the same values, so the same statistics. They are written where and
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

import apache_beam as beam
import tensorflow_data_validation as tfdv
from tfx_bsl.public import tfxio

from tfrecord_pipelines.components.data_source import IMAGES

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


def stats_options(source_format: str) -> tfdv.StatsOptions:
    """TFDV's options: images also get image statistics (formats, sizes), not string ones;
    percentiles, not deciles; up to ``TOP_VALUES`` values of each string, not 20."""
    return tfdv.StatsOptions(
        enable_semantic_domain_stats=source_format == IMAGES,
        num_quantiles_histogram_buckets=QUANTILE_BUCKETS,
        num_top_values=TOP_VALUES,
    )


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
