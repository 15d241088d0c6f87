"""Data in spans: the span folders' specs, and ShardedExampleGen converting one span at a time."""

import dataclasses
import datetime
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tfx import v1 as tfx
from tfx.components.example_gen import utils as tfx_utils
from tfx.orchestration import metadata
from tfx.proto import example_gen_pb2, range_config_pb2

from example_data import read_split, write_csv, write_images
from tfrecord_pipelines.components.data_source import CSV, IMAGES, PARQUET, DataSource
from tfrecord_pipelines.components.example_gen import ShardedExampleGen
from tfrecord_pipelines.components.example_gen.component import input_config_for
from tfrecord_pipelines.components.example_gen.settings import ExampleGenSettings
from tfrecord_pipelines.components.spans import (
    SpanPattern,
    date_of_span,
    parse_span,
    span_of_date,
    split_data_path,
)
from tfrecord_pipelines.local.beam_args import local_beam_args

# --- the span folders' specs, as TFX's driver reads them ---------------------------------


def _folders(root: Path, names: list[str]) -> None:
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / "rows.csv").write_text("a,label\n1,0\n")


def _tfx_latest(base: Path, folder: str, span: int | None = None):
    """TFX's own answer: the span and version its driver would convert."""
    split = example_gen_pb2.Input.Split(name="single_split", pattern=f"{folder}/*.csv")
    config = None
    if span is not None:
        config = range_config_pb2.RangeConfig(
            static_range=range_config_pb2.StaticRange(start_span_number=span, end_span_number=span)
        )
    _, found_span, found_version = tfx_utils.calculate_splits_fingerprint_span_and_version(
        str(base), [split], config
    )
    return found_span, found_version


@pytest.mark.parametrize(
    "folder, names",
    [
        ("day-{SPAN}", ["day-1", "day-2", "day-10", "other"]),
        ("day-{SPAN:3}", ["day-001", "day-002", "day-014"]),
        ("{YYYY}-{MM}-{DD}", ["2026-11-24", "2026-11-25", "notes"]),
        ("day-{SPAN}/v{VERSION}", ["day-1/v1", "day-2/v1", "day-2/v3", "day-2/v2"]),
    ],
)
def test_the_latest_span_and_version_are_the_ones_tfx_resolves(tmp_path, folder, names):
    _folders(tmp_path, names)
    pattern = SpanPattern(base=str(tmp_path), folder=folder)
    latest = pattern.find()
    assert (latest.span, latest.version) == _tfx_latest(tmp_path, folder)
    for found in pattern.spans():
        assert (found.span, found.version) == _tfx_latest(tmp_path, folder, found.span)
        assert Path(found.path).is_dir()


@pytest.mark.parametrize(
    "folder, stray", [("day-{SPAN}", "day-x"), ("{YYYY}-{MM}-{DD}", "2026-02-30")]
)
def test_a_folder_that_looks_like_a_span_but_is_none_is_refused_as_tfx_does(
    tmp_path, folder, stray
):
    _folders(tmp_path, [stray, "day-1" if "SPAN" in folder else "2026-11-25"])
    with pytest.raises(ValueError, match=rf"Folder {tmp_path}/{stray} looks like a span folder"):
        SpanPattern(base=str(tmp_path), folder=folder).find()
    with pytest.raises(ValueError):
        _tfx_latest(tmp_path, folder)


def test_spans_on_disk_are_listed_in_order_with_their_highest_version(tmp_path):
    _folders(tmp_path, ["day-1/v1", "day-2/v1", "day-2/v3", "day-10/v2"])
    pattern = SpanPattern(base=str(tmp_path), folder="day-{SPAN}/v{VERSION}")
    assert [(s.span, s.version) for s in pattern.spans()] == [(1, 1), (2, 3), (10, 2)]
    assert pattern.spans()[1].path == str(tmp_path / "day-2" / "v3")


def test_a_missing_span_is_one_line_naming_the_folder(tmp_path):
    _folders(tmp_path, ["day-1", "day-2"])
    pattern = SpanPattern(base=str(tmp_path), folder="day-{SPAN}")
    with pytest.raises(ValueError, match=rf"Span 7 is missing: no folder {tmp_path}/day-7 "):
        pattern.find(7)
    dated = SpanPattern(base=str(tmp_path), folder="{YYYY}-{MM}-{DD}")
    with pytest.raises(ValueError, match=rf"No span of {tmp_path}/\{{YYYY\}}"):
        dated.find()


