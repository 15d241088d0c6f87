"""Inspection of TFRecord files: counts, sizes and the feature spec from the records."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf
import tensorflow_data_validation as tfdv

from conftest import run_cli
from example_data import write_csv
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions, plan_shards
from tfrecord_pipelines.components.tfrecords.inspection import format_spec, inspect_records


def _write(path, examples, compression=""):
    with tf.io.TFRecordWriter(str(path), tf.io.TFRecordOptions(compression_type=compression)) as w:
        for features in examples:
            w.write(
                tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()
            )


def _f(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def _b(values):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


def test_spec_tells_fixed_from_variable_length(tmp_path):
    _write(tmp_path / "a.gz", [{"x": _f([1.0, 2.0]), "tags": _b([b"a"])}], "GZIP")
    _write(tmp_path / "b", [{"x": _f([3.0, 4.0])}, {"x": _f([5.0, 6.0]), "tags": _b([b"b", b"c"])}])
    result = inspect_records(str(tmp_path))
    assert result.records == 3
    assert len(result.files) == 2
    assert result.tf_feature_spec() == {
        "tags": tf.io.VarLenFeature(tf.string),
        "x": tf.io.FixedLenFeature([2], tf.float32),
    }
    parsed = tf.io.parse_example(
        [
            tf.train.Example(
                features=tf.train.Features(feature={"x": _f([1.0, 2.0])})
            ).SerializeToString()
        ],
        result.tf_feature_spec(),
    )
    assert parsed["x"].shape == (1, 2)
    assert "'x': tf.io.FixedLenFeature([2], tf.float32)," in format_spec(result.feature_spec)


def test_no_files_and_corrupt_files_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="No TFRecord files at"):
        inspect_records(str(tmp_path / "*.tfrecord"))
    (tmp_path / "bad.tfrecord").write_bytes(b"\x01\x02 definitely not a tfrecord file")
    with pytest.raises(ValueError, match="bad.tfrecord is not a valid TFRecord file"):
        inspect_records(str(tmp_path / "bad.tfrecord"))


def test_convert_then_inspect_from_the_command_line(tmp_path):
    source = write_csv(tmp_path / "source", 3_000)
    converted = run_cli(
        "convert", str(source), str(tmp_path / "out"), "--shard-size", "32KiB",
        "--label", "label", "--max-bad-fraction", "0.01", "--statistics",
        "--beam-arg=--direct_running_mode=in_memory",
    )  # fmt: skip
    assert converted.returncode == 0, converted.stderr[-2000:]
    assert "Read 3,004 records: wrote 3,000, quarantined 4" in converted.stdout
    assert "Split-train:" in converted.stdout and "Split-eval:" in converted.stdout
    assert f"Shard plan: {tmp_path / 'out' / 'shard_plan.json'}" in converted.stdout
    statistics = tmp_path / "out" / "statistics"
    assert f"Statistics: {statistics}/Split-<name>/FeatureStats.pb" in converted.stdout
    # The size set wins over the default floor of 10 readers, with nothing to say.
    plan = json.loads((tmp_path / "out" / "shard_plan.json").read_text())
    assert plan["num_readers"] is None
    for split in plan["splits"].values():
        by_size = plan_shards(
            split["estimated_bytes"], split["records_measured"], ShardingOptions(32 * 1024)
        )
        assert split["planned_shards"] == by_size.num_shards != 10
        assert split["shards_adjusted"] == ""
    for name, split in plan["splits"].items():
        described = tfdv.load_stats_binary(str(statistics / f"Split-{name}" / "FeatureStats.pb"))
        assert described.datasets[0].num_examples == split["records"]
    assert "(target " in converted.stdout and "raised" not in converted.stdout
    inspected = run_cli("inspect", str(tmp_path / "out" / "Split-train"))
    assert inspected.returncode == 0, inspected.stderr[-2000:]
    assert "'amount': tf.io.FixedLenFeature([1], tf.float32)," in inspected.stdout
    assert "'colour': tf.io.FixedLenFeature([1], tf.string)," in inspected.stdout


def test_convert_writes_the_shard_count_asked_for_and_says_why_readers_raised_it(tmp_path):
    source = write_csv(tmp_path / "source", 3_000)
    converted = run_cli(
        "convert", str(source), str(tmp_path / "out"), "--num-shards", "3", "--readers", "4",
        "--split", "train=2,eval=1", "--beam-arg=--direct_running_mode=in_memory",
    )  # fmt: skip
    assert converted.returncode == 0, converted.stderr[-2000:]
    plan = json.loads((tmp_path / "out" / "shard_plan.json").read_text())
    assert [split["planned_shards"] for split in plan["splits"].values()] == [4, 4]
    assert "Split-train: 4 shards (planned 4)" in converted.stdout
    assert "(3 asked for)" in converted.stdout
    assert "    raised from 3 to 4 shards: one per reader, 4 readers" in converted.stdout
    both = run_cli("convert", str(source), str(tmp_path / "x"), "--num-shards", "3",
                   "--shard-size", "1MiB")  # fmt: skip
    assert both.returncode == 2
    assert both.stderr.strip().splitlines()[-1] == (
        "error: --shard-size and --num-shards: Set a target shard size or a shard count, "
        "not both: the count would ignore the size."
    )


def test_convert_detects_the_format_and_plans_as_run_does(tmp_path):
    source = tmp_path / "parquet"
    source.mkdir()
    pq.write_table(
        pa.table({"x": [float(i) for i in range(2_000)], "label": ["a", "b"] * 1_000}),
        source / "part-0.parquet",
    )
    converted = run_cli(
        "convert", str(source), str(tmp_path / "out"), "--eval-rows", "400",
        "--beam-arg=--direct_running_mode=in_memory",
    )  # fmt: skip
    assert converted.returncode == 0, converted.stderr[-2000:]
    assert f"Converting {source} (parquet)" in converted.stdout
    assert "Splits sized to the data: 2,000 rows, eval capped at about 400 rows" in converted.stdout
    plan = json.loads((tmp_path / "out" / "shard_plan.json").read_text())
    # run's floor of 10 readers: every split has at least 10 shards though it is tiny.
    assert plan["num_readers"] == 10
    assert [split["planned_shards"] for split in plan["splits"].values()] == [10, 10]
    # Parquet is tabular: GZIP, as run writes it.
    assert plan["compression"] == "gzip"
