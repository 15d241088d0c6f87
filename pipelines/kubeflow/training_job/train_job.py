"""The TrainJob (Kubeflow Trainer v2's ``trainer.kubeflow.org/v1alpha1``) that trains across
nodes, on Kubeflow 1.11's default install, which has no TFJob.

Trainer v2 has no TensorFlow runtime (kubeflow/trainer#2699), so ``k8s/`` brings one:
the TrainingRuntime ``tfrecord-pipelines-tensorflow``
(``k8s/components/trainjob-runtime/runtime.yaml``), one indexed Job ``node`` whose
container ``node`` is the Trainer's image. Its ``mlPolicy`` names no framework, so the
PlainML plugin applies (kubeflow/trainer v2.3.0, 658725bd,
pkg/runtime/framework/plugins/plainml/plainml.go): the TrainJob's ``numNodes`` sets the
trainer's pod count, and its ``spec.trainer.env`` is added to the ``node`` container.

No plugin writes ``TF_CONFIG``; the task writes it in that env, from what the JobSet
gives each pod:

- the pods' host names, ``<trainjob>-node-0-<i>.<trainjob>``
  (pkg/runtime/framework/plugins/jobset/jobset.go:281-292, IdentifyPodNetwork: the
  JobSet's subdomain is the TrainJob's name);
- the pod's completion index, by the downward API
  (pkg/constants/constants.go:296-297, JobCompletionIndexFieldPath; the JAX plugin gives
  its process id the same way, jax.go:83-87), in ``WORKER_INDEX``;
- ``TF_CONFIG`` after it, with ``$(WORKER_INDEX)`` where the index goes: Kubernetes
  expands a variable defined earlier in the same container's env.

So each worker finds the ``TF_CONFIG`` a TFJob's operator would have set, and the
Trainer reads it as it does there (``components/trainer/workers.py``).

What the object holds, and why:

- ``runtimeRef``: the namespaced TrainingRuntime (``kind: TrainingRuntime``), which the
  overlay installs in the pipeline's namespace, or the ClusterTrainingRuntime of the same
  name, which a Kubeflow profile's owner can use but not install;
- ``resourcesPerNode``: the Trainer pod's limits (its GPUs, CPU and memory);
- a ``runtimePatches`` entry of this project's own manager for what the Trainer's pod
  has besides: its claims, node pool and tolerations; the webhook requires a
  domain-prefixed manager and refuses env in a patch of the ``node`` container
  (jobset.go:174-206), so the env goes in ``spec.trainer.env``;
- restarts are the runtime's (a TrainJob cannot patch the Job's spec): its Job's
  ``backoffLimitPerIndex`` counts each worker's faults apart, so one fault of every
  worker costs each index one, for any worker count; the compiled backoff limit is
  not carried;
- the Istio annotation (``job_api.NO_SIDECAR``), the task's service account and image
  pull secrets in the patch of the ``node`` pods, as on a TFJob's workers;
- a name JobSet's webhook takes: it refuses a JobSet whose last pod's name,
  ``<name>-node-0-<last index>-<5 letters>``, is not a DNS-1035 label
  (kubernetes-sigs/jobset v0.12.0 pkg/webhooks/jobset_webhook.go:243-256,
  placement.GenPodName), and the Trainer only records an event then
  (pkg/controller/trainjob_controller.go:107-119): the TrainJob would wait, never Failed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from tfrecord_pipelines.kubeflow.training_job.job_api import (
    MANAGED_BY_LABEL,
    MANAGER,
    NO_SIDECAR,
    JobApi,
    check_job,
)
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources

API = JobApi(
    kind="TrainJob",
    group="trainer.kubeflow.org",
    version="v1alpha1",
    plural="trainjobs",
    # pkg/constants/constants.go:68-69: the trainer's Job and container.
    container="node",
    # pkg/apis/trainer/v1alpha1/trainjob_types.go:60-61.
    succeeded="Complete",
    # JobSet's label on its pods (the JobSet is named as the TrainJob; Trainer v2's own
    # runtimes read it: charts/kubeflow-trainer/files/runtimes/torch-distributed-with-
    # cache.yaml:51), and the Job controller's annotation of an indexed Job's pod.
    job_label="jobset.sigs.k8s.io/jobset-name",
    index_key="batch.kubernetes.io/job-completion-index",
    # JobSet's webhook: placement.GenPodName(jobset, "node", "0", last) and a random suffix.
    longest_pod_name="{name}-node-0-{last}-abcde",
    role_file="k8s/components/trainjob-workers/rbac.yaml",
    # The JobSet not made (pkg/controller/trainjob_controller.go:107-119, on the TrainJob),
    # and a pod the API refused, on the node Job (the Job controller's FailedCreate).
    creation_failures=(
        ("{name}", ("TrainJobResourcesCreationFailed",)),
        ("{name}-node-0", ("FailedCreate",)),
    ),
)
# The runtime k8s/ installs (k8s/components/trainjob-runtime/runtime.yaml): a TrainingRuntime
# in the pipeline's namespace, or the same spec as a ClusterTrainingRuntime a cluster's admin
# installs once (k8s/overlays/trainjob-cluster-runtime), which every namespace may read
# (Trainer v2's kubeflow-trainer-view-cluster-runtimes) but a profile's owner cannot create.
DEFAULT_RUNTIME = "tfrecord-pipelines-tensorflow"
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
RUNTIME_KIND = RUNTIME_KINDS[0]
# The trainer's replicated Job (pkg/constants/constants.go:68-69).
NODE_JOB = "node"
# The port each worker's collective ops listen on: any, as each pod has its own address.
PORT = 2222
WORKER_INDEX = "TFRECORD_PIPELINES_WORKER_INDEX"
# constants.JobCompletionIndexFieldPath.
COMPLETION_INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
# A runtimePatches entry's owner: a domain-prefixed path (jobset.go:176).
PATCH_MANAGER = "tfrecord-pipelines.io/trainer-task"


def check_runtime_kind(kind: str) -> None:
    """Raises ValueError, in one line, for a runtime kind the TrainJob webhook does not know."""
    if kind not in RUNTIME_KINDS:
        raise ValueError(f"a TrainJob's runtime is one of {', '.join(RUNTIME_KINDS)}, got {kind!r}")


def worker_addresses(name: str, workers: int) -> list[str]:
    """Each worker's address, in index order: its JobSet host name and ``PORT``."""
    return [f"{name}-{NODE_JOB}-0-{index}.{name}:{PORT}" for index in range(workers)]


