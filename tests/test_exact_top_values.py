"""ExampleGen's top values and unique counts (``ExactTopValues``, counted in Arrow) against
TFDV's own exact generator on the same record batches, both through Beam.

The tables hold what real ones do: ids (a distinct value in each row), a few values
repeated with ties at the cut-off, empty strings, missing values, lists of several values
and none, bytes that are not UTF-8, a categorical integer the schema marks, and a column
that is a string in one batch and absent or all missing in others.
"""

from __future__ import annotations

import copy
import random

import apache_beam as beam
import pyarrow as pa
import pytest
import tensorflow_data_validation as tfdv
from google.protobuf import json_format
from tensorflow_metadata.proto.v0 import schema_pb2

from tfrecord_pipelines.components.example_gen import exact_top_values
from tfrecord_pipelines.components.example_gen.statistics import with_exact_top_values

ROWS_PER_BATCH = 500
BATCHES = 6


def _batches() -> list[pa.RecordBatch]:
    rng = random.Random(5)
    batches = []
    for index in range(BATCHES):
        rows = range(index * ROWS_PER_BATCH, (index + 1) * ROWS_PER_BATCH)
        columns = {
            "id": [[f"row-{r:07d}".encode()] for r in rows],
            # Three values at one count each batch: ties decided by the value.
            "colour": [
                None if rng.random() < 0.05 else [rng.choice([b"red", b"green", b"blue", b""])]
                for _ in rows
            ],
            "tags": [
                [rng.choice([b"a", b"b", b"c", b"\xff\xfe"]) for _ in range(rng.randint(0, 3))]
                for _ in rows
            ],
            "level": [[rng.randint(0, 4)] for _ in rows],
        }
        types = {
            "id": pa.list_(pa.binary()),
            "colour": pa.list_(pa.binary()),
            "tags": pa.list_(pa.binary()),
            "level": pa.list_(pa.int64()),
        }
        if index % 3 == 1:
            columns["note"] = [[f"n{rng.randint(0, 50)}".encode()] for _ in rows]
            types["note"] = pa.list_(pa.binary())
        elif index % 3 == 2:
            columns["note"] = [None for _ in rows]
            types["note"] = pa.null()
        batches.append(
            pa.RecordBatch.from_arrays(
                [pa.array(columns[name], type=types[name]) for name in columns],
                list(columns),
            )
        )
    return batches


def _schema() -> schema_pb2.Schema:
    schema = schema_pb2.Schema()
    level = schema.feature.add(name="level", type=schema_pb2.INT)
    level.int_domain.is_categorical = True
    for name in ("id", "colour", "tags", "note"):
        schema.feature.add(name=name, type=schema_pb2.BYTES)
    return schema


def _statistics(options: tfdv.StatsOptions, path) -> dict:
    with beam.Pipeline() as pipeline:
        _ = (
            pipeline
            | beam.Create(_batches(), reshuffle=False)
            | tfdv.GenerateStatistics(options)
            | tfdv.WriteStatisticsToBinaryFile(str(path))
        )
    statistics = tfdv.load_stats_binary(str(path))
    return {
        feature.path.step[0]: json_format.MessageToDict(feature)
        for feature in statistics.datasets[0].features
    }


@pytest.mark.parametrize("num_top_values", [3, 10_000])
def test_top_values_and_uniques_equal_tfdvs_own(monkeypatch, tmp_path, num_top_values):
    # Partial counts summed every few batches: the merge is part of what is compared.
    monkeypatch.setattr(exact_top_values, "COMPACT_ROWS", 700)
    reference = tfdv.StatsOptions(
        schema=_schema(),
        num_top_values=num_top_values,
        num_rank_histogram_buckets=5,
        num_quantiles_histogram_buckets=10,
    )
    theirs = _statistics(reference, tmp_path / "tfdv.pb")
    ours = _statistics(with_exact_top_values(copy.deepcopy(reference)), tmp_path / "ours.pb")
    assert ours == theirs
    strings = theirs["id"]["stringStats"]
    assert strings["unique"] == str(BATCHES * ROWS_PER_BATCH)
    assert len(strings["topValues"]) == min(num_top_values, BATCHES * ROWS_PER_BATCH)
    assert "rankHistogram" in theirs["level"]["stringStats"]


def test_partial_counts_are_summed_into_one_row_per_distinct_value():
    counts = exact_top_values._Counts()  # noqa: SLF001 (the accumulator's own part)
    chunk = pa.table({"value": pa.array([b"a", b"b"], pa.large_binary()), "count": [1, 2]})
    for _ in range(3):
        counts.add(chunk)
    table = counts.compact()
    pairs = zip(table.column("value").to_pylist(), table.column("count").to_pylist(), strict=True)
    assert sorted(pairs) == [(b"a", 3), (b"b", 6)]
    assert counts.chunks == [table]
