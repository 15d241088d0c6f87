"""The object stores as KFP's launcher reaches them, for the cluster-like harness
(``cluster_runs``): gs:// through fake-gcs-server, minio:// and s3:// through moto.

DownloadBlob and UploadBlob as ``objectstore/object_store.go`` does them (file:line at
each), over the stores' own clients.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from launcher_rules import LauncherError, downloaded_path
from launcher_sessions import S3Access


@contextlib.contextmanager
def _store_answers(key: str):
    """A store client's refusal as the error gocloud's blob package returns, which the
    launcher wraps in its own words (launcher_v2.go:847-849, 997-999)."""
    from botocore.exceptions import BotoCoreError, ClientError
    from google.api_core.exceptions import GoogleAPICallError

    try:
        yield
    except BotoCoreError as e:
        raise LauncherError(f"blob (key {key!r}): {e}") from None
    except ClientError as e:
        error = e.response.get("Error", {})
        raise LauncherError(
            f"blob (key {key!r}): {error.get('Code')}: {error.get('Message')}"
        ) from None
    except GoogleAPICallError as e:
        raise LauncherError(f"blob (key {key!r}): {e.code}: {e.message}") from None


class ObjectStores:
    """The pipeline root's store and any other store an artifact's URI names, as the launcher
    reaches them: gs:// through fake-gcs-server, minio:// and s3:// through moto."""

    def __init__(
        self,
        gcs_url: str | None = None,
        s3_url: str | None = None,
        s3_keys: tuple[str, str] = ("testing", "testing"),
    ) -> None:
        # s3_keys: the launcher's own (its kfp-launcher config's or mlpipeline-minio-artifact's).
        self._gcs_url, self._s3_url, self._s3_keys = gcs_url, s3_url, s3_keys

    @property
    def s3_url(self) -> str | None:
        """The S3 server's URL."""
        return self._s3_url

    @property
    def s3_keys(self) -> tuple[str, str]:
        """The keys the S3 server takes."""
        return self._s3_keys

    def _s3(self, access: S3Access | None = None):
        """A client of the S3 store ``access`` names (the launcher's session for a bucket);
        None: the pipeline root's store with the launcher's own keys.

        Raises:
          LauncherError: ``access`` holds no keys, as the AWS SDK finds none.
        """
        import boto3

        url, keys = (self._s3_url, self._s3_keys) if access is None else (access.url, access.keys)
        if keys is None:
            raise LauncherError(
                "failed to refresh cached credentials, no EC2 IMDS role found (the pod has no "
                "AWS_ACCESS_KEY_ID)"
            )
        # A session of its own: tasks run at once (argo_schedule), and boto3's default
        # session is not safe to share between threads.
        return boto3.session.Session().client(
            "s3", endpoint_url=url, aws_access_key_id=keys[0],
            aws_secret_access_key=keys[1], region_name="us-east-1",
        )  # fmt: skip

    def _gcs_bucket(self, name: str):
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        client = storage.Client(
            project="test", credentials=AnonymousCredentials(),
            client_options={"api_endpoint": self._gcs_url},
        )  # fmt: skip
        return client.bucket(name)

    def download(
        self, uri: str, local: Path, access: S3Access | None = None
    ) -> list[tuple[Path, int]]:
        """Every object under the URI's key to ``local`` (DownloadBlob); returns each file
        written and its bytes.

        Raises:
          LauncherError: the store's refusal, or a key with a '..' component.
        """
        scheme, _, rest = uri.partition("://")
        bucket, _, key = rest.partition("/")
        written = []
        with _store_answers(key):
            objects = list(self._objects(scheme, bucket, key, access))
        for name, read in objects:
            relative = downloaded_path(key, name)
            if relative is None:
                continue
            target = local if relative == "." else local / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with _store_answers(name):
                data = read()
            target.write_bytes(data)
            written.append((target, len(data)))
        return written

    def _objects(self, scheme: str, bucket: str, prefix: str, access: S3Access | None = None):
        if scheme == "gs":
            for blob in self._gcs_bucket(bucket).list_blobs(prefix=prefix):
                yield blob.name, blob.download_as_bytes
            return
        client = self._s3(access)
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                yield (
                    item["Key"],
                    lambda k=item["Key"]: client.get_object(Bucket=bucket, Key=k)["Body"].read(),
                )

    def read_text(self, uri: str) -> str:
        """One object's text."""
        scheme, _, rest = uri.partition("://")
        bucket, _, key = rest.partition("/")
        if scheme == "gs":
            return self._gcs_bucket(bucket).blob(key).download_as_text()
        return self._s3().get_object(Bucket=bucket, Key=key)["Body"].read().decode()

    def names(self, uri: str) -> list[str]:
        """The keys of the objects under a URI, relative to it, sorted."""
        scheme, _, rest = uri.partition("://")
        bucket, _, key = rest.partition("/")
        prefix = key.rstrip("/") + "/"
        return sorted(n[len(prefix) :] for n, _ in self._objects(scheme, bucket, prefix))

    def upload(self, local: Path, uri: str, access: S3Access | None = None) -> None:
        """A local file, or a folder file by file, to the URI (UploadBlob).

        Raises:
          FileNotFoundError: nothing at ``local`` (UploadBlob's os.Stat, object_store.go:111-115).
          LauncherError: the store's refusal.
        """
        if not local.exists():
            raise FileNotFoundError(f"stat {local}: no such file or directory")
        scheme, _, rest = uri.partition("://")
        bucket, _, key = rest.partition("/")
        paths = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
        for path in paths:
            name = key if path == local else f"{key}/{path.relative_to(local).as_posix()}"
            with _store_answers(name):
                if scheme == "gs":
                    self._gcs_bucket(bucket).blob(name).upload_from_filename(str(path))
                else:
                    self._s3(access).put_object(Bucket=bucket, Key=name, Body=path.read_bytes())
