"""Data as users hand it: a file, a glob, CSV dialects, compressed files and Hive-partitioned
folders, each converted whole with --label alone; and a one-line refusal, naming the file,
for what still cannot be read."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from tfrecord_pipelines.cli.main import main
from tfrecord_pipelines.components import data_source
from tfrecord_pipelines.components.data_source import csv_dialect, files, partitions
from tfrecord_pipelines.components.data_source.column_types import ColumnType
from tfrecord_pipelines.components.example_gen.csv_blocks import CsvStream, plan_blocks

ROWS = 2000
LABEL = "target"


def _table(rows: int = ROWS) -> pd.DataFrame:
    """Numbers, text holding the delimiters, quotes and a line end, and a text label."""
    rng = np.random.default_rng(7)
    notes = np.array(["plain", "a, b; c|d", 'say "hi"', "two\nlines", "tab\there"], dtype=object)
    return pd.DataFrame(
        {
            "sepal length": rng.normal(5, 1, rows).round(2),
            "count": rng.integers(0, 100, rows),
            "note": rng.choice(notes, rows),
            LABEL: rng.choice(["setosa", "virginica", "versicolor"], rows),
        }
    )


def _write_shapes(root: Path) -> dict[str, str]:
    """The issue's seven shapes of one table, each as ``--data`` names it."""
    table = _table()
    shapes = {}
    (root / "file").mkdir(parents=True)
    table.to_csv(root / "file" / "iris.csv", index=False)
    shapes["a file"] = str(root / "file" / "iris.csv")
    (root / "exports").mkdir()
    for part in range(4):
        table.iloc[part * 500 : (part + 1) * 500].to_csv(
            root / "exports" / f"part-{part}.csv", index=False
        )
    (root / "exports" / "README.md").write_text("not data\n")
    shapes["a glob"] = str(root / "exports" / "*.csv")
    # One folder each, the table written as the shape asks.
    for name, folder, file, options in (
        ("a semicolon file", "semicolon", "iris.csv", {"sep": ";"}),
        ("a TSV", "tsv", "iris.tsv", {"sep": "\t"}),
        ("a .csv.gz", "gz", "iris.csv.gz", {"compression": "gzip"}),
        ("a BOM file", "bom", "iris.csv", {"encoding": "utf-8-sig"}),
    ):
        (root / folder).mkdir()
        table.to_csv(root / folder / file, index=False, **options)
        shapes[name] = str(root / folder)
    hive = table.assign(day=np.where(np.arange(ROWS) < 1200, "2026-11-01", "2026-11-02"))
    pq.write_to_dataset(pa.Table.from_pandas(hive), root / "hive", partition_cols=["day"])
    (root / "hive" / "_SUCCESS").write_text("")  # as Spark leaves it: not data
    shapes["Hive Parquet"] = str(root / "hive")
    return shapes


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Each shape converted by the command line, as a user runs it: (printed, output folder)."""
    root = tmp_path_factory.mktemp("shapes")
    results = {}
    for name, data in _write_shapes(root / "data").items():
        dest = root / "out" / name.replace(" ", "-")
        printed: list[str] = []
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("builtins.print", lambda *a, _to=printed, **k: _to.append(" ".join(a)))
            status = main(["convert", data, str(dest), "--label", LABEL])
        results[name] = (status, "\n".join(printed), dest)
    return results


def _records(dest: Path) -> list[dict]:
    import tensorflow as tf

    found = []
    for shard in sorted(dest.glob("Split-*/*")):
        for record in tf.data.TFRecordDataset(str(shard), "GZIP"):
            example = tf.train.Example.FromString(record.numpy())
            row = {}
            for key, feature in example.features.feature.items():
                kind = feature.WhichOneof("kind")
                row[key] = tuple(getattr(feature, kind).value) if kind else ()
            found.append(row)
    return found


def _key(row: dict) -> str:
    return json.dumps(sorted((k, [str(v) for v in values]) for k, values in row.items()))


def test_every_shape_converts_whole_with_the_label_alone(converted):
    plain = sorted(map(_key, _records(converted["a file"][2])))
    assert len(plain) == ROWS
    for name, (status, printed, dest) in converted.items():
        assert status == 0, (name, printed)
        assert f"Read {ROWS:,} records: wrote {ROWS:,}, quarantined 0" in printed, name
        rows = _records(dest)
        if name == "Hive Parquet":
            days = sorted(row.pop("day")[0].decode() for row in rows)
            assert days == ["2026-11-01"] * 1200 + ["2026-11-02"] * 800
        assert sorted(map(_key, rows)) == plain, name


def test_the_file_and_the_glob_are_found_where_they_are(tmp_path):
    shapes = _write_shapes(tmp_path)
    one = data_source.open_source(shapes["a file"])
    assert (one.root, one.file_pattern, one.delimiter) == (str(tmp_path / "file"), "iris.csv", ",")
    many = data_source.open_source(shapes["a glob"])
    assert many.file_pattern == "*.csv" and len(many.files()) == 4
    hive = data_source.open_source(shapes["Hive Parquet"])
    assert (hive.format, hive.file_pattern) == ("parquet", "day=*/*.parquet")
    assert data_source.columns(hive)[-1] == "day"


# --- dialects ----------------------------------------------------------------------------


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_the_delimiter_is_sniffed_from_the_first_rows(tmp_path, delimiter):
    _table(300).to_csv(tmp_path / "t.csv", index=False, sep=delimiter)
    assert csv_dialect.sniff_delimiter(str(tmp_path / "t.csv")) == delimiter


def test_bad_rows_do_not_hide_the_delimiter(tmp_path):
    """A third of the first rows have a field too many or too few: they are the
    quarantine's to name, and the delimiter is still the one most rows fit."""
    bad = ("1;2", "1;2;3;4")
    lines = ["a;b;c"] + [bad[i % 2] if i % 3 == 0 else "1;2;3" for i in range(90)]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    assert csv_dialect.sniff_delimiter(str(tmp_path / "t.csv")) == ";"


