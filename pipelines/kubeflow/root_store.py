"""Where a task reaches the pipeline root's store when ``compile`` was given no endpoint: as
KFP's launcher in the same pod reaches it.

KFP's launcher opens a ``minio://`` or ``s3://`` pipeline root with the session that the
``kfp-launcher`` ConfigMap of the run's namespace gives its scheme (``providers``;
kubeflow/pipelines ``backend/src/v2/config/env.go`` GetStoreSessionInfo), else, for
``minio://``, its release's built-in endpoint (``objectstore/config.go``):
``minio-service.kubeflow:9000`` in 2.4-2.15, ``seaweedfs.kubeflow:9000`` from 2.16
(commit 5ef18b95dc), whose manifests no longer ship a ``minio-service``. No one literal
fits every release: 2.15's ``seaweedfs`` Service has no port 9000. The launcher
records the session it used in every output it uploads (``store_session_info``,
``metadata/client.go:1214-1274``), so a task reads, in order:

1. the endpoint ``compile --artifact-endpoint`` gave it (``ARTIFACT_ENDPOINT``);
2. the ``store_session_info`` of an input artifact in the root's bucket: the session a
   launcher of this run used;
3. the ConfigMap's provider for the root's scheme, through the in-cluster API with the
   pod's service account (the launcher's own, which may read it);
4. without one, the release's own default, told by the Service its manifests ship:
   ``minio-service.kubeflow`` (2.4-2.15, MinIO and SeaweedFS layouts alike), else
   ``seaweedfs.kubeflow`` (2.16 and later).

With none of these the task reaches no store itself: its examples go through the
launcher's copy, and it says so (``examples_in_store``).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence

from tfrecord_pipelines.components.storage.object_stores import ARTIFACT_ENDPOINT

# Each release's built-in endpoint of a minio:// root, newest last, by the Service that only
# its manifests ship (objectstore/config.go at 2.14.0, 2.15.0 and 2.16.0).
RELEASE_DEFAULTS = (
    ("minio-service.kubeflow", 9000),  # 2.4-2.15
    ("seaweedfs.kubeflow", 9000),  # 2.16 and later
)
CONFIG_MAP = "kfp-launcher"
_SESSION_KEY = "store_session_info"
_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def _url(params: Mapping[str, str]) -> str | None:
    """A session's endpoint as a URL (its ``disableSSL`` the scheme), or None."""
    endpoint = params.get("endpoint", "")
    if not endpoint or str(params.get("fromEnv", "false")).lower() == "true":
        return None
    if "://" in endpoint:
        return endpoint
    plain = str(params.get("disableSSL", "false")).lower() == "true"
    return f"{'http' if plain else 'https'}://{endpoint}"


def _artifacts(executor_input: Mapping, side: str) -> Iterator[Mapping]:
    for listed in executor_input.get(side, {}).get("artifacts", {}).values():
        yield from listed.get("artifacts", [])


def _root_bucket(executor_input: Mapping) -> tuple[str, str] | None:
    """The scheme and bucket of the run's outputs (under the pipeline root)."""
    for artifact in _artifacts(executor_input, "outputs"):
        scheme, sep, rest = artifact.get("uri", "").partition("://")
        if sep and scheme in ("minio", "s3"):
            return scheme, rest.split("/", 1)[0]
    return None


def from_inputs(executor_input: Mapping, root: tuple[str, str]) -> str | None:
    """The endpoint a launcher of this run recorded for the root's bucket, or None."""
    for artifact in _artifacts(executor_input, "inputs"):
        scheme, _, rest = artifact.get("uri", "").partition("://")
        if (scheme, rest.split("/", 1)[0]) != root:
            continue
        recorded = artifact.get("metadata", {}).get(_SESSION_KEY)
        try:
            session = json.loads(recorded) if isinstance(recorded, str) else None
        except ValueError:
            session = None
        if isinstance(session, dict) and isinstance(session.get("Params"), dict):
            return _url(session["Params"])
    return None


def from_config_map(data: Mapping[str, str], scheme: str) -> str | None:
    """The default endpoint the ConfigMap's ``providers`` give the root's scheme, or None."""
    import yaml

    providers = yaml.safe_load(data.get("providers") or "{}") or {}
    provider = providers.get(scheme) or {}
    default = provider.get("default") or {}
    params = {"endpoint": default.get("endpoint", "")}
    # config/s3.go (the minio provider's too): disableSSL false unless set.
    params["disableSSL"] = str(default.get("disableSSL", False))
    params["fromEnv"] = str((default.get("credentials") or {}).get("fromEnv", False))
    return _url(params)


def _read_config_map() -> tuple[Mapping[str, str] | None, bool]:
    """The namespace's ``kfp-launcher`` data, and whether the API answered at all."""
    try:
        from kubernetes import client, config
        from kubernetes.client.exceptions import ApiException

        config.load_incluster_config()
        with open(_NAMESPACE_FILE) as f:
            namespace = f.read().strip()
        found = client.CoreV1Api().read_namespaced_config_map(CONFIG_MAP, namespace)
    except ApiException as e:
        return None, e.status == 404
    except Exception:  # noqa: BLE001 - not in a cluster, or no API to ask: unknown
        return None, False
    return found.data or {}, True


def release_default(names: Sequence[tuple[str, int]] = RELEASE_DEFAULTS) -> str | None:
    """The endpoint of the first release default whose Service name resolves, or None."""
    for host, port in names:
        try:
            socket.getaddrinfo(host, port)
        except OSError:
            continue
        return f"http://{host}:{port}"
    return None


def launcher_endpoint(executor_input: Mapping) -> str | None:
    """The root's store's endpoint as the launcher reaches it (the module's order 2-4), or
    None for a root outside S3 and MinIO, or one no rule finds."""
    root = _root_bucket(executor_input)
    if root is None:
        return None
    found = from_inputs(executor_input, root)
    if found:
        return found
    data, answered = _read_config_map()
    if data is not None:
        found = from_config_map(data, root[0])
        if found:
            return found
    if root[0] != "minio":
        return None
    if not answered:
        print(
            f"The {CONFIG_MAP} ConfigMap could not be read; the root's store is taken to be "
            "the release's default (compile with --artifact-endpoint to name it)"
        )
    return release_default()


def _invocation(argv: Sequence[str]) -> str | None:
    """TFX's ``--json_serialized_invocation_args`` in ``argv``, or None."""
    flag = "--json_serialized_invocation_args"
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def apply(argv: Sequence[str]) -> None:
    """Sets ``ARTIFACT_ENDPOINT`` for this process from the executor input in ``argv`` when
    compile gave none, and says which endpoint it took."""
    given = _invocation(argv)
    if os.environ.get(ARTIFACT_ENDPOINT) or given is None:
        return
    try:
        executor_input = json.loads(given)
    except ValueError:
        return
    endpoint = launcher_endpoint(executor_input)
    if endpoint:
        os.environ[ARTIFACT_ENDPOINT] = endpoint
        print(f"The pipeline root's store, as the launcher reaches it: {endpoint}", file=sys.stderr)
