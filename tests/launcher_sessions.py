"""The sessions KFP's launcher opens buckets with, for the cluster-like harness
(``cluster_runs``): which store a bucket is reached at, with which keys.

Read in kubeflow/pipelines at 7b70c7b95f68, ``backend/src/v2`` (file:line at each rule):

- The run's session for its pipeline root (``config/env.go:118-160``,
  GetStoreSessionInfo, recorded as every output's ``store_session_info``): the
  ``kfp-launcher`` ConfigMap's ``providers`` entry for the root's scheme
  (``config/s3.go`` ProvideSessionInfo: its ``default`` endpoint, region,
  ``disableSSL`` and credentials, a Secret's two keys or ``fromEnv``); for
  ``minio://`` without one, the release's built-in session (``config/env.go:177-193``):
  the release's endpoint (``RELEASE_ENDPOINTS``, ``objectstore/config.go`` at each tag)
  and the ``mlpipeline-minio-artifact`` Secret's ``accesskey`` and ``secretkey``; for
  ``s3://`` and ``gs://`` without one, ``fromEnv``.
- Which bucket gets it (``component/launcher_v2.go:1036-1038``): the root's, and any
  other artifact of the same scheme and bucket; a bucket of any other store opens with no
  session.
- A session made a client (``objectstore/object_store.go:42-108, 297-375``): not
  ``fromEnv``, the Secret's keys, read from the run's namespace (a missing Secret or key
  fails: "failed to get Bucket credentials from secret ..."), and the endpoint (``http``
  with ``disableSSL``; AWS's own for ``s3.amazonaws.com``); ``fromEnv``, or no session,
  the pod's environment: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and
  ``AWS_ENDPOINT_URL``, AWS's endpoint without one.

The cluster's network is ``Cluster.services``: a service's ``host:port`` (AWS's
``s3.amazonaws.com``) to a server on the loopback. A name it does not hold fails as DNS
fails. ``gs://`` buckets are fake-gcs-server's, which takes no keys: sessions are not
imitated there. Not imitated: the providers' ``Overrides`` (per bucket and prefix).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

import yaml
from launcher_rules import BucketConfig, LauncherError

# The launcher's built-in endpoint for a minio:// root, by release (objectstore/config.go at
# tags 2.14.0, 2.15.0 and 2.16.0).
RELEASE_ENDPOINTS = {
    "2.14": "minio-service.kubeflow:9000",
    "2.15": "minio-service.kubeflow:9000",
    "2.16": "seaweedfs.kubeflow:9000",
}
DEFAULT_SECRET = "mlpipeline-minio-artifact"  # config/env.go:41-44
AWS = "s3.amazonaws.com"


@dataclasses.dataclass(frozen=True)
class S3Access:
    """How one bucket is reached: the server's URL, and the keys (None: no credentials)."""

    url: str
    keys: tuple[str, str] | None


def root_session(pipeline_root: str, launcher_config: Mapping | None, release: str) -> dict:
    """GetStoreSessionInfo (config/env.go:118-160): the session of the run's pipeline root.

    Raises:
      LauncherError: a provider with neither credentials nor ``fromEnv``, in its words.
    """
    scheme = pipeline_root.split("://", 1)[0]
    providers = yaml.safe_load((launcher_config or {}).get("providers") or "{}") or {}
    provider = providers.get(scheme) or {}
    default = provider.get("default")
    # s3.go: no provider at all (neither default nor Overrides) is the built-in session; one
    # with Overrides alone lacks the default's credentials.
    if scheme == "gs" or (default is None and not provider.get("Overrides")):
        if scheme == "minio":  # getDefaultMinioSessionInfo
            params = {
                "region": "minio", "endpoint": RELEASE_ENDPOINTS[release], "disableSSL": "true",
                "fromEnv": "false", "maxRetries": "5", "secretName": DEFAULT_SECRET,
                "accessKeyKey": "accesskey", "secretKeyKey": "secretkey",
            }  # fmt: skip
            return {"Provider": "minio", "Params": params}
        return {"Provider": scheme, "Params": {"fromEnv": "true"}}
    credentials = (default or {}).get("credentials")
    if credentials is None:
        raise LauncherError("invalid provider config: missing default credentials")
    params = {
        "endpoint": default.get("endpoint", ""),
        "region": default.get("region", ""),
        "disableSSL": str(bool(default.get("disableSSL", False))).lower(),
        "forcePathStyle": str(bool(default.get("forcePathStyle", True))).lower(),
        "fromEnv": str(bool(credentials.get("fromEnv", False))).lower(),
    }
    if params["fromEnv"] == "false":
        ref = credentials.get("secretRef") or {}
        params.update(secretName=ref.get("secretName", ""),
                      accessKeyKey=ref.get("accessKeyKey", ""),
                      secretKeyKey=ref.get("secretKeyKey", ""))  # fmt: skip
    return {"Provider": scheme, "Params": params}


def session_for(uri: str, root: BucketConfig, session: dict) -> dict | None:
    """The session a bucket is opened with (launcher_v2.go:1026-1038): the root's for the
    root's bucket, else None."""
    config = BucketConfig.of_artifact(uri)
    return session if (config.scheme, config.bucket) == (root.scheme, root.bucket) else None


def s3_access(
    session: dict | None,
    secrets: Mapping[str, Mapping[str, str]],
    pod_environment: Mapping[str, str],
    services: Mapping[str, str],
) -> S3Access:
    """The server and keys an S3 or MinIO bucket is reached at under ``session``.

    Raises:
      LauncherError: a missing Secret or key, a store name the cluster cannot resolve.
    """
    params = (session or {}).get("Params", {})
    if session is None or params.get("fromEnv") == "true":
        keys = tuple(pod_environment.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"))
        url = pod_environment.get("AWS_ENDPOINT_URL") or _resolve(AWS, services)
        return S3Access(url, keys if all(keys) else None)
    name = params.get("secretName", "")
    secret = secrets.get(name)
    where = f"failed to get Bucket credentials from secret name={name!r}"
    if secret is None:
        raise LauncherError(f'{where}: secrets "{name}" not found')
    keys = (secret.get(params.get("accessKeyKey", "")), secret.get(params.get("secretKeyKey", "")))
    if not all(keys):
        raise LauncherError(f"{where}: the Secret lacks the access key's or the secret key's entry")
    endpoint = params.get("endpoint", "")
    host = endpoint.split("://", 1)[-1]
    return S3Access(_resolve(AWS if host.startswith(AWS) or not host else host, services), keys)


def _resolve(host: str, services: Mapping[str, str]) -> str:
    if host not in services:
        raise LauncherError(f"dial tcp: lookup {host.split(':')[0]}: no such host")
    return services[host]


def as_recorded(session: dict) -> str:
    """The session as the launcher records it on an output (``store_session_info``)."""
    return json.dumps(session)
