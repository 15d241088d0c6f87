"""Data in a GCS bucket, on a real GCS server (fake-gcs-server on 127.0.0.1), reached through
the ecosystem's variable alone (STORAGE_EMULATOR_HOST): the command line's checks, convert
and a whole local run read the bucket's objects through TensorFlow's modular GCS plugin."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from object_store_servers import READ_SHARDS, gcs_server, is_listing, logged_requests

from conftest import REPO_ROOT

PENGUINS = REPO_ROOT / "data" / "penguins" / "penguins.csv"
# Each test starts the command line, TensorFlow and all, against the server.
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Bucket ``lake``: penguins as gzipped semicolon CSV, as Hive-partitioned Parquet, and
    as ShardedExampleGen's shards (converted here, then served from the bucket); yields the
    server's URL and its log of requests."""
    root = tmp_path_factory.mktemp("buckets")
    converted = _cli("", "convert", str(PENGUINS), str(root / "lake" / "shards"),
                     "--label", "species")  # fmt: skip
    assert converted.returncode == 0, converted.stderr[-3000:]
    text = PENGUINS.read_text()
    exports = root / "lake" / "exports"
    exports.mkdir(parents=True)
    (exports / "penguins.csv.gz").write_bytes(gzip.compress(text.replace(",", ";").encode()))
    rows = [line.split(",") for line in text.splitlines()]
    table = pa.table({name: [r[i] for r in rows[1:]] for i, name in enumerate(rows[0])})
    pq.write_to_dataset(table, root / "lake" / "parquet", partition_cols=["island"])
    log = root.parent / "requests.log"
    with gcs_server(root, request_log=log) as url:
        yield url, log


@pytest.fixture(scope="module")
def bucket(served) -> str:
    """The server's URL."""
    return served[0]


def _cli(url: str, *args: str) -> subprocess.CompletedProcess:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GCS_", "CLOUD_STORAGE_", "TF_USE_MODULAR"))
    }
    env.update(TF_USE_LEGACY_KERAS="1")
    if url:
        env["STORAGE_EMULATOR_HOST"] = url
    command = args if args[0] == "-c" else ("-m", "tfrecord_pipelines", *args)
    return subprocess.run(
        [sys.executable, *command],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def test_convert_reads_a_glob_of_gzipped_objects(bucket, tmp_path):
    done = _cli(bucket, "convert", "gs://lake/exports/*.csv.gz", str(tmp_path / "out"),
                "--label", "species")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Read 344 records: wrote 344, quarantined 0" in done.stdout


def test_a_bad_label_is_refused_after_reading_the_bucket_s_header(bucket, tmp_path):
    done = _cli(bucket, "convert", "gs://lake/parquet/", str(tmp_path / "out"), "--label", "x")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "error: Label column 'x' is not in the Parquet columns of gs://lake/parquet; columns "
        "are: species, bill_length_mm, bill_depth_mm, flipper_length_mm, body_mass_g, sex, "
        "year, island."
    )


def test_what_data_names_is_listed_once(served, tmp_path):
    """Resolving a Hive folder (its format, files, partition keys and columns) takes one
    listing of the bucket, not one per folder; each Parquet file's footer is still read."""
    url, log = served
    start = len(log.read_text().splitlines())
    done = _cli(url, "convert", "gs://lake/parquet/", str(tmp_path / "out"), "--label", "x")
    assert done.returncode == 2, done.stderr[-3000:]
    requests = logged_requests(log, start)
    listings = [path for _, path in requests if is_listing(path)]
    assert listings == ["/storage/v1/b/lake/o"]
    assert len(requests) > 1  # the footers' reads


def test_a_run_trains_on_a_hive_folder_in_the_bucket(bucket, tmp_path):
    done = _cli(bucket, "run", "--data", "gs://lake/parquet/", "--label", "species",
                "--output", str(tmp_path / "out"), "--train-steps", "20",
                "--min-accuracy", "0", "--name", "lake")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"pushed model: +\S+/serving_model/lake/\d+", done.stdout)
    assert re.search(r"quarantined: +0 input records", done.stdout)


def test_the_trainers_input_reads_shards_from_the_bucket(bucket):
    """make_dataset's parallel reads (interleave over the shards) and batch parsing, on
    gs:// shards; the feature spec from the project's own reader of the same objects."""
    done = _cli(bucket, "-c", READ_SHARDS, "gs://lake/shards/Split-train")
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["files"] > 1
    assert found["read"] == found["inspected"] == 229  # penguins' train split
    assert found["by_folder_wildcard"] == 229  # Split-tr*/*: a wildcard in a folder level


def test_convert_writes_into_the_bucket(bucket):
    # Beam's sinks (the quarantine's) rename their temporary files on gs:// in batch requests,
    # whose parts fake-gcs-server skips unless each names a Content-ID.
    done = _cli(bucket, "convert", "gs://lake/exports/*.csv.gz", "gs://lake/converted",
                "--label", "species")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    read = _cli(bucket, "-c", READ_SHARDS, "gs://lake/converted/Split-train")
    assert read.returncode == 0, read.stderr[-3000:]
    assert json.loads(read.stdout.splitlines()[-1])["read"] > 0
