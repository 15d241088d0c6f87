"""What the Kubernetes API server and Kubeflow Trainer v2 refuse in a TrainJob and a
TrainingRuntime, checked offline, and the env Kubernetes gives a TrainJob's pods.

A contract test of kubeflow/trainer v2.3.0 (658725bda), which cannot run here:

- ``contracts/trainjob-v1alpha1.schema.json`` and
  ``contracts/trainingruntime-v1alpha1.schema.json``: the ``openAPIV3Schema`` of
  ``manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml`` and
  ``..._trainingruntimes.yaml`` at that commit (``python tests/trainjob_contract.py
  TRAINJOBS.yaml TRAININGRUNTIMES.yaml`` writes them again), unknown fields refused
  (``crd_schemas``), and by hand the CEL rules these objects meet: the TrainJob's name
  (a DNS-1035 label of at most 63), ``managedBy``'s two values, an initializer's
  ``storageUri``; the mlPolicy's one framework at most.
- ``trainjob_webhook_errors``: pkg/webhooks/trainjob_webhook.go:110-121 (the runtime's
  kind and group, defaulted by the CRD, one of the two registered), then
  pkg/runtime/core/trainingruntime.go:304-317 and clustertrainingruntime.go:99-107 (the
  named runtime exists: a TrainingRuntime in the TrainJob's namespace, or a
  ClusterTrainingRuntime; the runtimes are the caller's: k8s/'s, in either kind),
  then the one validation plugin that applies to a runtime with no framework,
  pkg/runtime/framework/plugins/jobset/jobset.go:174-206: a runtimePatches manager is a
  domain-prefixed path; a patched replicated job and its (init) containers exist in the
  runtime; no env in a patched ``dataset-initializer``, ``model-initializer`` or ``node``
  container (an init container's env is not checked) (torch, mpi, xgboost, flux and
  volcano return at once without their policy; jax validates nothing).
- ``runtime_webhook_errors``: pkg/webhooks/trainingruntime_webhook.go:66-104: a
  replicated job of the trainer ancestor has one replica and a ``node`` container.
- ``jobset_webhook_errors``: the JobSet the Trainer makes of a TrainJob (named as it, the
  runtime's replicated jobs, the ``node`` Job's completions its ``numNodes``, PlainML),
  as kubernetes-sigs/jobset v0.12.0's webhook checks it (pkg/webhooks/jobset_webhook.go:
  234-256, ``placement.GenJobName`` and ``GenPodName``): each Job's name and its last
  pod's name with a 5-letter suffix must be DNS-1035 labels. The Trainer applies the
  JobSet after taking the TrainJob, and on a refusal records an event only
  (pkg/controller/trainjob_controller.go:107-119): ``fake_k8s_api`` then leaves the
  TrainJob without a condition.
- ``node_env``: the variables the ``node`` container of pod INDEX gets: the runtime's,
  the TrainJob's upserted (plainml.go:55-65, apply.UpsertEnvVars), the completion-index
  annotation read by ``fieldRef``, and ``$(VAR)`` expanded as kubelet expands it
  (kubernetes third_party/forked/golang/expansion/expand.go: a variable defined
  earlier in the list, ``$$`` for ``$``, an unknown one left as written).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import crd_schemas
from crd_schemas import dns_1035

TRAINJOB_SCHEMA = "trainjob-v1alpha1.schema.json"
RUNTIME_SCHEMA = "trainingruntime-v1alpha1.schema.json"
# pkg/constants/constants.go:41, 66, 69.
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER = "trainer"
NODE = "node"
# trainingruntime_webhook.go:40-44, the container each ancestor's job must have.
_ANCESTOR_CONTAINERS = {
    TRAINER: NODE,
    "model-initializer": "model-initializer",
    "dataset-initializer": "dataset-initializer",
}
_FRAMEWORKS = ("torch", "mpi", "jax", "xgboost", "flux")
# apimachinery's IsDomainPrefixedPath: a DNS-1123 subdomain, "/", a non-empty path.
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")
COMPLETION_INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
_REFERENCE = re.compile(r"\$\$|\$\(([^)]*)\)")
GROUP = "trainer.kubeflow.org"
# The runtimes the TrainJob webhook knows (runtime.RuntimeRefToRuntimeRegistryKey).
_RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
# The containers a runtime patch may not give env to (jobset.go:199-202).
_NO_ENV_CONTAINERS = ("dataset-initializer", "model-initializer", NODE)
# The CRD's managedBy values and an initializer's storageUri rule.
_MANAGERS = ("trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue")
# CEL's matches() is RE2's: its $ is the text's end (Python's would pass a trailing newline).
_STORAGE_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://.+")


def trainjob_schema_errors(job: dict) -> list[str]:
    """The CRD schema's and its CEL rules' complaints about a TrainJob."""
    errors = crd_schemas.schema_errors(TRAINJOB_SCHEMA, job)
    name = job.get("metadata", {}).get("name", "")
    if not dns_1035(name):  # the CRD's x-kubernetes-validations on the object
        errors.append(f"<root>: metadata.name must match RFC 1035 DNS label format: {name!r}")
    spec = job.get("spec", {})
    if "managedBy" in spec and spec["managedBy"] not in _MANAGERS:
        errors.append("spec.managedBy: ManagedBy must be trainer.kubeflow.org/trainjob-controller "
                      "or kueue.x-k8s.io/multikueue if set")  # fmt: skip
    for source in ("dataset", "model"):
        uri = spec.get("initializer", {}).get(source, {}).get("storageUri", "")
        if uri and not _STORAGE_URI.fullmatch(uri):
            errors.append(f"spec.initializer.{source}.storageUri: storageUri may be empty, or "
                          "it must be a valid URI (scheme://...)")  # fmt: skip
    return errors


def runtime_schema_errors(runtime: dict) -> list[str]:
    """The CRD schema's and its CEL rules' complaints about a TrainingRuntime."""
    errors = crd_schemas.schema_errors(RUNTIME_SCHEMA, runtime)
    policy = runtime.get("spec", {}).get("mlPolicy", {})
    if sum(name in policy for name in _FRAMEWORKS) > 1:  # mlPolicy's rule
        errors.append("spec.mlPolicy: Only one of the policy can be configured")
    return errors


def _replicated_jobs(runtime: dict) -> list[dict]:
    return runtime["spec"]["template"]["spec"]["replicatedJobs"]


def runtime_webhook_errors(runtime: dict) -> list[str]:
    """The TrainingRuntime webhook's complaints (validateReplicatedJobs)."""
    errors = []
    for index, job in enumerate(_replicated_jobs(runtime)):
        ancestor = job.get("template", {}).get("metadata", {}).get("labels", {})
        ancestor = ancestor.get(ANCESTOR_LABEL)
        if ancestor not in _ANCESTOR_CONTAINERS:
            continue
        path = f"spec.template.spec.replicatedJobs[{index}]"
        if job.get("replicas", 1) != 1:
            errors.append(f"{path}.replicas: Invalid value: must be 1")
        containers = job["template"]["spec"]["template"]["spec"].get("containers", [])
        if not any(c.get("name") == _ANCESTOR_CONTAINERS[ancestor] for c in containers):
            errors.append(
                f"{path}.template.spec.template.spec.containers: Invalid value: must have "
                f"container with name {_ANCESTOR_CONTAINERS[ancestor]!r}"
            )
    return errors


