"""The object stores as KFP's launcher reaches them, for the cluster-like harness
(``cluster_runs``): gs:// through fake-gcs-server, minio:// and s3:// through moto.

DownloadBlob and UploadBlob as ``objectstore/object_store.go`` does them (file:line at
each), over the stores' own clients.
"""

from __future__ import annotations

from pathlib import Path

from launcher_rules import downloaded_path


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

    def _s3(self):
        import boto3

        return boto3.client(
            "s3", endpoint_url=self._s3_url, aws_access_key_id=self._s3_keys[0],
            aws_secret_access_key=self._s3_keys[1], region_name="us-east-1",
        )  # fmt: skip

    def _gcs_bucket(self, name: str):
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        client = storage.Client(
            project="test", credentials=AnonymousCredentials(),
            client_options={"api_endpoint": self._gcs_url},
        )  # fmt: skip
        return client.bucket(name)

    def download(self, uri: str, local: Path) -> list[tuple[Path, int]]:
        """Every object under the URI's key to ``local`` (DownloadBlob); returns each file
        written and its bytes."""
        scheme, _, rest = uri.partition("://")
        bucket, _, key = rest.partition("/")
        written = []
        for name, read in self._objects(scheme, bucket, key):
            relative = downloaded_path(key, name)
            if relative is None:
                continue
            target = local if relative == "." else local / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            data = read()
            target.write_bytes(data)
            written.append((target, len(data)))
        return written

    def _objects(self, scheme: str, bucket: str, prefix: str):
        if scheme == "gs":
            for blob in self._gcs_bucket(bucket).list_blobs(prefix=prefix):
                yield blob.name, blob.download_as_bytes
            return
        client = self._s3()
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

    def upload(self, local: Path, uri: str) -> None:
        """A local file, or a folder file by file, to the URI (UploadBlob)."""
        scheme, _, rest = uri.partition("://")
        bucket, _, key = rest.partition("/")
        paths = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
        for path in paths:
            name = key if path == local else f"{key}/{path.relative_to(local).as_posix()}"
            if scheme == "gs":
                self._gcs_bucket(bucket).blob(name).upload_from_filename(str(path))
            else:
                self._s3().upload_file(str(path), bucket, name)
