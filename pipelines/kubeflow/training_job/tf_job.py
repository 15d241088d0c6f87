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
  folder. The operator sums the restarts over the workers (pkg/core/job.go:95-133),
  and one fault restarts every worker: the limit is ``job_api.summed_backoff_limit``,
  which survives the compiled number of faults of all of them.
- ``sidecar.istio.io/inject: "false"`` on the workers' pods (``job_api.NO_SIDECAR``):
  in a Kubeflow profile's namespace Istio's proxy would keep each pod running.
- The task's service account and image pull secrets, read from its pod at run time,
  on the workers' pods: their cloud identity (Workload Identity, IRSA) and their
  registry's credentials are the task's.
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

from collections.abc import Mapping, Sequence

from tfrecord_pipelines.kubeflow.training_job.job_api import (
    DEFAULT_BACKOFF_LIMIT,
    MANAGED_BY_LABEL,
    MANAGER,
    NO_SIDECAR,
    JobApi,
    check_job,
    summed_backoff_limit,
)
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources

API = JobApi(
    kind="TFJob",
    group="kubeflow.org",
    version="v1",
    plural="tfjobs",
    # pkg/apis/kubeflow.org/v1/tensorflow_types.go:26, TFJobDefaultContainerName.
    container="tensorflow",
    succeeded="Succeeded",
    # pkg/apis/kubeflow.org/v1/common_types.go:25-34: the job's name and the replica's index.
    job_label="training.kubeflow.org/job-name",
    index_key="training.kubeflow.org/replica-index",
    # pkg/core/utils.go:30, GenGeneralName: the pod's and its Service's name.
    longest_pod_name="{name}-worker-{last}",
    role_file="k8s/components/trainer-workers/rbac.yaml",
    # pkg/controller.v1/control/pod_control.go:39,153 and service_control.go:37,90: a pod
    # or Service the API refused (a quota, a policy), on the TFJob.
    creation_failures=(("{name}", ("FailedCreatePod", "FailedCreateService")),),
)
WORKER = "Worker"


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
    image_pull_secrets: Sequence[str] = (),
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
      service_account: the workers' service account (the task's); None: the namespace's
        default.
      image_pull_secrets: the Secrets the workers pull the image with (the task's).
      backoff_limit: faults of every worker the job survives.

    Raises:
      ValueError: a name the operator or Kubernetes would refuse, or fewer than two or
        more than 999 workers, in one line naming the value.
    """
    check_job(API, name, workers, image, command, backoff_limit)
    pod_spec = _pod_spec(image, command, resources, env, volumes, volume_mounts, service_account)
    if image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": s} for s in image_pull_secrets]
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
        "apiVersion": API.api_version,
        "kind": API.kind,
        "metadata": metadata,
        "spec": {
            "successPolicy": "AllWorkers",
            "runPolicy": {
                "cleanPodPolicy": "None",
                "backoffLimit": summed_backoff_limit(backoff_limit, workers),
            },
            "tfReplicaSpecs": {
                WORKER: {
                    "replicas": workers,
                    "restartPolicy": "OnFailure",
                    "template": {"metadata": {"annotations": dict(NO_SIDECAR)}, "spec": pod_spec},
                }
            },
        },
    }


def _pod_spec(image, command, resources, env, volumes, volume_mounts, service_account) -> dict:
    """Each worker's pod: the ``tensorflow`` container of the task's image and its mounts."""
    container: dict = {"name": API.container, "image": image, "command": list(command)}
    limits = resources.limits()
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