def jobset_webhook_errors(job: dict, runtime: dict) -> list[str]:
    """JobSet's webhook's complaints about the JobSet the Trainer makes of JOB."""
    name, errors = job["metadata"]["name"], []
    for rjob in _replicated_jobs(runtime):
        replicas = rjob.get("replicas", 1)
        spec = rjob["template"]["spec"]
        completions = spec.get("completions", 1)
        if rjob["name"] == NODE:  # PlainML: the trainer's Job runs numNodes pods.
            completions = job["spec"]["trainer"].get("numNodes", completions)
        longest_job = f"{name}-{rjob['name']}-{replicas - 1}"
        if not dns_1035(longest_job):
            errors.append(
                "JobSet name is too long, job names generated for this JobSet will exceed 63 "
                "characters"
            )
        if spec.get("completionMode") == "Indexed":
            longest_pod = f"{longest_job}-{completions - 1}-abcde"
            if not dns_1035(longest_pod):
                errors.append(
                    "JobSet name is too long, pod names generated for this JobSet will exceed "
                    "63 characters"
                )
    return errors


def _domain_prefixed_path(value: str) -> bool:
    domain, slash, path = value.partition("/")
    return bool(slash) and bool(_SUBDOMAIN.fullmatch(domain)) and bool(_PATH.fullmatch(path))


def cluster_runtime(runtime: dict) -> dict:
    """RUNTIME as the ClusterTrainingRuntime of k8s/overlays/trainjob-cluster-runtime (its patch
    changes the kind alone): the same schema and webhook rules (the two CRDs' schemas differ
    in descriptions only; clustertrainingruntime_webhook.go calls validateReplicatedJobs)."""
    return {**runtime, "kind": "ClusterTrainingRuntime"}


