"""The eval split sized to the data: TFX's 2:1 when small, a cap on eval rows when large."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from example_data import convert_as_written, write_csv
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.components.example_gen.shard_plan_report import ShardPlanReport
from tfrecord_pipelines.components.example_gen.split_sizing import (
    count_rows,
    size_eval_split,
)
from tfrecord_pipelines.local.beam_args import local_beam_args

ROWS = 6_000


def test_small_data_keeps_two_to_one():
    sizing = size_eval_split(300_000, 100_000, exact=True)
    assert not sizing.capped and sizing.hash_buckets == {"train": 2, "eval": 1}


def test_large_data_gets_about_the_cap_in_eval():
    sizing = size_eval_split(10_000_000, 100_000, exact=False)
    assert sizing.capped
    share = sizing.hash_buckets["eval"] / sum(sizing.hash_buckets.values())
    assert share * 10_000_000 == pytest.approx(100_000, rel=1e-3)


def test_a_cap_below_one_row_is_refused():
    with pytest.raises(ValueError, match="eval_rows must be at least 1"):
        size_eval_split(1000, 0, exact=True)


def test_csv_rows_are_estimated_from_the_bytes_per_row(tmp_path):
    source = write_csv(tmp_path / "csv", ROWS, bad_rows=())
    rows, exact = count_rows("csv", [str(source / "data.csv")])
    assert not exact and rows == pytest.approx(ROWS, rel=0.02)


def test_parquet_rows_are_counted_from_the_footers(tmp_path):
    paths = []
    for index, rows in enumerate((1000, 234)):
        paths.append(str(tmp_path / f"part-{index}.parquet"))
        pq.write_table(pa.table({"x": list(range(rows))}), paths[-1])
    assert count_rows("parquet", paths) == (1234, True)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return write_csv(tmp_path_factory.mktemp("sizing") / "csv", ROWS, bad_rows=())


def _convert(source, dest, **overrides):
    return convert_as_written(
        source,
        dest,
        source_format="csv",
        sharding=ShardingOptions(),
        compression="gzip",
        label_key="label",
        beam_pipeline_args=local_beam_args(),
        **overrides,
    )


def test_a_capped_split_is_recorded_in_the_shard_plan(source, tmp_path):
    report = _convert(source, tmp_path / "out", eval_rows=600)
    sizing = report["split_sizing"]
    assert sizing["capped"] and sizing["eval_rows"] == 600
    assert sizing["estimated_rows"] == pytest.approx(ROWS, rel=0.02)
    eval_records = report["splits"]["eval"]["records"]
    # A binomial draw around 600: well inside +-5 standard deviations (about 115).
    assert 485 < eval_records < 715
    assert report["splits"]["train"]["records"] == ROWS - eval_records
    plan = json.loads((tmp_path / "out" / "shard_plan.json").read_text())
    assert plan["split_sizing"] == sizing
    # The type reads back what it wrote, field for field.
    assert plan == report
    assert ShardPlanReport.from_json(plan).to_json() == plan


def test_an_explicit_split_is_kept_whatever_the_cap(source, tmp_path):
    report = _convert(source, tmp_path / "out", eval_rows=600, splits={"train": 1, "eval": 1})
    assert "split_sizing" not in report
    assert report["splits"]["eval"]["records"] == pytest.approx(ROWS / 2, rel=0.1)


def test_the_default_cap_keeps_small_data_at_two_to_one(source, tmp_path):
    report = _convert(source, tmp_path / "out")
    assert not report["split_sizing"]["capped"]
    assert report["splits"]["eval"]["records"] == pytest.approx(ROWS / 3, rel=0.1)


def test_an_unreadable_parquet_file_is_left_to_the_quarantine(tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"x": list(range(50))}), good)
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    assert count_rows("parquet", [str(tmp_path / "bad.parquet"), str(good)]) == (50, True)
