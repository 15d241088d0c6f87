"""The tf.data service as k8s/components/data-service runs it, as pods in the component image.

``podman kube play`` runs Pods, not StatefulSets or Services, so each
StatefulSet's pod template becomes the Pods that StatefulSet would make
(``tfdata-dispatcher-0``, ``tfdata-worker-0`` and ``-1``), changed only where
one machine without a cluster differs: the host's network instead of the
cluster's (so the dispatcher's Service name and each worker's per-pod DNS name
become 127.0.0.1 and a free port, the containers declare no ports to map,
and the pod's name and namespace, which only that DNS name used, are not
passed in), an emptyDir for the dispatcher's journal
claim, and the run's output folder mounted read-only at its own path, where
the workers read the shards (on a cluster, a pipeline root the pods reach).
Everything else is the manifest's: the image, its entry point and arguments,
UID 1000, the read-only root file system with /tmp an emptyDir, the resource
limits.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from component_image import podman
from conftest import REPO_ROOT, free_port
from tfrecord_pipelines.components.trainer.data_service import (
    DataService,
    DataServiceError,
    registered_workers,
)

MANIFESTS = REPO_ROOT / "k8s" / "components" / "data-service"
_READY_WAIT_S = 120


def _statefulset(file: str) -> dict:
    docs = yaml.safe_load_all((MANIFESTS / file).read_text())
    return next(d for d in docs if d and d["kind"] == "StatefulSet")


def _argument(args: list[str], flag: str, value: str) -> list[str]:
    assert any(a.startswith(f"{flag}=") for a in args), (flag, args)
    return [f"{flag}={value}" if a.startswith(f"{flag}=") else a for a in args]


def _pod(statefulset: dict, ordinal: int, image: str, args: dict, shards: Path) -> dict:
    """The Pod the StatefulSet makes at ORDINAL, on the host's network, reading SHARDS."""
    template = copy.deepcopy(statefulset["spec"]["template"])
    spec = template["spec"]
    spec.pop("serviceAccountName", None)  # no API server to call
    spec["hostNetwork"] = True
    spec["restartPolicy"] = "Never"
    (container,) = spec["containers"]
    assert container["image"].rsplit(":", 1)[0] == image.rsplit(":", 1)[0]
    container["image"] = image
    container.pop("ports")  # on the host's network a server's port is the host's
    for flag, value in args.items():
        container["args"] = _argument(container["args"], flag, value)
    # The pod's name and namespace were for the worker's DNS name, now 127.0.0.1
    # (podman cannot fill metadata.namespace).
    assert not any("$(" in a for a in container["args"]), container["args"]
    container.pop("env", None)
    for claim in statefulset["spec"].get("volumeClaimTemplates", []):
        spec["volumes"].append({"name": claim["metadata"]["name"], "emptyDir": {}})
    spec["volumes"].append(
        {"name": "shards", "hostPath": {"path": str(shards), "type": "Directory"}}
    )
    container["volumeMounts"].append({"name": "shards", "mountPath": str(shards), "readOnly": True})
    name = f"{statefulset['metadata']['name']}-{ordinal}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": template["metadata"]["labels"]},
        "spec": spec,
    }


def _wait_for_workers(address: str, count: int, pods: list[str]) -> None:
    """Waits until COUNT workers have registered with the dispatcher at ADDRESS."""
    service = DataService(address)
    deadline = time.monotonic() + _READY_WAIT_S
    while time.monotonic() < deadline:
        try:
            if len(registered_workers(service, timeout_s=5)) >= count:
                return
        except DataServiceError:
            pass  # not listening yet
        time.sleep(0.5)
    logs = "\n".join(podman("pod", "logs", pod).stdout[-2000:] for pod in pods)
    raise AssertionError(f"{count} workers did not register in {_READY_WAIT_S} s:\n{logs}")


@contextlib.contextmanager
def data_service_pods(output: Path, image: str, folder: Path) -> Iterator[tuple[str, list[str]]]:
    """Plays the dispatcher and two workers as pods reading OUTPUT; yields the address and pods."""
    output.chmod(0o755)  # the workers' UID 1000 reads the shards the run writes here
    dispatcher_port = free_port()
    dispatcher = _pod(
        _statefulset("dispatcher.yaml"), 0, image, {"--port": str(dispatcher_port)}, output
    )
    workers = []
    for ordinal in range(2):
        port = free_port()
        arguments = {
            "--dispatcher": f"127.0.0.1:{dispatcher_port}",
            "--port": str(port),
            "--worker-address": f"127.0.0.1:{port}",
        }
        workers.append(_pod(_statefulset("workers.yaml"), ordinal, image, arguments, output))
    manifest = folder / "data-service-pods.yaml"
    manifest.write_text(yaml.safe_dump_all([dispatcher, *workers]))
    played = podman("kube", "play", "--replace", str(manifest))
    try:
        assert played.returncode == 0, played.stderr[-3000:]
        pods = [p["metadata"]["name"] for p in (dispatcher, *workers)]
        _wait_for_workers(f"127.0.0.1:{dispatcher_port}", len(workers), pods)
        yield f"127.0.0.1:{dispatcher_port}", pods
    finally:
        podman("pod", "rm", "--force", *(p["metadata"]["name"] for p in (dispatcher, *workers)))


def pod_containers(pod: str) -> list[dict]:
    """``podman container inspect`` of the pod's own containers (not its infra container)."""
    listed = json.loads(podman("ps", "--all", "--filter", f"pod={pod}", "--format", "json").stdout)
    ids = [c["Id"] for c in listed if not c.get("IsInfra")]
    return json.loads(podman("container", "inspect", *ids).stdout)