def test_a_tsv_is_tab_separated_and_a_forced_delimiter_wins(tmp_path):
    (tmp_path / "t.tsv").write_text("a,b\tc\n1,2\t3\n")
    assert data_source.open_source(str(tmp_path / "t.tsv")).delimiter == "\t"
    forced = data_source.open_source(str(tmp_path / "t.tsv"), delimiter=",")
    assert data_source.columns(forced) == ["a", "b\tc"]


def test_an_unsure_sniff_names_the_candidates_and_the_option(tmp_path):
    (tmp_path / "t.csv").write_text("a,b;c\n1,2;3\n4,5;6\n")
    with pytest.raises(ValueError) as error:
        data_source.open_source(str(tmp_path))
    assert str(error.value) == (
        f"The delimiter of {tmp_path}/t.csv could be comma (',') or semicolon (';'): each "
        "splits its first rows alike; pass --delimiter."
    )


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    (tmp_path / "t.csv").write_bytes("\ufeffname;age\nAnn;3\n".encode())
    source = data_source.open_source(str(tmp_path))
    assert (source.delimiter, data_source.columns(source)) == (";", ["name", "age"])


@pytest.mark.parametrize(
    "suffix, write",
    [
        (".gz", gzip.compress),
        (".bz2", bz2.compress),
        (".zst", lambda data: __import__("zstandard").ZstdCompressor().compress(data)),
    ],
)
def test_compressed_files_stream_in_record_pieces_as_plain_blocks_cut_them(tmp_path, suffix, write):
    text = _table(30000).to_csv(index=False).encode()  # 1.3 MB: pieces of 64 KiB reads
    (tmp_path / "t.csv").write_bytes(text)
    (tmp_path / f"t.csv{suffix}").write_bytes(write(text))
    plain = plan_blocks(str(tmp_path / "t.csv"), 64 * 1024)
    (stream,) = plan_blocks(str(tmp_path / f"t.csv{suffix}"), 64 * 1024)
    assert isinstance(stream, CsvStream)
    pieces = list(stream.pieces())
    assert len(pieces) > 10
    assert b"".join(p for p, _ in pieces) == b"".join(b.read() for b in plain)
    # Each piece's first line is the file's line number there (the header is line 1).
    before = 0
    for piece, line in pieces:
        assert line == 2 + before
        before += piece.count(b"\n")
    source = data_source.open_source(str(tmp_path / f"t.csv{suffix}"))
    assert data_source.columns(source) == ["sepal length", "count", "note", LABEL]


# --- Hive partitions ---------------------------------------------------------------------