def trainjob_webhook_errors(job: dict, *runtimes: dict) -> list[str]:
    """The TrainJob webhook's complaints about JOB in a cluster whose runtimes are RUNTIMES
    (a TrainingRuntime in the job's namespace, a ClusterTrainingRuntime)."""
    reference = job["spec"].get("runtimeRef", {})
    # The CRD's defaults, which the API server applies before the webhook sees the object.
    kind = reference.get("kind", "ClusterTrainingRuntime")
    group = reference.get("apiGroup", GROUP)
    if group != GROUP or kind not in _RUNTIME_KINDS:
        # schema.GroupKind's String(): the kind alone when the group is empty.
        return [f"unsupported runtime: {kind}.{group}" if group else f"unsupported runtime: {kind}"]
    found = [
        r for r in runtimes if (r["kind"], r["metadata"]["name"]) == (kind, reference.get("name"))
    ]
    if not found:
        # The client's NotFound error, then the runtime's own words (trainingruntime.go:304-314,
        # clustertrainingruntime.go:99-107, whose path is spelt spec.RuntimeRef).
        path = "spec.runtimeRef" if kind == "TrainingRuntime" else "spec.RuntimeRef"
        return [
            f"{path}: Invalid value: {reference}: {kind.lower()}s.{GROUP} "
            f'"{reference.get("name")}" not found: specified {kind[0].lower()}{kind[1:]} must '
            "be created before the TrainJob is created"
        ]
    runtime = found[0]
    containers = {
        rjob["name"]: {
            c["name"]
            for kind in ("initContainers", "containers")
            for c in rjob["template"]["spec"]["template"]["spec"].get(kind, [])
        }
        for rjob in _replicated_jobs(runtime)
    }
    errors = []
    for patch in job["spec"].get("runtimePatches", []):
        if not _domain_prefixed_path(patch.get("manager", "")):
            errors.append(f"spec.runtimePatches.manager: Invalid value: {patch.get('manager')!r}")
        spec = patch.get("trainingRuntimeSpec", {}).get("template", {}).get("spec", {})
        for rjob in spec.get("replicatedJobs", []):
            if rjob["name"] not in containers:
                errors.append(
                    "spec.runtimePatches: Invalid value: must not have replicated job that "
                    "doesn't exist in the runtime job template"
                )
                continue
            pod = rjob.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})
            for container in pod.get("initContainers", []):
                if container["name"] not in containers[rjob["name"]]:
                    errors.append(
                        "spec.runtimePatches: Invalid value: must not have initContainer that "
                        f"doesn't exist in the runtime job {rjob['name']}"
                    )
            for container in pod.get("containers", []):
                if container["name"] not in containers[rjob["name"]]:
                    errors.append(
                        "spec.runtimePatches: Invalid value: must not have container that "
                        f"doesn't exist in the runtime job {rjob['name']}"
                    )
                elif container.get("env") and container["name"] in _NO_ENV_CONTAINERS:
                    errors.append(
                        "spec.runtimePatches: Invalid value: must not have envs for the "
                        "dataset-initializer, model-initializer, node containers"
                    )
    return errors


def _expand(text: str, defined: dict[str, str]) -> str:
    def replace(match):
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return defined.get(name, match.group(0))

    return _REFERENCE.sub(replace, text)


def node_env(job: dict, runtime: dict, index: int, secrets=None) -> dict[str, str]:
    """The ``node`` container's variables in the pod of completion index INDEX, in order.

    Raises:
      KeyError: a Secret or key SECRETS does not hold, or a fieldRef other than the index.
    """
    [node] = [
        c
        for rjob in _replicated_jobs(runtime)
        for c in rjob["template"]["spec"]["template"]["spec"]["containers"]
        if c["name"] == NODE
    ]
    variables: list[dict] = [dict(v) for v in node.get("env", [])]
    for variable in job["spec"].get("trainer", {}).get("env", []):  # UpsertEnvVars
        same = [i for i, v in enumerate(variables) if v["name"] == variable["name"]]
        if same:
            variables[same[0]] = dict(variable)
        else:
            variables.append(dict(variable))
    values: dict[str, str] = {}
    for variable in variables:
        source = variable.get("valueFrom")
        if source is None:
            values[variable["name"]] = _expand(variable.get("value", ""), values)
        elif "fieldRef" in source:
            if source["fieldRef"]["fieldPath"] != COMPLETION_INDEX_FIELD:
                raise KeyError(f"fieldRef {source['fieldRef']['fieldPath']!r}")
            values[variable["name"]] = str(index)
        else:
            ref = source["secretKeyRef"]
            values[variable["name"]] = (secrets or {})[ref["name"]][ref["key"]]
    return values


if __name__ == "__main__":
    crd_schemas.write_schema(Path(sys.argv[1]), "v1alpha1", TRAINJOB_SCHEMA)
    crd_schemas.write_schema(Path(sys.argv[2]), "v1alpha1", RUNTIME_SCHEMA)
