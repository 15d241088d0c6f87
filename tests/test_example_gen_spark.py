"""ShardedExampleGen on Spark (local[2]): the records, splits, shards and quarantine of Beam."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from example_data import (
    STRAY_FILE,
    write_bundled_shards,
    write_corrupt_photos,
    write_csv,
    write_digit_images,
)
from spark_comparison import (
    SHARDING,
    SPARK_MASTER,
    assert_same_conversion,
    convert_with,
    quarantined,
)
from tfrecord_pipelines.components.example_gen.settings import ExampleGenSettings, SparkOptions
from tfrecord_pipelines.components.example_gen.spark.session import spark_session
from tfrecord_pipelines.components.tfrecords.reader import read_records


def test_a_spark_session_that_cannot_start_is_a_one_line_error(tmp_path):
    # First in the module: no session runs yet, so this one is started (and fails).
    source = write_csv(tmp_path / "csv", rows=50, bad_rows=[])
    with pytest.raises(RuntimeError, match=r"^the Spark job failed: \[JAVA_GATEWAY_EXITED\]") as e:
        convert_with(
            "spark", source, tmp_path / "out", "csv", spark_master="local[1]",
            spark_conf={"spark.driver.memory": "a-lot"},
        )  # fmt: skip
    assert "\n" not in str(e.value)
    assert not list((tmp_path / "out").glob("**/*.gz")), "a failed conversion left shards"


@pytest.fixture(scope="module")
def spark():
    """One local[2] session for the module: conversions find it running and use it."""
    with spark_session(SPARK_MASTER) as session:
        yield session


def test_spark_reads_gzip_shards_through_its_codec(spark, tmp_path):
    from pyspark.sql import functions

    shards = write_bundled_shards(tmp_path)
    for compression in ("gzip", "gzip:6"):
        path, expected = shards[compression]
        # Hadoop's codec, chosen by the .gz suffix, decompresses every member in the
        # executor; the text column's bytes are the file's, unchanged.
        text = spark.read.text(path, wholetext=True)
        (row,) = text.select(functions.col("value").cast("binary")).collect()
        read = tmp_path / f"read-by-spark-{compression.replace(':', '')}.tfrecord"
        read.write_bytes(bytes(row[0]))
        assert list(read_records(str(read))) == expected


def test_csv_with_bad_rows_is_converted_as_beam_converts_it(spark, tmp_path):
    source = write_csv(tmp_path / "csv", rows=4000)
    (source / "more.csv").write_text(
        (source / "data.csv").read_text().replace("red", "crimson", 40)
    )
    # A small eval cap: the split sized to the data, the same on both engines.
    options = dict(label_key="label", block_bytes=64 * 1024, eval_rows=500)
    beam = convert_with("beam", source, tmp_path / "beam", "csv", **options)
    converted = convert_with("spark", source, tmp_path / "spark", "csv", **options)
    assert converted["quarantined"] == 8 and converted["records_written"] == 8000
    assert converted["split_sizing"]["capped"]
    assert 400 < converted["splits"]["eval"]["records"] < 600
    assert converted["splits"]["train"]["planned_shards"] > 2
    assert_same_conversion(tmp_path / "beam", tmp_path / "spark")
    assert {k: v for k, v in converted.items() if k != "splits"} == {
        k: v for k, v in beam.items() if k != "splits"
    }


def test_parquet_with_bad_rows_and_an_unreadable_file_is_converted_as_beam_converts_it(
    spark, tmp_path
):
    folder = tmp_path / "pq"
    folder.mkdir()
    for part in range(3):
        rows = range(part * 2000, part * 2000 + 2000)
        table = pa.table(
            {
                "id": pa.array(rows, pa.int64()),
                "score": pa.array([None if i % 10 == 0 else i / 3 for i in rows]),
                "tags": pa.array(
                    [[None] if i % 997 == 0 else ["a", "b"][: i % 3] for i in rows],
                    pa.list_(pa.string()),
                ),
                "label": pa.array([None if i % 1500 == 7 else i % 2 for i in rows], pa.int64()),
            }
        )
        pq.write_table(table, folder / f"part-{part}.parquet", row_group_size=500)
    (folder / "part-9.parquet").write_bytes(b"PAR1 this is not parquet")
    convert_with("beam", folder, tmp_path / "beam", "parquet", label_key="label")
    converted = convert_with("spark", folder, tmp_path / "spark", "parquet", label_key="label")
    reasons = converted["quarantined_by_reason"]
    assert reasons == {"null in a list": 7, "missing value": 4, "unreadable Parquet file": 1}
    assert_same_conversion(tmp_path / "beam", tmp_path / "spark")


def test_hive_folders_of_gzipped_semicolon_csv_are_converted_as_beam_converts_them(spark, tmp_path):
    """Compressed files are one unit each, streamed; the Hive key is a column on both."""
    import gzip

    lake = tmp_path / "lake"
    for day in (1, 2):
        plain = write_csv(tmp_path / f"plain-{day}", rows=1500, seed=day)
        text = (plain / "data.csv").read_text().replace(",", ";")
        (lake / f"day={day}").mkdir(parents=True)
        (lake / f"day={day}" / "part-0.csv.gz").write_bytes(gzip.compress(text.encode()))
    (lake / "_SUCCESS").write_text("")
    options = dict(label_key="label", block_bytes=16 * 1024)
    convert_with("beam", lake, tmp_path / "beam", None, **options)
    converted = convert_with("spark", lake, tmp_path / "spark", None, **options)
    assert converted["records_written"] + converted["quarantined"] == 3000 + 8
    assert converted["quarantined"] == 8  # the planted bad rows, by file and line
    assert_same_conversion(tmp_path / "beam", tmp_path / "spark")
    lines = {(Path(r["source"]).parent.name, r["line"]) for r in quarantined(tmp_path / "spark")}
    assert len(lines) == 8 and {folder for folder, _ in lines} == {"day=1", "day=2"}


def test_images_are_converted_as_beam_converts_them(spark, tmp_path, monkeypatch):
    labels = write_digit_images(tmp_path / "images", per_class=60)
    # A relative folder, as the user gave it: the executors' working directory is not this one.
    monkeypatch.chdir(tmp_path)
    convert_with("beam", Path("images"), tmp_path / "beam", "images")
    converted = convert_with("spark", Path("images"), tmp_path / "spark", "images")
    assert converted["records_written"] == len(labels)
    assert converted["quarantined"] >= 3
    assert all(r["reason"].startswith("not an image") for r in quarantined(tmp_path / "spark"))
    assert converted["skipped_files"] == {"count": 1, "first": [f"0/{STRAY_FILE}"]}
    assert_same_conversion(tmp_path / "beam", tmp_path / "spark")


def test_jpegs_damaged_in_the_middle_are_quarantined_on_spark_as_on_beam(spark, tmp_path):
    decodes = write_corrupt_photos(tmp_path / "photos")
    rejected = {name for name, ok in decodes.items() if not ok}
    assert 0 < len(rejected) < len(decodes)
    convert_with("beam", tmp_path / "photos", tmp_path / "beam", "images")
    converted = convert_with("spark", tmp_path / "photos", tmp_path / "spark", "images")
    assert {r["content"] for r in quarantined(tmp_path / "spark")} == rejected
    assert converted["records_written"] == len(decodes) - len(rejected)
    assert_same_conversion(tmp_path / "beam", tmp_path / "spark")


def test_without_java_the_command_names_the_package_to_install(tmp_path):
    source = write_csv(tmp_path / "csv", rows=50, bad_rows=[])
    done = subprocess.run(
        [sys.executable, "-m", "tfrecord_pipelines", "convert", str(source), str(tmp_path / "out"),
         "--engine", "spark"],
        capture_output=True,
        text=True,
        env={"PATH": "/nonexistent", "JAVA_HOME": str(tmp_path / "no-java"),
             "TF_USE_LEGACY_KERAS": "1"},
    )  # fmt: skip
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert "apt-get install openjdk-17-jre-headless" in line
    assert not (tmp_path / "out").exists()


def test_a_bad_spark_setting_is_refused_before_anything_runs(tmp_path):
    source = write_csv(tmp_path / "csv", rows=50, bad_rows=[])
    done = subprocess.run(
        [sys.executable, "-m", "tfrecord_pipelines", "convert", str(source), str(tmp_path / "out"),
         "--engine", "spark", "--spark-conf", "executor.memory=4g"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode != 0
    assert "--spark-conf 'executor.memory=4g': give key=value with a Spark setting" in done.stderr
    assert not (tmp_path / "out").exists()


def test_sharded_example_gen_on_spark_in_a_local_dag_run(spark, tmp_path):
    import tensorflow_data_validation as tfdv
    from tfx.orchestration import metadata
    from tfx.orchestration import pipeline as tfx_pipeline
    from tfx.orchestration.local.local_dag_runner import LocalDagRunner

    from tfrecord_pipelines.components.example_gen.component import ShardedExampleGen

    source = write_csv(tmp_path / "csv", rows=3000)
    component = ShardedExampleGen(
        str(source),
        ExampleGenSettings(
            sharding=SHARDING,
            label_key="label",
            max_bad_fraction=0.5,
            engine="spark",
            spark=SparkOptions(master=SPARK_MASTER),
        ),
    )
    LocalDagRunner().run(
        tfx_pipeline.Pipeline(
            pipeline_name="spark-example-gen",
            pipeline_root=str(tmp_path / "root"),
            components=[component],
            metadata_connection_config=metadata.sqlite_metadata_connection_config(
                str(tmp_path / "metadata.db")
            ),
        )
    )
    (examples,) = (tmp_path / "root" / "ShardedExampleGen" / "examples").iterdir()
    (quarantine,) = (tmp_path / "root" / "ShardedExampleGen" / "quarantine").iterdir()
    # Spark cannot run TFDV in its tasks: the shards are described once written.
    (statistics,) = (tmp_path / "root" / "ShardedExampleGen" / "statistics").iterdir()
    plan = json.loads((examples / "shard_plan.json").read_text())
    for split in ("train", "eval"):
        described = tfdv.load_stats_binary(str(statistics / f"Split-{split}" / "FeatureStats.pb"))
        assert described.datasets[0].num_examples == plan["splits"][split]["records"]
    convert_with("beam", source, tmp_path / "beam", "csv", label_key="label")
    # The component's layout: quarantine/ is its own artifact, not inside examples/.
    (examples / "quarantine").symlink_to(quarantine)
    assert_same_conversion(tmp_path / "beam", examples)


def test_the_python_workers_share_one_daemon_that_imported_tensorflow(spark, tmp_path):
    import psutil

    write_digit_images(tmp_path / "images", per_class=20)
    convert_with("spark", tmp_path / "images", tmp_path / "spark", "images")
    jvm = next(p for p in psutil.Process().children() if p.name() == "java")
    # The JVM outlives a stopped session in this process: daemons of earlier
    # modules' sessions were killed but may be left unreaped (zombies).
    live = [p for p in jvm.children() if p.status() != psutil.STATUS_ZOMBIE]
    daemons = [p for p in live if "worker_daemon" in " ".join(p.cmdline())]
    # One daemon: every stage's tasks ran in one pool of workers, each a fork of it.
    assert len(daemons) == 1
    workers = daemons[0].children()
    assert 1 <= len(workers) <= 2  # local[2]: a worker per task slot
    # The daemon imported TensorFlow before forking: its workers share those pages.
    assert any("_pywrap_tensorflow" in m.path for m in daemons[0].memory_maps())