def test_data_paths_split_at_the_first_spec():
    assert split_data_path("events/day-{SPAN}/") == SpanPattern("events", "day-{SPAN}")
    assert split_data_path("gs://b/e/{YYYY}/{MM}/{DD}") == SpanPattern(
        "gs://b/e", "{YYYY}/{MM}/{DD}"
    )
    assert split_data_path("events/plain") is None
    with pytest.raises(ValueError, match="unknown spec"):
        split_data_path("events/day-{DAY}")
    with pytest.raises(ValueError, match="not both"):
        split_data_path("events/{SPAN}-{YYYY}-{MM}-{DD}")
    with pytest.raises(ValueError, match="needs a {SPAN}"):
        split_data_path("events/v{VERSION}")


def test_a_span_is_asked_for_by_number_or_day():
    assert parse_span("31") == 31
    assert parse_span("") is None
    day = parse_span("2026-11-25")
    assert (
        date_of_span(day).isoformat()
        == "2026-11-25"
        == date_of_span(parse_span("20261125")).isoformat()
    )
    assert day == tfx_utils.date_to_span_number(2026, 11, 25)
    with pytest.raises(ValueError, match="give a span number"):
        parse_span("yesterday")


# --- ShardedExampleGen, one span per execution ---------------------------------------------


def _write_parquet(folder: Path, rows: int, offset: int) -> None:
    folder.mkdir(parents=True)
    table = pa.table(
        {"id": list(range(offset, offset + rows)), "label": [i % 2 for i in range(rows)]}
    )
    pq.write_table(table, folder / "part.parquet")


class _Runs:
    """ExampleGen alone, run by LocalDagRunner over one metadata store per data folder."""

    def __init__(self, root: Path):
        self.root = root

    def run(self, name: str, source: DataSource, span: str | None = None, label="label"):
        example_gen = ShardedExampleGen(
            source.input_base,
            ExampleGenSettings(source_format=source.format, label_key=label),
            input_config=input_config_for(source),
            span=span,
        )
        tfx.orchestration.LocalDagRunner().run(
            tfx.dsl.Pipeline(
                pipeline_name=name,
                pipeline_root=str(self.root / "root" / name),
                components=[example_gen],
                metadata_connection_config=self._store(name),
                beam_pipeline_args=local_beam_args(),
                enable_cache=True,
            )
        )

    def _store(self, name):
        return metadata.sqlite_metadata_connection_config(str(self.root / f"{name}.db"))

    def examples(self, name: str) -> list:
        """Every Examples artifact the pipeline's ExampleGen wrote, oldest first."""
        with metadata.Metadata(self._store(name)) as m:
            found = m.store.get_artifacts_by_type("Examples")
        return sorted(found, key=lambda a: a.id)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return _Runs(tmp_path_factory.mktemp("span-runs"))


def _ids(uri: str) -> set[int]:
    return {
        e.features.feature["id"].int64_list.value[0]
        for split in ("train", "eval")
        for e in read_split(Path(uri) / f"Split-{split}")
    }


def _span(artifact) -> tuple[int, int | None]:
    props = artifact.custom_properties
    return props["span"].int_value, (props["version"].int_value if "version" in props else None)


def test_csv_spans_convert_the_latest_then_the_one_asked_for_and_a_new_version_alone(
    runs, tmp_path
):
    base = tmp_path / "events"
    write_csv(base / "day-1" / "v1", 300, bad_rows=[], seed=1)
    write_csv(base / "day-2" / "v1", 200, bad_rows=[], seed=2)
    pattern = SpanPattern(str(base), "day-{SPAN}/v{VERSION}")
    source = DataSource(str(base / "day-2" / "v1"), CSV, spans=pattern)

    runs.run("csv-spans", source)  # the latest: span 2
    runs.run("csv-spans", source, span="1")
    runs.run("csv-spans", source)  # span 2 again: its conversion is reused
    first = runs.examples("csv-spans")
    assert [_span(a) for a in first] == [(2, 1), (1, 1)]
    assert len(_ids(first[0].uri)) == 200 and len(_ids(first[1].uri)) == 300
    plan = json.loads((Path(first[0].uri) / "shard_plan.json").read_text())
    assert (plan["span"], plan["version"], plan["input_pattern"]) == (2, 1, "day-2/v1/*")

    # A second version of span 1 converts span 1 again, and nothing else.
    write_csv(base / "day-1" / "v2", 250, bad_rows=[], seed=3)
    runs.run("csv-spans", source, span="1")
    runs.run("csv-spans", source)
    after = runs.examples("csv-spans")
    assert [_span(a) for a in after] == [(2, 1), (1, 1), (1, 2)]
    assert len(_ids(after[2].uri)) == 250