def test_hive_keys_are_typed_and_read_as_pyarrow_discovers_them_side_files_skipped(tmp_path):
    lake = tmp_path / "lake"
    folders = ["day=2026-11-01/region=1", "day=2026-11-02%20late/region=2"]
    folders.append("day=__HIVE_DEFAULT_PARTITION__/region=3")
    for index, folder in enumerate(folders):
        (lake / folder).mkdir(parents=True)
        pq.write_table(pa.table({"x": [index]}), lake / folder / "part-0.parquet")
    for side in ("_SUCCESS", "_committed_123", ".part-0.parquet.crc"):
        (lake / side).write_text("")
    (lake / "_temporary" / "0").mkdir(parents=True)
    (lake / "_temporary" / "0" / "part-9.parquet").write_text("half written")
    source = data_source.open_source(str(lake))
    assert source.file_pattern == "day=*/region=*/*.parquet"
    assert len(source.files()) == 3
    discovered = ds.dataset(str(lake), format="parquet", partitioning="hive")
    assert [str(discovered.schema.field(k).type) for k in ("day", "region")] == ["string", "int32"]
    assert source.partitioning().types == {"day": ColumnType.BYTES, "region": ColumnType.INT}
    theirs = sorted(
        (row["x"], row["day"], str(row["region"])) for row in discovered.to_table().to_pylist()
    )
    ours = sorted(
        (
            pq.read_table(path)["x"][0].as_py(),
            *partitions.values_of(source.root, source.file_pattern, path).values(),
        )
        for path in source.files()
    )
    assert ours == theirs
    assert (1, "2026-11-02 late", "2") in ours and (2, None, "3") in ours


def test_a_date_partition_serves_as_a_span(tmp_path):
    from tfrecord_pipelines.components.spans import span_of_date, split_data_path

    for day in ("2026-11-01", "2026-11-02"):
        folder = tmp_path / "events" / f"day={day}" / "region=eu"
        folder.mkdir(parents=True)
        (folder / "part-0.csv").write_text("a,target\n1,x\n")
    pattern = split_data_path(f"{tmp_path}/events/day={{YYYY}}-{{MM}}-{{DD}}/")
    latest = pattern.find()
    assert latest.span == span_of_date(__import__("datetime").date(2026, 11, 2))
    source = data_source.open_source(latest.path)
    assert source.file_pattern == "region=*/*.csv"
    assert data_source.columns(source) == ["a", "target", "region"]


# --- refusals ----------------------------------------------------------------------------


def _refusal(tmp_path, names: dict[str, bytes], data: str | None = None, **options) -> str:
    for name, content in names.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    with pytest.raises(ValueError) as error:
        data_source.open_source(data or str(tmp_path), **options)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_an_excel_file_is_refused_by_name(tmp_path):
    assert _refusal(tmp_path, {"sales.xlsx": b"PK"}) == (
        f"{tmp_path}/sales.xlsx is a spreadsheet; save each sheet as CSV (UTF-8)."
    )


def test_json_lines_are_refused_with_the_fix(tmp_path):
    message = _refusal(tmp_path, {"events.jsonl": b'{"a": 1}\n'}, str(tmp_path / "events.jsonl"))
    assert message == (
        f"{tmp_path}/events.jsonl is JSON; write it as Parquet or CSV first, e.g. "
        "pandas.read_json(path, lines=True).to_parquet(...)."
    )


def test_a_csv_without_a_header_row_is_refused(tmp_path):
    (tmp_path / "t.csv").write_text("5.1,3.5,1.4,0\n4.9,3.0,1.4,0\n")
    source = data_source.open_source(str(tmp_path))
    with pytest.raises(ValueError) as error:
        data_source.columns(source)
    assert str(error.value) == (
        f"CSV file {tmp_path}/t.csv has no header row: its first row is '5.1,3.5,1.4,0'; "
        "add a first row naming the columns."
    )


def test_mixed_formats_are_refused_naming_both(tmp_path):
    pq.write_table(pa.table({"a": [1]}), tmp_path / "b.parquet")
    message = _refusal(tmp_path, {"a.csv": b"a\n1\n"}, str(tmp_path / "*"))
    assert message == (
        f"Data {tmp_path}/* is ambiguous: it holds 1 CSV file(s) (a.csv, ...), 1 Parquet "
        "file(s) (b.parquet, ...); pass --format csv|parquet to choose."
    )


def test_hive_levels_that_differ_are_refused(tmp_path):
    message = _refusal(tmp_path, {"day=1/a.csv": b"a\n1\n", "day=2/region=x/b.csv": b"a\n1\n"})
    assert message.startswith(f"Hive folder {tmp_path} mixes partition levels: ")
    assert message.endswith("every file needs the same key=value levels.")


