"""KFP's launcher's local copies of artifacts, and the URIs they are copies of.

The launcher downloads a task's input artifacts to, and uploads its outputs from,
a local path named after the URI (kubeflow/pipelines backend/src/v2/component/
launcher_v2.go, ``LocalPathForURI``): ``minio://b/k`` is ``/minio/b/k``,
``s3://b/k`` is ``/s3/b/k``, ``gs://b/k`` is ``/gcs/b/k``. A record that outlives
the pod (the daily state) names the URI, never the copy; an artifact the
launcher did not stage (an earlier run's, which a reference artifact stands for)
is read from its store.
"""

from __future__ import annotations

# Remote URI prefix -> the launcher's local path prefix. A task reads its staged inputs and
# writes its outputs there, as the launcher means them, gs:// as much as minio:// and s3://:
# the launcher uploads the local path of an output's URI after the command
# (launcher_v2.go:811-824), so anything written to the URI itself is overwritten or missed.
LOCAL_PREFIXES = {"gs://": "/gcs/", "minio://": "/minio/", "s3://": "/s3/"}
# The prefixes TensorFlow reaches only through tensorflow-io's S3 plugin.
_S3_PREFIXES = ("minio://", "s3://")
# MinIO speaks S3: what minio:// names, s3:// reaches through the S3 endpoint.
MINIO_SCHEME, _S3 = "minio://", "s3://"
# The URIs this process reads earlier runs' artifacts by (``unstaged_uri``'s), and the ones
# they stand for: the entry point and the executor share the process, and a record or a
# comparison names the artifact as KFP does.
_READ_AS: dict[str, str] = {}


def local_copy(uri: str) -> str | None:
    """The launcher's local copy of a gs://, s3:// or minio:// URI; None for any other."""
    for remote, local in LOCAL_PREFIXES.items():
        if uri.startswith(remote):
            return local + uri[len(remote) :]
    return None


def remote_uri(path: str) -> str:
    """The URI a launcher's local copy, or an artifact read through S3 in its place, stands
    for; any other path or URI unchanged."""
    for read, uri in _READ_AS.items():
        if path == read or path.startswith(read.rstrip("/") + "/"):
            return uri + path[len(read) :]
    for remote, local in LOCAL_PREFIXES.items():
        if path.startswith(local):
            return remote + path[len(local) :]
    return path


def unstaged_uri(uri: str, s3_endpoint: str | None) -> str:
    """Where a task reads an artifact the launcher did not stage: gs:// as it is; minio://
    and s3:// through the pipeline root's store's S3 endpoint, as s3://; s3:// without one
    with the pod's own S3 settings (in AWS, its role).

    Raises:
      ValueError: a minio:// URI and no S3 endpoint, in one line.
    """
    uri = remote_uri(uri)
    if not uri.startswith(_S3_PREFIXES):
        return uri
    if not s3_endpoint and uri.startswith(_S3):
        return uri
    if not s3_endpoint:
        raise ValueError(
            f"{uri} is an earlier run's artifact, which KFP's launcher does not stage, and "
            "this pod has no S3 endpoint to read it from: compile with --artifact-secret and "
            "--artifact-endpoint (the pipeline root's store and its credentials)"
        )
    if not uri.startswith(MINIO_SCHEME):
        return uri
    read = _S3 + uri[len(MINIO_SCHEME) :]
    _READ_AS[read] = uri
    return read