def test_parquet_and_image_spans_convert_the_latest_folder_only(runs, tmp_path):
    _write_parquet(tmp_path / "tables" / "2026-11-24", 50, offset=0)
    _write_parquet(tmp_path / "tables" / "2026-11-25", 70, offset=1000)
    dated = SpanPattern(str(tmp_path / "tables"), "{YYYY}-{MM}-{DD}")
    runs.run("parquet-spans", DataSource(dated.find().path, PARQUET, spans=dated))
    (parquet,) = runs.examples("parquet-spans")
    assert _span(parquet) == (parse_span("2026-11-25"), None)
    assert _ids(parquet.uri) == set(range(1000, 1070))

    write_images(tmp_path / "photos" / "day-1")
    written = write_images(tmp_path / "photos" / "day-2")
    (tmp_path / "photos" / "day-2" / "dogs" / "dogs-0.jpg").unlink()
    spans = SpanPattern(str(tmp_path / "photos"), "day-{SPAN}")
    source = DataSource(spans.find().path, IMAGES, spans=spans)
    assert source.input_pattern == "day-{SPAN}/*/*"
    runs.run("image-spans", source)
    (images,) = runs.examples("image-spans")
    assert _span(images) == (2, None)
    names = {
        e.features.feature["filename"].bytes_list.value[0].decode()
        for split in ("train", "eval")
        for e in read_split(Path(images.uri) / f"Split-{split}")
    }
    assert names == set(written) - {"dogs-0.jpg"}


def test_a_span_not_on_disk_fails_the_component_naming_the_path(runs, tmp_path):
    write_csv(tmp_path / "events" / "day-1", 50, bad_rows=[])
    pattern = SpanPattern(str(tmp_path / "events"), "day-{SPAN}")
    source = DataSource(str(tmp_path / "events" / "day-1"), CSV, spans=pattern)
    with pytest.raises(ValueError) as failure:
        runs.run("missing-span", source, span="5")
    message = str(failure.value)
    assert message == (
        f"Span 5 is missing: nothing matches {tmp_path}/events/day-5/*; "
        "the run stops rather than train on earlier data again."
    )
    assert runs.examples("missing-span") == []


def test_the_command_line_refuses_a_missing_span_before_importing_tfx(tmp_path):
    write_csv(tmp_path / "events" / "day-1", 50, bad_rows=[])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfrecord_pipelines",
            "run",
            "--data",
            f"{tmp_path}/events/day-{{SPAN}}/",
            "--label",
            "label",
            "--span",
            "3",
            "--output",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: Span 3 is missing: no folder {tmp_path}/events/day-3 (latest on disk: 1)."
    )


def test_convert_refuses_span_folders_in_one_line(tmp_path):
    write_csv(tmp_path / "events" / "day-1", 20, bad_rows=[])
    result = subprocess.run(
        [sys.executable, "-m", "tfrecord_pipelines", "convert",
         f"{tmp_path}/events/day-{{SPAN}}/", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: {tmp_path}/events/day-{{SPAN}}/ names span folders; convert reads one folder: "
        "give one span's folder (e.g. events/day-31), or run the pipeline with --data and --span."
    )


def test_a_hive_date_partition_is_a_span_and_the_levels_below_it_are_columns(runs, tmp_path):
    from tfrecord_pipelines.components.data_source import open_source

    lake = tmp_path / "lake" / "events"
    for day, rows in (("2026-11-01", 30), ("2026-11-02", 20)):
        for region in ("eu", "us"):
            write_csv(lake / f"day={day}" / f"region={region}", rows, bad_rows=[])
    pattern = split_data_path(f"{lake}/day={{YYYY}}-{{MM}}-{{DD}}/")
    source = dataclasses.replace(open_source(pattern.find().path), spans=pattern)
    assert source.input_pattern == "day={YYYY}-{MM}-{DD}/region=*/*.csv"
    runs.run("hive-days", source)
    (examples,) = runs.examples("hive-days")
    assert _span(examples) == (span_of_date(datetime.date(2026, 11, 2)), None)
    records = [
        e for split in ("train", "eval") for e in read_split(Path(examples.uri) / f"Split-{split}")
    ]
    regions = sorted(e.features.feature["region"].bytes_list.value[0] for e in records)
    assert regions == [b"eu"] * 20 + [b"us"] * 20
    assert all("day" not in e.features.feature for e in records)  # the span, not a column
