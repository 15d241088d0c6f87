"""Data, shards and the serving folder in S3, on a real S3 server (moto's, on 127.0.0.1),
reached through the AWS SDKs' own variables alone (AWS_ENDPOINT_URL, the keys, a region):
TensorFlow through tensorflow-io's S3 plugin, which every process ends without the plugin's
abort at exit (status 0, not 134)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import boto3
import pytest
from object_store_servers import READ_SHARDS, S3_TEST_KEYS, s3_server

from conftest import REPO_ROOT
from daily_spans import write_day

PENGUINS = REPO_ROOT / "data" / "penguins" / "penguins.csv"
# Each test starts the command line or a script, TensorFlow and all, against the server.
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Bucket ``lake``: two days of events (``events/day-N/``) and penguins converted to
    shards; bucket ``models`` for the serving folder."""
    root = tmp_path_factory.mktemp("buckets")
    for day in (1, 2):
        write_day(root / "lake" / "events" / f"day-{day}", seed=day)
    converted = _run({}, "-m", "tfrecord_pipelines", "convert", str(PENGUINS),
                     str(root / "lake" / "shards"), "--label", "species")  # fmt: skip
    assert converted.returncode == 0, converted.stderr[-3000:]
    (root / "models").mkdir()
    (root / "models" / "README").write_text("serving folders\n")
    with s3_server(root) as url:
        yield {"AWS_ENDPOINT_URL": url, **S3_TEST_KEYS}


def _run(server: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "S3_", "GCS_", "CLOUD_STORAGE_", "STORAGE_EMULATOR"))
    }
    env.update(server, TF_USE_LEGACY_KERAS="1")
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=900
    )


