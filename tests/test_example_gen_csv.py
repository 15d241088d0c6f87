"""ShardedExampleGen on CSV, through the standalone converter (the component's executor)."""

import json

import pytest

from example_data import PLANTED_BAD_ROWS, convert_as_written, read_split, write_csv
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.local.beam_args import local_beam_args

TARGET = 64 * 1024
# In memory, one process; TFX not packaged for workers (what convert passes).
IN_MEMORY = local_beam_args()
ROWS = 60_000


def _convert(source, dest, **overrides):
    settings = dict(
        source_format="csv",
        sharding=ShardingOptions(target_shard_bytes=TARGET),
        compression="gzip",
        label_key="label",
        beam_pipeline_args=IN_MEMORY,
    )
    settings.update(overrides)
    return convert_as_written(source, dest, **settings)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("csv")
    source = write_csv(root / "source", ROWS)
    report = _convert(source, root / "out")
    return source, root / "out", report


def test_shards_are_within_a_quarter_of_the_target_except_the_last(converted):
    _, out, report = converted
    for name, split in report["splits"].items():
        sizes = [s["bytes"] for s in split["shards"]]
        assert len(sizes) >= 3, name
        for size in sizes[:-1]:
            assert 0.75 * TARGET <= size <= 1.25 * TARGET, (name, sizes)
        assert 0 < sizes[-1] <= 1.25 * TARGET
        files = sorted(p.name for p in (out / f"Split-{name}").iterdir())
        assert files == [s["file"] for s in split["shards"]]
        assert all(f.endswith(f"-of-{len(sizes):05d}.gz") for f in files)


def test_records_written_plus_quarantined_equals_rows_read(converted):
    _, out, report = converted
    assert report["records_read"] == ROWS + len(PLANTED_BAD_ROWS)
    assert report["records_written"] == ROWS
    assert report["quarantined"] == len(PLANTED_BAD_ROWS)
    on_disk = sum(len(read_split(out / f"Split-{name}")) for name in ("train", "eval"))
    assert on_disk == ROWS
    assert json.loads((out / "shard_plan.json").read_text()) == report


def test_quarantine_holds_each_planted_row_with_its_reason(converted):
    source, out, _ = converted
    records = [
        json.loads(line)
        for path in sorted((out / "quarantine").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    assert sorted((r["content"], r["reason"]) for r in records) == sorted(PLANTED_BAD_ROWS)
    assert {r["source"] for r in records} == {str(source / "data.csv")}


def test_no_example_is_in_two_splits_and_the_split_is_about_two_to_one(converted):
    _, out, _ = converted
    ids = {
        name: {
            e.features.feature["id"].int64_list.value[0] for e in read_split(out / f"Split-{name}")
        }
        for name in ("train", "eval")
    }
    assert not ids["train"] & ids["eval"]
    assert len(ids["train"]) / ROWS == pytest.approx(2 / 3, abs=0.02)


def test_types_come_from_the_data_and_missing_cells_stay_missing(converted):
    _, out, _ = converted
    example = read_split(out / "Split-train")[0].features.feature
    assert example["amount"].WhichOneof("kind") == "float_list"
    assert example["count"].WhichOneof("kind") == "int64_list"
    assert example["colour"].WhichOneof("kind") == "bytes_list"


def test_a_rerun_produces_the_same_split(tmp_path):
    # Several shards a split, as in the module's conversion, on a tenth of its rows.
    source = write_csv(tmp_path / "source", ROWS // 10)
    for out in ("first", "again"):
        _convert(source, tmp_path / out, sharding=ShardingOptions(target_shard_bytes=TARGET // 10))
    out = tmp_path / "first"
    for name in ("train", "eval"):
        assert len(list((out / f"Split-{name}").iterdir())) >= 3, name
        first = sorted(e.SerializeToString() for e in read_split(out / f"Split-{name}"))
        again = sorted(
            e.SerializeToString() for e in read_split(tmp_path / "again" / f"Split-{name}")
        )
        assert first == again


def test_too_many_bad_rows_fail_with_the_reasons_and_first_rows(tmp_path):
    source = write_csv(tmp_path / "source", 200)
    with pytest.raises(ValueError) as error:
        _convert(source, tmp_path / "out", max_bad_fraction=0.01)
    message = str(error.value)
    assert message.startswith("4 of 204 input records (1.96%) were quarantined, more than")
    assert "max_bad_fraction 1.00%" in message
    assert "wrong column count: 5 fields, expected 6" in message
    assert str(tmp_path / "out" / "quarantine") in message


def test_uncompressed_shards(tmp_path):
    source = write_csv(tmp_path / "source", 2_000, bad_rows=[])
    report = _convert(source, tmp_path / "out", compression="none")
    files = [s["file"] for s in report["splits"]["train"]["shards"]]
    assert files and not any(f.endswith(".gz") for f in files)
    assert len(read_split(tmp_path / "out" / "Split-train")) == report["splits"]["train"]["records"]


def test_schema_types_the_columns(tmp_path):
    source = write_csv(tmp_path / "source", 300, bad_rows=[])
    schema = tmp_path / "schema.pbtxt"
    schema.write_text('feature { name: "count" type: FLOAT }\n')
    _convert(source, tmp_path / "out", schema_path=str(schema))
    example = read_split(tmp_path / "out" / "Split-train")[0].features.feature
    assert example["count"].WhichOneof("kind") == "float_list"


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=f"Data path {tmp_path / 'nope'} does not exist"):
        _convert(tmp_path / "nope", tmp_path / "out")


def test_empty_folder_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"^Data folder .*empty holds no csv file\.$"):
        _convert(tmp_path / "empty", tmp_path / "out")


def test_header_only_csv_is_a_clear_error(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "d.csv").write_text("a,label\n")
    with pytest.raises(ValueError, match="Split 'train' received no examples"):
        _convert(tmp_path / "src", tmp_path / "out")


def test_label_must_be_a_column(tmp_path):
    source = write_csv(tmp_path / "source", 10, bad_rows=[])
    with pytest.raises(ValueError, match="Label column 'price' is not in the CSV header"):
        _convert(source, tmp_path / "out", label_key="price")


def test_split_ratios_and_key_column(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    lines = ["user,value,label"] + [f"u{i % 50},{i},{i % 2}" for i in range(3_000)]
    (source / "d.csv").write_text("\n".join(lines) + "\n")
    report = _convert(
        source, tmp_path / "out", splits={"train": 8, "eval": 1, "test": 1}, split_key="user"
    )
    assert set(report["splits"]) == {"train", "eval", "test"}
    users = {
        name: {
            e.features.feature["user"].bytes_list.value[0]
            for e in read_split(tmp_path / "out" / f"Split-{name}")
        }
        for name in ("train", "eval", "test")
    }
    assert not users["train"] & users["eval"] and not users["train"] & users["test"]
    assert sum(len(u) for u in users.values()) == 50


def test_a_readme_beside_the_csv_files_is_not_read_as_data(tmp_path):
    source = write_csv(tmp_path / "source", 600, bad_rows=())
    (source / "README.md").write_text("# About this data\nNot a CSV row.\n")
    report = _convert(source, tmp_path / "out")
    assert (report["records_written"], report["quarantined"]) == (600, 0)
