"""The TFJob (the Kubeflow Training Operator's ``kubeflow.org/v1``) that trains across nodes.

The Trainer's task builds one when the pipeline was compiled with more than one
trainer worker: N replicas of type ``Worker`` of the task's own image, each
running the command the task gives it. The operator sets each worker's
``TF_CONFIG`` (``cluster.worker`` lists every worker's service, ``task`` its own
index); with more than one worker the Trainer trains with
MultiWorkerMirroredStrategy, worker 0 its chief.

What the object holds, and why (kubeflow/trainer v1.9.4, 4445c12a):

- ``successPolicy: AllWorkers``: without it the job succeeds when worker 0
  ends (pkg/controller.v1/tensorflow/tfjob_controller.go:463), and the task
  would delete it while other workers still write.
- ``restartPolicy: OnFailure`` and ``runPolicy.backoffLimit``: a worker that
  fails restarts in its pod and resumes from the Trainer's BackupAndRestore
  folder; past the limit the job fails.
- ``cleanPodPolicy: None``: the pods stay until the task reads the failed
  replica's log and deletes the job (the ownerReference deletes it with the
  task's pod as well, when a run is cancelled).
- A name that leaves room for the operator's pod and Service names,
  ``<job>-worker-<index>`` (pkg/core/utils.go:30, GenGeneralName), which must be
  DNS-1035 labels of at most 63 characters as the job's own name must be
  (pkg/webhooks/tensorflow/tfjob_webhook.go:74).
- The container named ``tensorflow``: the webhook refuses a replica without
  one (tfjob_webhook.go:113-120), and the operator adds its port to that one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping, Sequence

from tfrecord_pipelines.kubeflow.trainer_resources import TrainerResources

API_VERSION = "kubeflow.org/v1"
KIND = "TFJob"
PLURAL = "tfjobs"
# pkg/apis/kubeflow.org/v1/tensorflow_types.go:26, TFJobDefaultContainerName.
CONTAINER = "tensorflow"
WORKER = "Worker"
# A Kubernetes name that must be a DNS-1035 label (apimachinery's NameIsDNS1035Label).
_DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS_1035_MAX = 63
# The suffix the operator appends for the workers' pods and Services, for up to 999 workers.
_REPLICA_SUFFIX = len("-worker-999")
MAX_NAME = DNS_1035_MAX - _REPLICA_SUFFIX
MAX_WORKERS = 999
DEFAULT_BACKOFF_LIMIT = 3
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGER = "tfrecord-pipelines"
# How long the task waits for the job from its creation, unless compiled otherwise: a day.
DEFAULT_TIMEOUT_S = 24 * 3600
# The entry point's flag that makes a process one of the job's workers (``kfp_executor``).
WORKER_FLAG = "tfjob_worker"
# The Trainer's custom_config entry that holds the compiled WorkerTemplate.
CUSTOM_CONFIG_KEY = "tf_job"


@dataclasses.dataclass(frozen=True)
class WorkerTemplate:
    """What the compiled pipeline fixes of the Trainer's TFJob; the task adds the job's name,
    namespace, owner and the workers' command when it runs (``tf_job``).

    Attributes:
      workers: how many workers, 2 or more.
      image: the Trainer's image.
      resources: each worker's accelerators, CPU and memory (the Trainer pod's).
      env: the workers' variables: the Trainer container's, a Secret's key as a
        ``secretKeyRef`` (never its value).
      volumes: the claims the Trainer's pod mounts, as pod volumes.
      volume_mounts: where the container mounts them.
      node_selector: the Trainer's node pool.
      tolerations: the taints the Trainer's pod tolerates.
      backoff_limit: restarts of failed workers before the job fails.
      timeout_s: how long the task waits for the job.
    """

    workers: int
    image: str
    resources: TrainerResources = TrainerResources()
    env: tuple[Mapping, ...] = ()
    volumes: tuple[Mapping, ...] = ()
    volume_mounts: tuple[Mapping, ...] = ()
    node_selector: Mapping[str, str] = dataclasses.field(default_factory=dict)
    tolerations: tuple[Mapping, ...] = ()
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self):
        _check("template", self.workers, self.backoff_limit, self.image, ["-"], name_known=False)
        if self.timeout_s <= 0:
            raise ValueError(f"the TFJob's timeout must be positive, got {self.timeout_s} s")

    def to_custom_config(self) -> dict:
        """The JSON-serializable custom_config entry (``CUSTOM_CONFIG_KEY``)."""
        fields = dataclasses.asdict(self)
        fields["resources"] = dataclasses.asdict(self.resources)
        return {CUSTOM_CONFIG_KEY: fields}

    @classmethod
    def from_custom_config(cls, custom_config: Mapping | None) -> WorkerTemplate | None:
        """The template in the Trainer's custom_config; None: one worker, no job."""
        fields = (custom_config or {}).get(CUSTOM_CONFIG_KEY)
        if not fields:
            return None
        fields = dict(fields)
        fields["resources"] = TrainerResources(**fields["resources"])
        for name in ("env", "volumes", "volume_mounts", "tolerations"):
            fields[name] = tuple(fields.get(name, ()))
        return cls(**fields)

    def job(self, *, name: str, namespace: str, command: Sequence[str], owner=None) -> dict:
        """The TFJob of this template for the task's pod (``tf_job``)."""
        return tf_job(
            name=name,
            namespace=namespace,
            image=self.image,
            command=command,
            workers=self.workers,
            resources=self.resources,
            owner=owner,
            env=self.env,
            volumes=self.volumes,
            volume_mounts=self.volume_mounts,
            node_selector=self.node_selector,
            tolerations=self.tolerations,
            backoff_limit=self.backoff_limit,
        )


