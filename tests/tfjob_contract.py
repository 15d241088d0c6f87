"""What the Kubernetes API server and the Training Operator refuse in a TFJob, checked offline.

A contract test of kubeflow/trainer v1.9.4 (4445c12aa62e4345b0c2c6ac9b215a70eca46ed7),
which cannot run here:

- ``contracts/tfjob-v1.schema.json``: the ``openAPIV3Schema`` of the ``v1`` version of
  ``manifests/base/crds/kubeflow.org_tfjobs.yaml`` at that commit, its ``description``
  texts dropped (``python tests/tfjob_contract.py CRD.yaml`` writes it again). The API
  server checks an object against it; unknown fields fail here, as with kubectl's
  default ``--validate=strict`` (the server's Strict field validation).
- ``webhook_errors``: ``pkg/webhooks/tensorflow/tfjob_webhook.go`` (``validateTFJob``)
  and ``pkg/common/util/webhooks.go`` (``ValidateRunPolicy``), rule by rule.
- ``past_backoff_limit``: ``pkg/core/job.go:95-133`` (``PastBackoffLimit``): when the
  restarts of a job's running pods, summed over its workers, fail it.
- ``object_name_errors``: the names the operator gives the workers' pods and Services
  (``pkg/core/utils.go:30``), which Kubernetes requires to be DNS-1035 labels.
"""

from __future__ import annotations

import sys
from pathlib import Path

import crd_schemas
from crd_schemas import dns_1035 as _dns_1035

SCHEMA = "tfjob-v1.schema.json"
# pkg/apis/kubeflow.org/v1/common_types.go:40-43, the RunPolicy.managedBy values accepted.
_JOB_CONTROLLERS = {"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"}
# pkg/apis/kubeflow.org/v1/tensorflow_types.go:26.
_DEFAULT_CONTAINER = "tensorflow"
_CHIEF_OR_MASTER = {"Chief", "Master"}


def schema_errors(job: dict) -> list[str]:
    """The CRD schema's complaints about JOB, each as 'path: message'."""
    return crd_schemas.schema_errors(SCHEMA, job)


def webhook_errors(job: dict) -> list[str]:
    """The validating webhook's complaints about a new TFJob (validateTFJob)."""
    errors = []
    name = job.get("metadata", {}).get("name", "")
    if not _dns_1035(name):  # tfjob_webhook.go:74
        errors.append(f"metadata.name: Invalid value: {name!r}")
    spec = job.get("spec", {})
    manager = spec.get("runPolicy", {}).get("managedBy")
    if manager is not None and manager not in _JOB_CONTROLLERS:  # webhooks.go:17-22
        errors.append(f"spec.runPolicy.managedBy: Unsupported value: {manager!r}")
    replicas = spec.get("tfReplicaSpecs")
    if replicas is None:  # tfjob_webhook.go:92-94
        return [*errors, "spec.tfReplicaSpecs: Required value: must be required"]
    chiefs = 0
    for kind, replica in replicas.items():
        path = f"spec.tfReplicaSpecs[{kind}].template.spec.containers"
        containers = (replica or {}).get("template", {}).get("spec", {}).get("containers", [])
        if not containers:  # tfjob_webhook.go:101-103
            errors.append(f"{path}: Required value: must be specified")
        chiefs += kind in _CHIEF_OR_MASTER  # tfjob_webhook.go:104-106
        for index, container in enumerate(containers):
            if not container.get("image"):  # tfjob_webhook.go:110-112
                errors.append(f"{path}[{index}].image: Required value: must be required")
        if not any(c.get("name") == _DEFAULT_CONTAINER for c in containers):  # :113-120
            errors.append(
                f"{path}: Required value: must have at least one container with name "
                f"{_DEFAULT_CONTAINER}"
            )
    if chiefs > 1:  # tfjob_webhook.go:122-124
        errors.append(
            "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"
        )
    return errors


def object_name_errors(job: dict) -> list[str]:
    """The workers' pod and Service names Kubernetes would refuse (GenGeneralName)."""
    name = job["metadata"]["name"]
    errors = []
    for kind, replica in job["spec"]["tfReplicaSpecs"].items():
        for index in range(replica.get("replicas", 1)):
            generated = f"{name}-{kind.lower()}-{index}".replace("/", "-")
            if not _dns_1035(generated):
                errors.append(f"{generated!r} is not a DNS-1035 label of at most 63 characters")
    return errors


if __name__ == "__main__":
    crd_schemas.write_schema(Path(sys.argv[1]), "v1", SCHEMA)


def past_backoff_limit(job: dict, restarts: list[int]) -> bool:
    """Whether the operator fails JOB whose running workers' containers restarted RESTARTS
    times each (PastBackoffLimit: every replica of an OnFailure, Always or ExitCode policy;
    no limit, never; a limit of 0, at the first restart)."""
    limit = job["spec"].get("runPolicy", {}).get("backoffLimit")
    if limit is None:
        return False
    policies = {s.get("restartPolicy") for s in job["spec"]["tfReplicaSpecs"].values()}
    if not policies & {"OnFailure", "Always", "ExitCode"}:
        return False
    total = sum(restarts)
    return total > 0 if limit == 0 else total >= limit
