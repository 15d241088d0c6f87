"""A store's refusal ends an entry point with one line naming what it refused and the store's
answer (issue 89, finding 6), on real servers on 127.0.0.1: moto's S3 and fake-gcs-server.
Every pod's entry point runs its body through ``object_stores.run_entry_point``, as the
script below does; any other error keeps its traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from object_store_servers import S3_TEST_KEYS, gcs_server, s3_server

# ``python -c ENTRY KIND URI``: an entry point whose body asks a store for a bucket's objects.
ENTRY = """
import sys
from tfrecord_pipelines.components.storage import object_stores

def body():
    kind, bucket = sys.argv[1], sys.argv[2]
    if kind == "s3":
        import boto3
        boto3.client("s3").list_objects_v2(Bucket=bucket)
    elif kind == "gs":
        from tfrecord_pipelines.components.storage.object_listing import list_folder
        list_folder(f"gs://{bucket}/data")
    else:
        raise RuntimeError("not a store's error")

object_stores.run_entry_point(sys.argv, body)
"""


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    buckets = tmp_path_factory.mktemp("buckets")
    (buckets / "lake").mkdir()
    (buckets / "lake" / "README").write_text("a bucket\n")
    with s3_server(buckets) as s3_url, gcs_server(buckets) as gcs_url:
        yield {"AWS_ENDPOINT_URL": s3_url, **S3_TEST_KEYS, "STORAGE_EMULATOR_HOST": gcs_url}


def _run(servers: dict, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "STORAGE_EMULATOR"))}
    env.update(servers)
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "kind, answer",
    [
        (
            "s3",
            "error: s3://nowhere refused ListObjectsV2: NoSuchBucket: The specified bucket "
            "does not exist",
        ),
        ("gs", "error: gs://nowhere refused GET: 404: Not Found"),
    ],
)
def test_a_missing_bucket_is_one_line_naming_it(servers, kind, answer):
    done = _run(servers, kind, "nowhere")
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    [line] = done.stderr.strip().splitlines()[-1:]
    assert line.startswith(answer), line
    assert "nowhere" in line, line


def test_any_other_error_keeps_its_traceback(servers):
    done = _run(servers, "other", "lake")
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "RuntimeError: not a store's error" in done.stderr