def tf_config_env(name: str, workers: int) -> list[dict]:
    """The variables that give each pod of TrainJob NAME its ``TF_CONFIG``: its index by the
    downward API, then ``TF_CONFIG`` referring to it (expanded by Kubernetes)."""
    cluster = json.dumps({"worker": worker_addresses(name, workers)})
    return [
        {"name": WORKER_INDEX, "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX_FIELD}}},
        {
            "name": "TF_CONFIG",
            "value": f'{{"cluster": {cluster}, '
            f'"task": {{"type": "worker", "index": $({WORKER_INDEX})}}}}',
        },
    ]


def train_job(
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
    runtime: str = DEFAULT_RUNTIME,
    runtime_kind: str = RUNTIME_KIND,
) -> dict:
    """The TrainJob that runs COMMAND on WORKERS nodes of IMAGE with RUNTIME.

    Args:
      name: the job's name (``job_api.job_name`` of the task's pod).
      namespace: the task's namespace (where a TrainingRuntime is).
      image: the task's own image.
      command: each worker's command (the Trainer's executor with the task's inputs).
      workers: how many workers, 2 or more.
      resources: each worker's accelerators, CPU and memory, as the Trainer's pod's.
      owner: the task's pod, ``{"name": ..., "uid": ...}``: the job goes with it.
      env: the workers' environment (a Secret's key as ``valueFrom.secretKeyRef``).
      volumes: the pod volumes the workers mount.
      volume_mounts: where the ``node`` container mounts them.
      node_selector: node labels the workers' pods require.
      tolerations: taints they tolerate.
      service_account: the workers' service account (the task's); None: the runtime's.
      image_pull_secrets: the Secrets the workers pull the image with (the task's).
      runtime: the runtime's name.
      runtime_kind: its kind, one of ``RUNTIME_KINDS``.

    Raises:
      ValueError: a name or a count the controller or Kubernetes would refuse, in one line.
    """
    check_job(API, name, workers, image, command)
    check_runtime_kind(runtime_kind)
    trainer: dict = {
        "image": image,
        "command": list(command),
        "numNodes": workers,
        "env": [dict(v) for v in env] + tf_config_env(name, workers),
    }
    limits = resources.limits()
    if limits:
        trainer["resourcesPerNode"] = {"limits": limits}
    metadata: dict = {"name": name, "namespace": namespace, "labels": {MANAGED_BY_LABEL: MANAGER}}
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": owner["name"], "uid": owner["uid"]}
        ]
    spec: dict = {
        "runtimeRef": {"name": runtime, "kind": runtime_kind, "apiGroup": API.group},
        "trainer": trainer,
    }
    pod = _pod_patch(
        volumes, volume_mounts, node_selector, tolerations, service_account, image_pull_secrets
    )
    pod_template: dict = {"metadata": {"annotations": dict(NO_SIDECAR)}}
    if pod:
        pod_template["spec"] = pod
    node_job = {"name": NODE_JOB, "template": {"spec": {"template": pod_template}}}
    spec["runtimePatches"] = [
        {
            "manager": PATCH_MANAGER,
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [node_job]}}},
        }
    ]
    return {"apiVersion": API.api_version, "kind": API.kind, "metadata": metadata, "spec": spec}


def _pod_patch(
    volumes, volume_mounts, node_selector, tolerations, service_account, image_pull_secrets
) -> dict:
    """The Trainer pod's claims, node pool, tolerations and identity as a patch of the
    runtime's pod."""
    pod: dict = {}
    if service_account:
        pod["serviceAccountName"] = service_account
    if image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": s} for s in image_pull_secrets]
    if volumes:
        pod["volumes"] = [dict(v) for v in volumes]
    if volume_mounts:
        pod["containers"] = [
            {"name": API.container, "volumeMounts": [dict(m) for m in volume_mounts]}
        ]
    if node_selector:
        pod["nodeSelector"] = dict(node_selector)
    if tolerations:
        pod["tolerations"] = [dict(t) for t in tolerations]
    return pod
