"""The compiled Trainer of more than one worker: its TFJob's template and its executor.

``compile --trainer-workers N`` (N > 1) gives the Trainer's task the executor that
creates a TFJob (``job_trainer``) and, in its custom_config, the job's
``worker_template.WorkerTemplate``: each worker is the Trainer's pod again, so it gets the
Trainer's image, resources, node pool and tolerations, the claims the Trainer
mounts (a claim every worker's node reaches: ReadWriteMany on more than one node)
and the Trainer container's variables, a Secret's key by reference. One worker
compiles as before: the Trainer trains in its task's pod, with no job.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from google.protobuf import json_format

from tfrecord_pipelines.kubeflow.platform_spec import TaskPlacement
from tfrecord_pipelines.kubeflow.training_job import train_job
from tfrecord_pipelines.kubeflow.training_job import worker_template as templates
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources

EXECUTOR_CLASS_PATH = "tfrecord_pipelines.kubeflow.job_trainer.Executor"
_CLASS_FLAG = "--executor_class_path"


def worker_template(
    workers: int,
    image: str,
    resources: TrainerResources,
    placement: TaskPlacement,
    env: Sequence[Mapping[str, str]] = (),
    timeout_s: float = templates.DEFAULT_TIMEOUT_S,
    kind: str = templates.DEFAULT_KIND,
    runtime_kind: str = train_job.RUNTIME_KIND,
) -> templates.WorkerTemplate:
    """The job's template for the Trainer's pod as compiled (its PLACEMENT, its container's
    ENV): a job of KIND (a TrainJob on a runtime of RUNTIME_KIND).

    Raises:
      ValueError: fewer than two workers, or another value the operator would refuse.
    """
    volumes, mounts = [], []
    for volume in placement.volumes:
        name = _volume_name(volume.claim)
        volumes.append({"name": name, "persistentVolumeClaim": {"claimName": volume.claim}})
        mounts.append({"name": name, "mountPath": volume.mount_path})
    variables = [{"name": v["name"], "value": v["value"]} for v in env]
    for secret in placement.secret_env:
        variables += [
            {"name": variable, "valueFrom": {"secretKeyRef": {"name": secret.secret, "key": key}}}
            for key, variable in secret.key_to_env
        ]
    # kfp-kubernetes' Toleration message has Kubernetes' own fields and names.
    tolerations = [json_format.MessageToDict(t.to_proto()) for t in placement.tolerations]
    return templates.WorkerTemplate(
        workers=workers,
        image=image,
        resources=resources,
        env=tuple(variables),
        volumes=tuple(volumes),
        volume_mounts=tuple(mounts),
        node_selector=dict(placement.node_selector),
        tolerations=tuple(tolerations),
        timeout_s=timeout_s,
        kind=kind,
        runtime_kind=runtime_kind,
    )


def with_worker_job(spec: dict, executor_label: str, task: str, template: templates.WorkerTemplate):
    """The compiled PipelineSpec (a dict, changed in place) with the Trainer's task running
    ``job_trainer``'s executor and holding TEMPLATE in its custom_config.

    Raises:
      ValueError: the spec's Trainer has no executor class flag or custom_config.
    """
    args = spec["deploymentSpec"]["executors"][executor_label]["container"]["args"]
    if _CLASS_FLAG not in args:
        raise ValueError(f"{executor_label} has no {_CLASS_FLAG}: not TFX's Trainer")
    args[args.index(_CLASS_FLAG) + 1] = EXECUTOR_CLASS_PATH
    parameters = spec["root"]["dag"]["tasks"][task]["inputs"]["parameters"]
    constant = parameters["custom_config"]["runtimeValue"]["constant"]
    custom_config = {**json.loads(constant), **template.to_custom_config()}
    parameters["custom_config"]["runtimeValue"]["constant"] = json.dumps(
        custom_config, sort_keys=True
    )
    return spec


def _volume_name(claim: str) -> str:
    """A pod volume's name (a DNS-1123 label) for a claim's name (a DNS-1123 subdomain)."""
    return re.sub(r"[^a-z0-9-]", "-", claim)[:63].strip("-") or "claim"