def job_name(pod_name: str) -> str:
    """A TFJob name for the task's pod: DNS-1035, short enough for the workers' names.

    The pod's name when it already is one; otherwise its letters, digits and dashes, cut
    to length, and a digest of the whole, so that two tasks' jobs never share a name.
    """
    if not pod_name:
        raise ValueError("the task's pod name is empty: the TFJob's name comes from it")
    if _DNS_1035.fullmatch(pod_name) and len(pod_name) <= MAX_NAME:
        return pod_name
    digest = hashlib.sha256(pod_name.encode()).hexdigest()[:10]
    cleaned = re.sub(r"[^a-z0-9-]+", "-", pod_name.lower())
    head = re.sub(r"^[^a-z]+", "", cleaned)[: MAX_NAME - len(digest) - 1].rstrip("-")
    return f"{head or 'tfjob'}-{digest}"


def tf_job(
    *,
    name: str,
    namespace: str,
    image: str,
    command: Sequence[str],
    workers: int,
    resources: TrainerResources,
    owner: Mapping[str, str] | None = None,
    env: Sequence[Mapping] = (),
    volumes: Sequence[Mapping] = (),
    volume_mounts: Sequence[Mapping] = (),
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping] = (),
    service_account: str | None = None,
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT,
) -> dict:
    """The TFJob that runs COMMAND on WORKERS workers of IMAGE.

    Args:
      name: the job's name (``job_name`` of the task's pod).
      namespace: the task's namespace; the workers run there.
      image: the task's own image.
      command: each worker's command (the Trainer's executor with the task's inputs).
      workers: how many workers, 2 or more (one worker is the task's own pod, no job).
      resources: each worker's accelerators, CPU and memory, as the Trainer's pod's.
      owner: the task's pod, ``{"name": ..., "uid": ...}``: the job goes with it.
      env: the workers' environment (Kubernetes EnvVar objects: a Secret's key as
        ``valueFrom.secretKeyRef``, never its value).
      volumes: the pod volumes the workers mount (a claim every worker reaches).
      volume_mounts: where the container mounts them.
      node_selector: node labels the workers' pods require (the GPU node pool's).
      tolerations: taints they tolerate (Kubernetes Toleration objects).
      service_account: the workers' service account; None: the namespace's default.
      backoff_limit: restarts of failed workers before the job fails.

    Raises:
      ValueError: a name the operator or Kubernetes would refuse, or fewer than two or
        more than 999 workers, in one line naming the value.
    """
    _check(name, workers, backoff_limit, image, command)
    pod_spec = _pod_spec(image, command, resources, env, volumes, volume_mounts, service_account)
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        pod_spec["tolerations"] = [dict(t) for t in tolerations]
    metadata: dict = {
        "name": name,
        "namespace": namespace,
        "labels": {MANAGED_BY_LABEL: MANAGER},
    }
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": owner["name"], "uid": owner["uid"]}
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": {
            "successPolicy": "AllWorkers",
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": backoff_limit},
            "tfReplicaSpecs": {
                WORKER: {
                    "replicas": workers,
                    "restartPolicy": "OnFailure",
                    "template": {"spec": pod_spec},
                }
            },
        },
    }


def _pod_spec(image, command, resources, env, volumes, volume_mounts, service_account) -> dict:
    """Each worker's pod: the ``tensorflow`` container of the task's image and its mounts."""
    container: dict = {"name": CONTAINER, "image": image, "command": list(command)}
    limits = _limits(resources)
    if limits:
        container["resources"] = {"limits": limits}
    if env:
        container["env"] = [dict(variable) for variable in env]
    if volume_mounts:
        container["volumeMounts"] = [dict(mount) for mount in volume_mounts]
    pod_spec: dict = {"containers": [container]}
    if volumes:
        pod_spec["volumes"] = [dict(volume) for volume in volumes]
    if service_account:
        pod_spec["serviceAccountName"] = service_account
    return pod_spec


def _check(
    name: str, workers: int, backoff_limit: int, image: str, command, name_known: bool = True
) -> None:
    """Refuses, in one line, what the operator or Kubernetes would refuse."""
    if name_known and (not _DNS_1035.fullmatch(name) or len(name) > MAX_NAME):
        raise ValueError(
            f"TFJob name {name!r} must be a DNS-1035 label of at most {MAX_NAME} characters "
            f"(its workers' pods and Services add '-worker-<index>' to it)"
        )
    if not 2 <= workers <= MAX_WORKERS:
        raise ValueError(
            f"a TFJob runs 2 to {MAX_WORKERS} trainer workers, got {workers} "
            "(one worker trains in the task's own pod)"
        )
    if backoff_limit < 0:
        raise ValueError(f"backoff_limit must be 0 or more, got {backoff_limit}")
    if not image or not command:
        raise ValueError("the workers need the task's image and a command")


def _limits(resources: TrainerResources) -> dict[str, str]:
    """Each worker's limits: its accelerators, and the CPU and memory the Trainer's pod has."""
    limits = {}
    if resources.gpus:
        limits[resources.accelerator] = str(resources.gpus)
    if resources.cpu:
        limits["cpu"] = resources.cpu
    if resources.memory:
        limits["memory"] = resources.memory
    return limits