def test_a_hive_key_that_is_also_a_column_is_refused(tmp_path):
    (tmp_path / "day=1").mkdir()
    (tmp_path / "day=1" / "a.csv").write_text("day,target\n1,x\n")
    source = data_source.open_source(str(tmp_path))
    with pytest.raises(ValueError, match="day is both a Hive partition key and a column"):
        data_source.columns(source)


def test_a_glob_that_matches_nothing_and_an_unknown_extension(tmp_path):
    assert (
        _refusal(tmp_path, {}, str(tmp_path / "*.csv")) == f"Data {tmp_path}/*.csv matches no file."
    )
    assert _refusal(tmp_path, {"t.dat": b"a\n1\n"}, str(tmp_path / "t.dat")) == (
        f"Cannot tell the format of {tmp_path}/t.dat from its name; pass --format csv or "
        "--format parquet."
    )
    assert data_source.open_source(str(tmp_path / "t.dat"), "csv").files() == [
        str(tmp_path / "t.dat")
    ]


def test_side_files_are_what_engines_leave():
    assert all(map(files.is_side_file, ["_SUCCESS", "_committed_1", ".x.crc", "x.crc", "_tmp"]))
    assert not any(map(files.is_side_file, ["part-0.parquet", "data.csv.gz"]))


def test_run_reads_the_shapes_as_convert_does(tmp_path):
    """The pipeline's config: the file's glob, its delimiter for ExampleGen, and the classes
    the command line reads before training, through the codec and the dialect."""
    from tfrecord_pipelines.cli.main import build_parser
    from tfrecord_pipelines.cli.task_arguments import config_from_args

    (tmp_path / "exports").mkdir()
    table = _table(200)
    table[LABEL] = np.where(table["count"] % 2, "setosa", "virginica")
    text = table.to_csv(index=False, sep=";").encode()
    (tmp_path / "exports" / "day-1.csv.gz").write_bytes(gzip.compress(text))
    data = str(tmp_path / "exports" / "*.csv.gz")
    args = build_parser().parse_args(
        ["compile", "--data", data, "--label", LABEL, "--positive-class", "setosa"]
    )
    config = config_from_args(args)
    assert (config.source.root, config.source.input_pattern) == (
        str(tmp_path / "exports"),
        "*.csv.gz",
    )
    assert config.source.delimiter == ";"
    assert config.evaluation.positive_class == "setosa"
    assert config.evaluation.num_classes == 2
    assert config.name == "exports"


@pytest.mark.parametrize(
    "data, name",
    [
        ("exports/iris.csv.gz", "iris"),
        ("exports/*.csv", "exports"),
        ("lake/events/", "events"),
        ("lake/events/day={YYYY}-{MM}-{DD}/", "events"),
        ("gs://bucket/exports/part-*.parquet", "exports"),
    ],
)
def test_the_pipeline_is_named_by_what_data_names(data, name):
    from tfrecord_pipelines.cli.task_arguments import dataset_name

    assert dataset_name(data) == name


def test_a_damaged_compressed_file_keeps_its_rows_so_far_and_is_quarantined(tmp_path):
    """A truncated .csv.gz (a copy cut short): its whole rows before the damage are written,
    the file is one quarantined record naming why, and the other files convert whole."""
    from example_data import convert_as_written
    from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions

    (tmp_path / "logs").mkdir()
    text = _table(20000).to_csv(index=False).encode()
    (tmp_path / "logs" / "day-1.csv.gz").write_bytes(gzip.compress(text))
    damaged = gzip.compress(text)
    (tmp_path / "logs" / "day-2.csv.gz").write_bytes(damaged[: len(damaged) // 2])
    report = convert_as_written(
        tmp_path / "logs",
        tmp_path / "out",
        source_format=None,
        sharding=ShardingOptions(),
        compression="gzip",
        label_key=LABEL,
        max_bad_fraction=0.5,
        block_bytes=16 * 1024,
    )
    assert report["quarantined_by_reason"] == {"unreadable compressed file": 1}
    assert 20000 + 5000 < report["records_written"] < 40000
    (record,) = [
        json.loads(line)
        for path in (tmp_path / "out" / "quarantine").glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert record["source"].endswith("day-2.csv.gz")
    assert "Truncated compressed stream" in record["reason"]
