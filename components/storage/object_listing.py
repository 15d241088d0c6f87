"""Every object under a bucket's folder, from one flat listing of the store.

TensorFlow's file systems list a bucket one folder level at a time, and ask
again for each name whether it is a folder. What ``--data`` names in a bucket
(a Hive folder of day= and region= folders, a folder of span folders) is then
a request per folder and per name. A store's own listing API returns every
object under a prefix, with its size, a thousand to a page: Cloud Storage's
``objects.list`` through google-cloud-storage, S3's ``ListObjectsV2`` through
boto3, each reaching the endpoint the ecosystem's variables name
(``STORAGE_EMULATOR_HOST``, ``AWS_ENDPOINT_URL``) with the credentials it
finds itself. ``filesystem.one_listing`` answers its look-ups under the
folder from that listing.
"""

from __future__ import annotations

import dataclasses
import glob as _glob
from collections.abc import Iterable

_SCHEMES = ("gs", "s3")


@dataclasses.dataclass(frozen=True)
class ObjectListing:
    """The files and folders under ``root`` (a URI without its trailing slash), as one
    listing of the store found them.

    Attributes:
      root: the folder listed.
      sizes: each file's URI and its bytes.
      children: each folder's URI (``root`` included) and the names in it.
    """

    root: str
    sizes: dict[str, int]
    children: dict[str, frozenset[str]]

    def covers(self, path: str) -> bool:
        """Whether the listing answers for ``path``: anything under the folder listed, and
        the folder itself when objects are under it (else ``root`` may name a file)."""
        path = path.rstrip("/")
        return path.startswith(self.root + "/") or (path == self.root and path in self.children)

    def isdir(self, path: str) -> bool:
        """Whether ``path`` is a folder: a prefix of an object's name."""
        return path.rstrip("/") in self.children

    def exists(self, path: str) -> bool:
        """Whether ``path`` is a file or a folder."""
        return path in self.sizes or self.isdir(path)

    def listdir(self, path: str) -> list[str]:
        """The names in folder ``path``, sorted."""
        names = self.children.get(path.rstrip("/"))
        if names is None:
            raise FileNotFoundError(f"No such folder: {path}")
        return sorted(names)

    def walk_files(self, folder: str) -> list[str]:
        """Every file under ``folder``, sorted."""
        prefix = folder.rstrip("/") + "/"
        return sorted(uri for uri in self.sizes if uri.startswith(prefix))


def listed_folder(path: str) -> str | None:
    """The folder of a bucket URI that a listing for ``path`` takes: ``path`` up to its
    first level with a wildcard or a ``{SPAN}``-like placeholder (all of it without one);
    None for a path that is not in a store with a flat listing."""
    scheme, _, rest = path.partition("://")
    if scheme not in _SCHEMES or not rest.strip("/"):
        return None
    fixed = []
    for level in rest.rstrip("/").split("/"):
        if _glob.has_magic(level) or "{" in level:
            break
        fixed.append(level)
    return f"{scheme}://{'/'.join(fixed)}"


def list_folder(root: str) -> ObjectListing:
    """Lists every object under ``root`` (``gs://`` or ``s3://``) through the store's client.

    Raises:
      Exception: whatever the client raises (no credentials, no such bucket, the
        client not installed); the caller falls back to TensorFlow's file system.
    """
    scheme, _, rest = root.partition("://")
    bucket, _, folder = rest.partition("/")
    prefix = f"{folder.strip('/')}/" if folder.strip("/") else ""
    names = _gcs_objects(bucket, prefix) if scheme == "gs" else _s3_objects(bucket, prefix)
    return listing_of(root, ((f"{scheme}://{bucket}/{name}", size) for name, size in names))


def listing_of(root: str, objects: Iterable[tuple[str, int]]) -> ObjectListing:
    """The files and folders under ``root`` that ``objects`` (each object's URI and bytes, a
    URI ending in "/" a folder's placeholder) make."""
    root = root.rstrip("/")
    sizes: dict[str, int] = {}
    children: dict[str, set[str]] = {}
    for uri, size in objects:
        if uri.endswith("/"):
            uri = uri.rstrip("/")
            children.setdefault(uri, set())
        else:
            sizes[uri] = size
        while uri.startswith(root + "/"):
            parent, _, child = uri.rpartition("/")
            children.setdefault(parent, set()).add(child)
            uri = parent
    return ObjectListing(
        root=root, sizes=sizes, children={k: frozenset(v) for k, v in children.items()}
    )


def _gcs_client():
    from google.cloud import storage

    from tfrecord_pipelines.components.storage.emulators import gcs_emulator

    endpoint = gcs_emulator()
    if endpoint is None:
        return storage.Client()
    from google.auth.credentials import AnonymousCredentials

    # An emulator takes no credentials, and its URL, scheme included, as the client's endpoint.
    return storage.Client(
        project="emulator",
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": endpoint},
    )


def _gcs_objects(bucket: str, prefix: str):
    client = _gcs_client()
    for blob in client.list_blobs(bucket, prefix=prefix, fields="items(name,size),nextPageToken"):
        yield blob.name, int(blob.size or 0)


def _s3_objects(bucket: str, prefix: str):
    import boto3

    pages = (
        boto3.client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    )
    for page in pages:
        for item in page.get("Contents", []):
            yield item["Key"], int(item["Size"])