def _objects(server: dict[str, str], bucket: str, prefix: str) -> list[str]:
    client = boto3.client(
        "s3", endpoint_url=server["AWS_ENDPOINT_URL"],
        aws_access_key_id=server["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=server["AWS_SECRET_ACCESS_KEY"],
        region_name=server["AWS_DEFAULT_REGION"],
    )  # fmt: skip
    listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(item["Key"] for item in listed.get("Contents", []))


@pytest.fixture(scope="module")
def windowed_run(server, tmp_path_factory):
    """A local run over the window of days 1 and 2, read from the bucket."""
    output = tmp_path_factory.mktemp("run")
    done = _run(server, "-m", "tfrecord_pipelines", "run",
                "--data", "s3://lake/events/day-{SPAN}/", "--label", "label", "--window", "2",
                "--output", str(output), "--train-steps", "20", "--min-accuracy", "0",
                "--name", "events")  # fmt: skip
    return done


def test_a_windowed_run_reads_each_span_from_the_bucket(windowed_run):
    assert windowed_run.returncode == 0, windowed_run.stderr[-3000:]
    assert re.search(r"window: +2 span\(s\) \(1-2\)", windowed_run.stdout)
    assert re.search(r"drift: +none against span 1", windowed_run.stdout)
    assert re.search(r"pushed model: +\S+/serving_model/events/\d+", windowed_run.stdout)


_PUSH = """
import json, sys
from tfrecord_pipelines.components.storage import object_stores
object_stores.configure()
from tfx.types import standard_artifacts
from tfrecord_pipelines.components.pusher.executor import Executor

model, blessing = standard_artifacts.Model(), standard_artifacts.ModelBlessing()
model.uri, blessing.uri = sys.argv[1], sys.argv[2]
blessing.set_int_custom_property("blessed", 1)
inputs = {"model": [model], "model_blessing": [blessing]}
scratch = sys.argv[2]
pushed = standard_artifacts.PushedModel()
pushed.uri = scratch + "/pushed"
destination = {"filesystem": {"base_directory": "s3://models/serving"}}
Executor().Do(inputs, {"pushed_model": [pushed]}, {"push_destination": json.dumps(destination)})
print(json.dumps({"pushed": pushed.get_int_custom_property("pushed"),
                  "destination": pushed.get_string_custom_property("pushed_destination")}))
"""


def test_the_pusher_publishes_the_model_into_the_bucket(server, windowed_run, tmp_path):
    """The project's Pusher (staged copy, saved_model.pb last, then moved into place), into
    ``s3://models/serving``, with the windowed run's model."""
    assert windowed_run.returncode == 0, windowed_run.stderr[-3000:]
    model = re.search(r"trained model: +(\S+)", windowed_run.stdout).group(1)
    done = _run(server, "-c", _PUSH, model, str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    pushed = json.loads(done.stdout.strip().splitlines()[-1])
    assert pushed["pushed"] == 1
    version = pushed["destination"].removeprefix("s3://models/serving/")
    objects = _objects(server, "models", "serving/")
    assert f"serving/{version}/saved_model.pb" in objects
    assert any(name.startswith(f"serving/{version}/variables/") for name in objects)
    assert not [name for name in objects if "/.staged-" in name]


def test_the_trainers_input_reads_shards_from_the_bucket(server):
    """make_dataset's parallel reads and batch parsing over s3:// shards."""
    done = _run(server, "-c", READ_SHARDS, "s3://lake/shards/Split-train")
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["files"] > 1
    assert found["read"] == found["inspected"] == 229  # penguins' train split
    assert found["by_folder_wildcard"] == 229  # Split-tr*/*: a wildcard in a folder level


def test_a_missing_bucket_is_one_line(server, tmp_path):
    done = _run(server, "-m", "tfrecord_pipelines", "run", "--data", "s3://nowhere/events/",
                "--label", "label", "--output", str(tmp_path))  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "s3://nowhere/events" in done.stderr


_LIST_SPANS = """
import json, sys
from tfrecord_pipelines.components.storage import filesystem, object_listing
listing = object_listing.list_folder(sys.argv[1])
with filesystem.one_listing(sys.argv[1]):
    listed = filesystem.listdir(sys.argv[1])
print(json.dumps({"folders": listing.listdir(sys.argv[1]), "files": len(listing.sizes),
                  "listed": listed}))
"""


def test_a_bucket_folder_is_listed_in_one_pass(server):
    """S3's own listing (boto3, at AWS_ENDPOINT_URL) gives every object under the folder, and
    the look-ups inside one_listing answer from it."""
    done = _run(server, "-c", _LIST_SPANS, "s3://lake/events")
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["folders"] == found["listed"] == ["day-1", "day-2"]
    assert found["files"] == len(_objects(server, "lake", "events/"))


_BEAM_THROUGH_THE_ROOTS_STORE = """
import json, sys
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from tfrecord_pipelines.components.storage import object_stores

object_stores.read_artifact_store()
flags = object_stores.with_beam_s3_endpoint(["--runner=DirectRunner"])
with beam.Pipeline(options=PipelineOptions(flags)) as p:
    _ = (p | beam.Create([b"a", b"b", b"c"])
         | beam.io.WriteToTFRecord("s3://lake/kfp/.data/transformed/part", file_name_suffix=".gz"))
with beam.Pipeline(options=PipelineOptions(flags)) as p:
    _ = (p | beam.io.ReadFromTFRecord("s3://lake/kfp/.data/transformed/part*")
         | beam.combiners.Count.Globally()
         | beam.Map(lambda n: open(sys.argv[1], "w").write(json.dumps(n))))
"""


def test_beam_writes_and_reads_examples_in_the_roots_store_as_a_task_is_given_it(server, tmp_path):
    # Transform writes materialized examples into the pipeline root's store through Beam
    # (kubeflow/examples_in_store): Beam reaches s3:// through boto3, given the store's
    # endpoint as --s3_endpoint_url and its keys from the pod's scoped variables only.
    given = {
        "TFRECORD_PIPELINES_ARTIFACT_ENDPOINT": server["AWS_ENDPOINT_URL"],
        "TFRECORD_PIPELINES_ARTIFACT_ACCESS_KEY_ID": server["AWS_ACCESS_KEY_ID"],
        "TFRECORD_PIPELINES_ARTIFACT_SECRET_ACCESS_KEY": server["AWS_SECRET_ACCESS_KEY"],
    }
    counted = tmp_path / "count.json"
    done = _run(given, "-c", _BEAM_THROUGH_THE_ROOTS_STORE, str(counted))
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(counted.read_text()) == 3
    written = _objects(server, "lake", "kfp/.data/transformed/")
    assert [re.sub(r"-\d+-of-\d+", "", w) for w in written] == ["kfp/.data/transformed/part.gz"]
