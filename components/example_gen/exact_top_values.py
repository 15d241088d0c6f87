"""Exact top values and unique counts of string features, counted in Arrow, as one TFDV
combiner: TFDV's own statistics at the cost of a hash count per batch.

TFDV's exact top-k generator on Beam (``TopKUniquesStatsGenerator``) turns each
distinct value of each batch into a Beam element, ``((slice, feature, value),
count)``, and sums them per key: about 14 µs a distinct value, most of
ShardedExampleGen's cost on a column of ids or free text. Its sketch
(``TopKUniquesSketchStatsGenerator``) is cheap but approximate: a value seen once
was reported 91 times. This generator counts the same values with Arrow
(``value_counts`` per batch; the batches' counts summed through a dictionary
encoding of their values once they outgrow the summed table), keeps the counts
as two Arrow arrays, and builds its output with TFDV's
own proto builder, so the statistics are TFDV's: the same values, counts, tie
order (the larger count, then the larger value), rank histogram and unique count.

Memory: each distinct value of a feature is held once per accumulator, as its
bytes, an 8-byte offset (large_binary) and an 8-byte count, plus the batches'
partial counts before they are summed (up to ``COMPACT_ROWS`` rows), and while
they are summed a second copy. TFDV's Beam combine held each distinct value as
a Python key of a dict on the DirectRunner: a few hundred bytes each.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import tensorflow_data_validation as tfdv
from tensorflow_data_validation import types
from tensorflow_data_validation.arrow import arrow_util
from tensorflow_data_validation.utils import schema_util, stats_util, top_k_uniques_stats_util
from tensorflow_data_validation.utils.example_weight_map import ExampleWeightMap
from tensorflow_metadata.proto.v0 import schema_pb2, statistics_pb2
from tfx_bsl.arrow import array_util

# Partial counts held before they are summed into one table.
COMPACT_ROWS = 1 << 20
_VALUE, _COUNT = "value", "count"


class _Counts:
    """A feature's value counts: the summed table, then the batches' partial counts."""

    __slots__ = ("chunks", "summed", "pending")

    def __init__(self) -> None:
        self.chunks: list[pa.Table] = []
        self.summed = 0  # rows of chunks[0] when it is the summed table, else 0
        self.pending = 0  # rows of the partial counts after it

    def add(self, table: pa.Table) -> None:
        self.chunks.append(table)
        self.pending += table.num_rows
        # Summed once the partial counts outgrow both the bound and the summed table: each
        # row is summed again a logarithmic number of times, however many distinct values.
        if self.pending > max(COMPACT_ROWS, self.summed) and len(self.chunks) > 1:
            self.compact()

    def compact(self) -> pa.Table:
        """One table of each distinct value and its summed count."""
        if len(self.chunks) != 1 or not self.summed:
            table = pa.concat_tables(self.chunks)
            # A hash of the values, then the counts summed by their index: three times
            # faster than a hash group_by's sum (pyarrow 10).
            encoded = pc.dictionary_encode(table.column(_VALUE).combine_chunks())
            summed = np.bincount(
                encoded.indices.to_numpy(zero_copy_only=False),
                weights=table.column(_COUNT).to_numpy(),
                minlength=len(encoded.dictionary),
            )
            table = pa.table({_VALUE: encoded.dictionary, _COUNT: summed.astype(np.int64)})
            self.chunks, self.summed, self.pending = [table], table.num_rows, 0
        return self.chunks[0]


def _top(table: pa.Table, keep: int) -> list[top_k_uniques_stats_util.FeatureValueCount]:
    """The KEEP values of TABLE with the largest (count, value), as TFDV's Top().PerKey
    picks them; in no order (TFDV's proto builder sorts them)."""
    counts = table.column(_COUNT).to_numpy()
    values = table.column(_VALUE).combine_chunks()
    if len(counts) <= keep:
        chosen = np.arange(len(counts))
    else:
        cut = np.partition(counts, len(counts) - keep)[len(counts) - keep]
        above = np.flatnonzero(counts > cut)
        tied = np.flatnonzero(counts == cut)
        # Among the values at the cut-off count, the largest values.
        largest = pc.select_k_unstable(
            values.take(pa.array(tied)), keep - len(above), [(_VALUE, "descending")]
        )
        chosen = np.concatenate([above, tied[largest.to_numpy()]])
    return [
        top_k_uniques_stats_util.FeatureValueCount(value, int(count))
        for value, count in zip(
            values.take(pa.array(chosen)).to_pylist(), counts[chosen], strict=True
        )
    ]


class ExactTopValues(tfdv.CombinerStatsGenerator):
    """Exact top values, rank histogram and unique count of each string feature (and each
    categorical INT feature the schema marks), as TFDV's ``TopKUniquesStatsGenerator``
    computes them; unweighted.

    Args:
      schema: the features' schema; None: every string feature.
      num_top_values: values listed in ``top_values``.
      num_rank_histogram_buckets: values in the rank histogram.
      frequency_threshold: the least count a listed value has.
    """

    def __init__(
        self,
        schema: schema_pb2.Schema | None = None,
        num_top_values: int = 20,
        num_rank_histogram_buckets: int = 1000,
        frequency_threshold: int = 1,
    ) -> None:
        super().__init__(name="ExactTopValues", schema=schema)
        self._bytes_features = frozenset(schema_util.get_bytes_features(schema) if schema else [])
        self._categorical_numeric = (
            schema_util.get_categorical_numeric_feature_types(schema) if schema else {}
        )
        self._num_top_values = num_top_values
        self._num_rank_histogram_buckets = num_rank_histogram_buckets
        self._frequency_threshold = frequency_threshold

    def create_accumulator(self) -> dict[types.FeaturePath, _Counts]:
        return {}

    def _counted(self, path: types.FeaturePath, feature_type) -> bool:
        """TFDV's rule (top_k_uniques_stats_generator._should_run): strings, and the INT
        features the schema marks categorical; never the schema's bytes features."""
        if path in self._bytes_features:
            return False
        if feature_type == statistics_pb2.FeatureNameStatistics.STRING:
            return True
        return feature_type == statistics_pb2.FeatureNameStatistics.INT and (
            top_k_uniques_stats_util.output_categorical_numeric(
                self._categorical_numeric, path, feature_type
            )
        )

    def add_input(self, accumulator, input_record_batch: pa.RecordBatch):
        for path, array, _ in arrow_util.enumerate_arrays(
            input_record_batch, example_weight_map=ExampleWeightMap(), enumerate_leaves_only=True
        ):
            feature_type = stats_util.get_feature_type_from_arrow_type(path, array.type)
            if not self._counted(path, feature_type):
                continue
            values, _ = array_util.flatten_nested(array, False)
            if not len(values):
                continue
            counts = values.value_counts()
            distinct = counts.field("values")
            # One value type per feature across batches, for the tables' concatenation.
            if pa.types.is_binary(distinct.type):
                distinct = distinct.cast(pa.large_binary())
            elif pa.types.is_string(distinct.type):
                distinct = distinct.cast(pa.large_string())
            table = pa.table({_VALUE: distinct, _COUNT: counts.field("counts")})
            accumulator.setdefault(path, _Counts()).add(table)
        return accumulator

    def merge_accumulators(self, accumulators):
        merged: dict[types.FeaturePath, _Counts] = {}
        for accumulator in accumulators:
            for path, counts in accumulator.items():
                into = merged.setdefault(path, _Counts())
                for chunk in counts.chunks:
                    into.add(chunk)
        return merged

    def compact(self, accumulator):
        for counts in accumulator.values():
            counts.compact()
        return accumulator

    def extract_output(self, accumulator) -> statistics_pb2.DatasetFeatureStatistics:
        result = statistics_pb2.DatasetFeatureStatistics()
        keep = max(self._num_top_values, self._num_rank_histogram_buckets)
        for path, counts in sorted(accumulator.items(), key=lambda item: item[0].steps()):
            table = counts.compact()
            top = _top(table, keep)
            result.features.add().CopyFrom(
                top_k_uniques_stats_util.make_feature_stats_proto_topk_uniques(
                    path,
                    num_top_values=self._num_top_values,
                    num_rank_histogram_buckets=self._num_rank_histogram_buckets,
                    num_unique=table.num_rows,
                    value_count_list=top,
                    frequency_threshold=self._frequency_threshold,
                )
            )
        return result
