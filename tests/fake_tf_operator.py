"""A stand-in of the Kubeflow Training Operator's TFJob controller, for contract tests: each
TFJob created through ``fake_k8s_api`` runs as real containers of its image here.

What it does as the operator does (kubeflow/trainer v1.9.4, 4445c12a):

- one pod per worker, named ``<job>-worker-<index>`` (pkg/core/utils.go:30), labelled
  with the job's name (common_types.go:34), whose ``tensorflow`` container gets the
  replica template's command, variables (a Secret's key read from the test's cluster),
  and claims; a missing Secret, key or claim starts no pod and leaves the job Created,
  as kubelet leaves such a pod waiting (CreateContainerConfigError, or Pending), so the
  task's wait ends only at its timeout;
- ``TF_CONFIG`` (pkg/controller.v1/tensorflow/tensorflow.go, genClusterSpec and
  genTFConfigJSONStr): ``cluster.worker`` lists ``<job>-worker-<i>.<namespace>.svc:<port>``
  in index order, ``task`` is this pod's type and index, ``environment`` "cloud";
- Istio: in a namespace labelled for injection (``istio_namespaces``, as a Kubeflow
  profile's is), a worker pod whose template lacks ``sidecar.istio.io/inject: "false"``
  gets a proxy container that never exits (istio/istio pkg/kube/inject/inject.go,
  injectRequired: the annotation turns injection off), and the pod ends only when every
  container has: such a job never succeeds, as on a cluster;
- conditions: Created, then Running once the pods start, then Succeeded when every
  worker exited 0 (``successPolicy: AllWorkers``), Failed as soon as one exits non-zero
  (the job's message names it).

Stand-ins, each named: the workers are containers of one podman pod on the host's
network, so they reach the object stores on 127.0.0.1 as the harness's pods do; a
cluster's Services (the workers' host names) are an ``/etc/hosts`` mounted in each,
naming 127.0.0.1, and the workers, sharing one network, get ports of their own where
the operator gives each pod 2222 on an address of its own. Not imitated: restarts
(``OnFailure``, ``backoffLimit``: a failed worker fails the job), scheduling, and
``cleanPodPolicy`` (the pods go when the job is deleted).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from component_image import podman
from fake_k8s_api import FakeK8sApi, FakePod, condition

# A worker's longest run here: the harness's own limit for a pod's container.
WORKER_TIMEOUT_S = 600
ISTIO_INJECT = "sidecar.istio.io/inject"


class FakeTFOperator:
    """Runs each TFJob the API stand-in takes as containers; ``close`` removes what is left.

    Args:
      api: the API stand-in it watches.
      scratch: a folder for the workers' hosts files.
      claims: the cluster's PersistentVolumeClaims, by name, as folders.
      secrets: the cluster's Secrets, by name (key -> value).
      network: variables every pod gets in place of the cluster's network routes.
      istio_namespaces: the namespaces labelled for Istio's sidecar injection.
    """

    def __init__(
        self,
        api: FakeK8sApi,
        scratch: Path,
        claims: Mapping[str, Path],
        secrets: Mapping[str, Mapping[str, str]],
        network: Mapping[str, str],
        istio_namespaces: tuple[str, ...] = (),
    ) -> None:
        self.api, self.scratch, self.istio_namespaces = api, scratch, istio_namespaces
        self.worker_timeout_s = WORKER_TIMEOUT_S
        self.claims, self.secrets, self.network = claims, secrets, network
        self.jobs: list[dict] = []  # every job it was given, as created
        self.tf_configs: dict[str, dict] = {}  # each worker's TF_CONFIG, by pod name
        self._threads: list[threading.Thread] = []
        self._pods: set[str] = set()
        api.operator = self

    def created(self, namespace: str, job: dict) -> None:
        self.jobs.append(job)
        thread = threading.Thread(target=self._run, args=(namespace, job), daemon=True)
        self._threads.append(thread)
        thread.start()

    def deleted(self, namespace: str, name: str) -> None:
        if name in self._pods:
            podman("pod", "rm", "--force", "--time", "5", name)
            self._pods.discard(name)

    def close(self) -> None:
        for thread in self._threads:
            thread.join(timeout=WORKER_TIMEOUT_S)
        for name in list(self._pods):
            self.deleted("", name)

    def _run(self, namespace: str, job: dict) -> None:
        name = job["metadata"]["name"]
        worker = job["spec"]["tfReplicaSpecs"]["Worker"]
        pod_spec = worker["template"]["spec"]
        [container] = [c for c in pod_spec["containers"] if c["name"] == "tensorflow"]
        annotations = worker["template"].get("metadata", {}).get("annotations", {})
        proxied = namespace in self.istio_namespaces and annotations.get(ISTIO_INJECT) != "false"
        self.api.set_conditions(namespace, name, [condition("Created")])
        pods = [f"{name}-worker-{i}" for i in range(worker["replicas"])]
        addresses = [f"{pod}.{namespace}.svc:{_free_port()}" for pod in pods]
        hosts = self.scratch / f"{name}.hosts"
        hosts.write_text(
            "127.0.0.1 localhost\n" + "".join(f"127.0.0.1 {a.split(':')[0]}\n" for a in addresses)
        )
        hosts.chmod(0o644)
        try:
            options = self._options(container, pod_spec)
        except KeyError as e:
            # kubelet never starts such a pod, and the operator leaves the job Created.
            missing = e.args[0]
            for pod in pods:
                if missing.startswith("persistentvolumeclaim"):
                    record = FakePod(name=pod, job=name, unschedulable=missing)
                else:
                    record = FakePod(
                        name=pod, job=name, waiting=("CreateContainerConfigError", missing)
                    )
                self.api.pods.append(record)
            return
        podman("pod", "create", "--name", name, "--network", "host")
        self._pods.add(name)
        for index, pod in enumerate(pods):
            tf_config = {
                "cluster": {"worker": addresses},
                "task": {"type": "worker", "index": index},
                "environment": "cloud",
            }
            self.tf_configs[pod] = tf_config
            started = podman(
                "run", "--detach", "--pod", name, "--name", pod, "-v", f"{hosts}:/etc/hosts:ro",
                "-e", f"TF_CONFIG={json.dumps(tf_config)}", *options,
                container["image"], *container["command"], *container.get("args", []),
            )  # fmt: skip
            if started.returncode:
                self._fail(namespace, name, f"{pod} did not start: {started.stderr.strip()}")
                return
            if proxied:
                podman(
                    "run", "--detach", "--pod", name, "--name", f"{pod}-istio-proxy",
                    container["image"], "sleep", "infinity",
                )  # fmt: skip
            self.api.pods.append(FakePod(name=pod, job=name))
        self.api.set_conditions(
            namespace, name, [{**condition("Created"), "status": "False"}, condition("Running")]
        )
        self._wait(namespace, name, pods, proxied)

    def _options(self, container: Mapping, pod_spec: Mapping) -> list[str]:
        """podman's options for the container's variables and claims.

        Raises:
          KeyError: a Secret or a key the cluster does not hold, or a claim it has not.
        """
        options = []
        for variable, value in self.network.items():
            options += ["-e", f"{variable}={value}"]
        for variable in container.get("env", []):
            if "valueFrom" in variable:
                ref = variable["valueFrom"]["secretKeyRef"]
                secret = self.secrets.get(ref["name"])
                if secret is None or ref["key"] not in secret:
                    raise KeyError(
                        f"couldn't find key {ref['key']} in Secret {ref['name']}"
                        if secret is not None
                        else f'secret "{ref["name"]}" not found'
                    )
                value = secret[ref["key"]]
            else:
                value = variable["value"]
            options += ["-e", f"{variable['name']}={value}"]
        claims = {
            v["name"]: v["persistentVolumeClaim"]["claimName"]
            for v in pod_spec.get("volumes", [])
            if "persistentVolumeClaim" in v
        }
        for mount in container.get("volumeMounts", []):
            claim = claims[mount["name"]]
            if claim not in self.claims:
                raise KeyError(f'persistentvolumeclaim "{claim}" not found')
            options += ["-v", f"{self.claims[claim]}:{mount['mountPath']}"]
        return options

    def _wait(self, namespace: str, name: str, pods: list[str], proxied: bool) -> None:
        """The job's last conditions: Failed when a worker exits non-zero, Succeeded when all
        exited 0 (a pod with Istio's proxy never ends); each exited worker's code and log on
        its pod."""
        deadline, failed, done = time.monotonic() + self.worker_timeout_s, None, set()
        while failed is None and len(done) < len(pods):
            if time.monotonic() > deadline:
                failed = (
                    f"{', '.join(sorted(set(pods) - done))} still running after "
                    f"{self.worker_timeout_s:.0f} s"
                )
                break
            time.sleep(1)
            for pod in sorted(set(pods) - done):
                state = podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", pod)
                status, _, code = state.stdout.strip().partition(" ")
                if status not in ("exited", "stopped") or proxied:
                    continue
                done.add(pod)
                logs = podman("logs", pod)
                [record] = [p for p in self.api.pods if p.name == pod]
                record.exit_code, record.log = int(code), logs.stdout + logs.stderr
                if int(code) and failed is None:
                    failed = f"{pod} exited with code {code}"
        last = [{**condition("Created"), "status": "False"}]
        if failed:
            last.append(condition("Failed", f"TFJob {namespace}/{name} has failed: {failed}"))
        else:
            last.append(condition("Succeeded", f"TFJob {namespace}/{name} successfully completed."))
        self.api.set_conditions(namespace, name, last)

    def _fail(self, namespace: str, name: str, message: str) -> None:
        self.api.set_conditions(namespace, name, [condition("Failed", message)])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
