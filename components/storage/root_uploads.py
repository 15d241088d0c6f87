"""Files moved into the pipeline root's store through an S3 client of its own, beside the
pod's S3 settings.

TensorFlow's S3 file system reaches one endpoint with one key per process
(``object_stores.read_artifact_store``). A task that reads its own ``s3://`` data
from another store (a namespace's PodDefault: AWS S3 beside KFP's MinIO) keeps
TensorFlow on that store, and what it writes for the root's store lands on the
pod's disk first; this module then puts it in the root's store with boto3, given
the root's endpoint and keys (``object_stores.ARTIFACT_ENDPOINT``, ``ARTIFACT_KEYS``),
as the launcher's session for the root would.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tfrecord_pipelines.components.storage import object_stores

# Files uploaded at once (shards of 100-200 MB: the network, not the CPU, is the limit).
_AT_ONCE = 4


def _client():
    import boto3

    access, secret = (os.environ.get(name) or None for name in object_stores.ARTIFACT_KEYS)
    # A session of its own: the AWS SDKs' variables are the pod's other store's.
    return boto3.session.Session().client(
        "s3",
        endpoint_url=object_stores.artifact_store_endpoint(),
        aws_access_key_id=access,
        aws_secret_access_key=secret,
    )


def upload_folder(folder: str, uri: str) -> tuple[int, int]:
    """Uploads every file under the local ``folder`` to the same relative names under the
    ``s3://`` ``uri``, in the pipeline root's store: a few files at once, each in parts
    (boto3's transfers). Returns the number of files and their bytes."""
    bucket, _, prefix = uri.removeprefix(object_stores.S3_SCHEME).partition("/")
    client = _client()  # boto3's clients are safe to share between threads.
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file())

    def upload(path: Path) -> None:
        key = f"{prefix.rstrip('/')}/{path.relative_to(folder).as_posix()}"
        client.upload_file(str(path), bucket, key)

    with ThreadPoolExecutor(_AT_ONCE) as pool:
        list(pool.map(upload, files))
    return len(files), sum(p.stat().st_size for p in files)
