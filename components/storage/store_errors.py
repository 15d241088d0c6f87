"""An object store's refusal as one line: what it refused, and its answer.

A task that cannot reach its store (a bucket that does not exist, keys the store
refuses, an endpoint nobody answers at) would otherwise fail with the client's
traceback: botocore's ``ClientError`` from boto3 or Beam's S3 file system,
google-cloud-storage's ``GoogleAPICallError``, TensorFlow's ``OpError`` from its
file systems. ``store_answer`` finds such an error in an exception's chain, Beam's
and TensorFlow's wrappers included, and words it as one line naming the bucket or
URI and the store's code and message. It never imports a client: an error of a
client the process did not import cannot be raised.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_URI = re.compile(r"\b(?:gs|s3|minio)://[^\s'\"),]+")
# The bucket in a Cloud Storage JSON API URL (``.../storage/v1/b/{bucket}/o...``).
_GCS_BUCKET = re.compile(r"/b/([^/?\s]+)")


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _is(error: BaseException, module: str, *names: str) -> bool:
    """Whether ``error`` is an instance of a class named ``names`` from ``module``'s package."""
    return any(
        kind.__name__ in names and kind.__module__.split(".")[0] == module
        for kind in type(error).__mro__
    )


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _botocore(error: BaseException) -> str | None:
    if _is(error, "botocore", "ClientError"):
        details = getattr(error, "response", {}).get("Error", {})
        bucket = details.get("BucketName")
        where = f"s3://{bucket}" if bucket else "S3"
        operation = getattr(error, "operation_name", "a request")
        return _one_line(
            f"{where} refused {operation}: {details.get('Code', '?')}: "
            f"{details.get('Message', error)}"
        )
    if _is(error, "botocore", "BotoCoreError"):
        return _one_line(f"S3: {error}")
    return None


def _google(error: BaseException) -> str | None:
    if not _is(error, "google", "GoogleAPICallError"):
        return None
    # The client's message: "GET {url}: {the store's reason}", the URL naming the bucket.
    request, _, reason = str(getattr(error, "message", error)).rpartition(": ")
    bucket = _GCS_BUCKET.search(request)
    where = f"gs://{bucket[1]}" if bucket else "Cloud Storage"
    method = request.split(" ", 1)[0] or "a request"
    return _one_line(f"{where} refused {method}: {getattr(error, 'code', '?')}: {reason}")


def _beam(error: BaseException) -> str | None:
    if _is(error, "apache_beam", "S3ClientError"):
        return _one_line(f"S3: {getattr(error, 'code', '?')}: {getattr(error, 'message', error)}")
    return None


def _tensorflow(error: BaseException) -> str | None:
    if _is(error, "tensorflow", "OpError") and _URI.search(str(error)):
        return _one_line(getattr(error, "message", error))
    return None


def store_answer(error: BaseException) -> str | None:
    """One line for an object store's refusal in ``error``'s chain; None if there is none."""
    for cause in _chain(error):
        for reader in (_botocore, _google, _beam, _tensorflow):
            line = reader(cause)
            if line:
                return line
    return None
