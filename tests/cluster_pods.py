"""What a pod of the cluster-like harness (``cluster_runs``) is given besides the launcher's
work: its disk's folders for the launcher's copies, a claim's new volume, and the API
server with its service account."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# component/launcher_v2.go:1239-1253, LocalPathForURI.
LOCAL_PREFIXES = {"gs://": "/gcs/", "minio://": "/minio/", "s3://": "/s3/"}


@dataclasses.dataclass(frozen=True)
class InClusterApi:
    """An API server on 127.0.0.1 (``fake_k8s_api``, over HTTPS), the service account
    folder Kubernetes mounts in every pod (its namespace, token and CA), and the account
    the pods run as (a Kubeflow profile's ``default-editor``, which KFP's multi-user mode
    runs a namespace's pods as) with its image pull secrets."""

    port: int
    service_account: Path
    api: object = None  # the FakeK8sApi, told of each task's pod
    account_name: str = "default-editor"
    pull_secrets: tuple[str, ...] = ()

    def pod_created(self, namespace: str, name: str, uid: str) -> None:
        """Records a task's pod, as the API server holds it while it runs."""
        if self.api is not None:
            self.api.add_task_pod(namespace, name, uid, self.account_name, self.pull_secrets)

    def pod_options(self) -> list[str]:
        """What a pod of the cluster gets: the API server's Service variables (kubelet's) and
        the service account's files."""
        return [
            "-e", "KUBERNETES_SERVICE_HOST=127.0.0.1", "-e", f"KUBERNETES_SERVICE_PORT={self.port}",
            "-v", f"{self.service_account}:{SERVICE_ACCOUNT_DIR}:ro",
        ]  # fmt: skip


def new_claim(folder: Path) -> Path:
    """A PersistentVolumeClaim's volume as a storage class makes it: its root folder owned by
    root, mode 0755 (nothing in KFP's pod spec changes that: no fsGroup)."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chown(folder, 0, 0)
    folder.chmod(0o755)
    return folder


def local_path_for_uri(uri: str) -> str | None:
    """The launcher's local path for a URI (LocalPathForURI); None for another scheme."""
    for remote, local in LOCAL_PREFIXES.items():
        if uri.startswith(remote):
            return local + uri[len(remote) :]
    return None


def on_pod_disk(pod_disk: Path, local_path: str) -> Path:
    """Where a path of the pod's /gcs, /minio or /s3 lies on this machine."""
    return pod_disk / local_path.lstrip("/")
