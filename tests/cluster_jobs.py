"""A Kubernetes Job of ``k8s/`` run as the test's cluster runs it: its pod's one container in
podman, as its securityContext says (user, capabilities), with its claims mounted.

A stand-in for the kubelet, named as one: the Job's image is the test's local build of
the component image, each claim is a folder of this machine (``cluster_runs.Cluster``),
and nothing else of the pod spec (service account, resources) is imitated.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from component_image import podman


def run_job(manifest: Path, claims: Mapping[str, Path], image: str) -> str:
    """Runs the Job in ``manifest`` to completion; returns its logs.

    Raises:
      RuntimeError: the Job's container failed, with its logs.
    """
    job = yaml.safe_load(manifest.read_text())
    pod = job["spec"]["template"]["spec"]
    [container] = pod["containers"]
    volumes = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod.get("volumes", [])}
    options = ["run", "--rm", "--network", "none"]
    security = container.get("securityContext", {})
    if "runAsUser" in security:
        options += ["--user", str(security["runAsUser"])]
    capabilities = security.get("capabilities", {})
    options += [f"--cap-drop={c}" for c in capabilities.get("drop", [])]
    options += [f"--cap-add={c}" for c in capabilities.get("add", [])]
    if security.get("allowPrivilegeEscalation") is False:
        options += ["--security-opt", "no-new-privileges"]
    for mount in container.get("volumeMounts", []):
        options += ["-v", f"{claims[volumes[mount['name']]]}:{mount['mountPath']}"]
    ran = podman(*options, image, *container.get("command", []), *container.get("args", []))
    logs = ran.stdout + ran.stderr
    if ran.returncode != 0:
        raise RuntimeError(f"Job {job['metadata']['name']} failed: {logs[-2000:]}")
    return logs
