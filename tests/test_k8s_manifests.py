"""Checks the manifests under k8s/ without a cluster or a kustomize binary.

Every Kubernetes object (patches included) is validated against the API
schema of one pinned Kubernetes version; the kustomization files are checked
for what kustomize would trip on (missing files, unknown patch targets,
replacements pointing nowhere); and the cross-file facts the pipeline relies
on are asserted: the RBAC, the pipeline root, the credentials Secret, the
serving claim compile mounts, and the GPU quota.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import kubernetes_validate
import pytest
import yaml
from kubernetes.utils import parse_quantity

from conftest import REPO_ROOT
from fake_k8s_api import KUBEFLOW_EDIT_RULES, FakeK8sApi, role_rules
from tfrecord_pipelines.cli import data_service
from tfrecord_pipelines.cli.kubeflow_commands import DEFAULT_SERVING_PVC
from tfrecord_pipelines.kubeflow import platform_spec
from tfrecord_pipelines.kubeflow.training_job import train_job
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import NVIDIA_GPU
from trainjob_contract import cluster_runtime, runtime_schema_errors, runtime_webhook_errors

K8S_DIR = REPO_ROOT / "k8s"
BASE_DIR = K8S_DIR / "base"
README = K8S_DIR / "README.md"
# The API schema every manifest must pass (strict: no unknown fields). 1.31 is
# the newest version every kubernetes-validate release the dev dependency
# allows (>=1.31) bundles; the manifests use only stable v1 APIs, which newer
# clusters serve unchanged.
KUBERNETES_VERSION = "1.31"
KUSTOMIZATION_FILE = "kustomization.yaml"
# kustomize marks a strategic merge patch that removes an object so.
PATCH_DIRECTIVE = "$patch"
SERVICE_ACCOUNT = "tfrecord-pipelines-runner"
LAUNCHER_CONFIG_MAP = "kfp-launcher"
# The fields KFP's driver reads from kfp-launcher's `providers`
# (kubeflow/pipelines backend/src/v2/config/s3.go and gcs.go). KFP unmarshals
# with encoding/json, which ignores unknown keys: a misspelt one is silently
# dropped, so check them here.
S3_DEFAULT_KEYS = {
    "endpoint",
    "credentials",
    "region",
    "disableSSL",
    "forcePathStyle",
    "maxRetries",
}
S3_SECRET_REF_KEYS = {"secretName", "accessKeyKey", "secretKeyKey"}
GCS_DEFAULT_KEYS = {"credentials"}
GCS_SECRET_REF_KEYS = {"secretName", "tokenKey"}
CREDENTIALS_KEYS = {"fromEnv", "secretRef"}
# Pipeline root schemes KFP's launcher opens, and the `providers` key of each.
ROOT_SCHEME_PROVIDERS = {"s3": "s3", "gs": "gs", "minio": "minio"}
RBAC_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
KUSTOMIZATION_KEYS = {
    "apiVersion",
    "kind",
    "namespace",
    "labels",
    "resources",
    "components",
    "patches",
    "replacements",
}


def _documents(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def _manifest_files() -> list[Path]:
    return sorted(
        p for p in K8S_DIR.rglob("*.y*ml") if p.is_file() and p.name != KUSTOMIZATION_FILE
    )


def _kustomization_dirs() -> list[Path]:
    return sorted(p.parent for p in K8S_DIR.rglob(KUSTOMIZATION_FILE))


def _kustomization(directory: Path) -> dict:
    (doc,) = _documents(directory / KUSTOMIZATION_FILE)
    return doc


def _patch_paths(directory: Path) -> list[Path]:
    """The files of a Kustomization's patches (an inline one has a `patch:` and a `target:`)."""
    patches = _kustomization(directory).get("patches", [])
    return [directory / entry["path"] for entry in patches if "path" in entry]


def _built_objects(directory: Path) -> Iterator[dict]:
    """The objects a Kustomization's `resources:` and its components bring in, before its
    patches."""
    kustomization = _kustomization(directory)
    for entry in [*kustomization.get("resources", []), *kustomization.get("components", [])]:
        path = (directory / entry).resolve()
        if path.is_dir():
            yield from _built_objects(path)
        else:
            yield from _documents(path)


def _own_objects(directory: Path) -> list[dict]:
    """The objects a Kustomization adds itself (its files, its components'), which only its
    own `namespace:` reaches: a base's stays with the base's objects."""
    kustomization = _kustomization(directory)
    objects = []
    for entry in kustomization.get("resources", []):
        if not (directory / entry).is_dir():
            objects += _documents(directory / entry)
    for entry in kustomization.get("components", []):
        objects += _built_objects((directory / entry).resolve())
    return objects


def _patched_objects(directory: Path) -> list[dict]:
    """The objects a Kustomization's or Component's patches may target."""
    if _kustomization(directory)["kind"] == "Kustomization":
        return list(_built_objects(directory))
    # A Component patches whatever includes it.
    objects = []
    for user in _kustomization_dirs():
        components = _kustomization(user).get("components", [])
        if any((user / c).resolve() == directory.resolve() for c in components):
            objects += _built_objects(user)
    return objects


def _key(obj: dict) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def _objects_of_kind(kind: str) -> list[tuple[Path, dict]]:
    return [(p, doc) for p in _manifest_files() for doc in _documents(p) if doc["kind"] == kind]


def _in_dir(directory: Path, kind: str, name: str) -> dict:
    matches = [
        doc
        for p in sorted(directory.glob("*.yaml"))
        if p.name != KUSTOMIZATION_FILE
        for doc in _documents(p)
        if _key(doc) == (kind, name)
    ]
    assert len(matches) == 1, f"{directory} should define {kind}/{name} once, has {len(matches)}"
    return matches[0]


def _providers(config_map: dict) -> dict:
    return yaml.safe_load(config_map["data"]["providers"])


def _secret_refs(providers: dict) -> set[str]:
    names = set()
    for provider in providers.values():
        configs = [provider.get("default") or {}, *provider.get("Overrides", [])]
        for config in configs:
            ref = (config.get("credentials") or {}).get("secretRef")
            if ref:
                names.add(ref["secretName"])
    return names


@pytest.mark.parametrize("path", _manifest_files(), ids=lambda p: str(p.relative_to(K8S_DIR)))
def test_manifest_validates_against_kubernetes_schema(path):
    documents = _documents(path)
    assert documents, f"{path} holds no Kubernetes object"
    for doc in documents:
        # A deleting patch names its target; the object without the directive is what must exist.
        obj = {k: v for k, v in doc.items() if k != PATCH_DIRECTIVE}
        if obj["apiVersion"].startswith(f"{train_job.API.group}/"):
            # Kubeflow Trainer v2's own kinds: its CRD's schema and webhook (v2.3.0).
            assert runtime_schema_errors(obj) == runtime_webhook_errors(obj) == []
            continue
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_manifests_use_no_cluster_scoped_rbac_and_commit_no_secrets():
    kinds = {doc["kind"] for p in _manifest_files() for doc in _documents(p)}
    assert not kinds & {"ClusterRole", "ClusterRoleBinding"}, kinds
    # Credentials are created by the user (see the README), never stored in git.
    assert "Secret" not in kinds


@pytest.mark.parametrize(
    "directory", _kustomization_dirs(), ids=lambda p: str(p.relative_to(K8S_DIR))
)
def test_kustomization_lists_existing_files_and_every_file_is_listed(directory):
    kustomization = _kustomization(directory)
    assert set(kustomization) <= KUSTOMIZATION_KEYS, set(kustomization) - KUSTOMIZATION_KEYS
    expected = {
        "Kustomization": "kustomize.config.k8s.io/v1beta1",
        "Component": "kustomize.config.k8s.io/v1alpha1",
    }
    assert kustomization["apiVersion"] == expected[kustomization["kind"]]
    listed = set()
    for entry in kustomization.get("resources", []):
        path = (directory / entry).resolve()
        assert path.is_file() or (path / KUSTOMIZATION_FILE).is_file(), f"{entry} is missing"
        listed.add(path)
    for entry in kustomization.get("components", []):
        component = _kustomization((directory / entry).resolve())
        assert component["kind"] == "Component", f"{entry} is a {component['kind']}"
    for path in _patch_paths(directory):
        assert path.is_file(), f"patch {path} is missing"
        listed.add(path.resolve())
    here = {p.resolve() for p in directory.glob("*.y*ml") if p.name != KUSTOMIZATION_FILE}
    assert here <= listed, f"not in {directory / KUSTOMIZATION_FILE}: {here - listed}"


# Kinds with no namespace: the one a cluster admin installs for every namespace's TrainJobs.
CLUSTER_SCOPED = {"ClusterTrainingRuntime"}
CLUSTER_RUNTIME_DIR = K8S_DIR / "overlays" / "trainjob-cluster-runtime"


def test_every_kustomization_puts_its_objects_in_one_namespace():
    """kustomize's `namespace:` reaches a Kustomization's own files and its components'
    objects, not a base's (`kubectl kustomize k8s/overlays/trainer-workers` on 539f1ef put
    its Role and RoleBinding in no namespace: kubectl's current one). So a Kustomization
    that adds objects sets its own, and the cluster-scoped runtime's sets none."""

    def namespace(directory: Path) -> str | None:
        kustomization = _kustomization(directory)
        if "namespace" in kustomization:
            return kustomization["namespace"]
        bases = [
            (directory / r).resolve()
            for r in kustomization.get("resources", [])
            if (directory / r).is_dir()
        ]
        found = {namespace(b) for b in bases}
        return found.pop() if len(found) == 1 else None

    assert _kustomization(BASE_DIR)["namespace"] == "tfrecord-pipelines"
    kustomizations = [
        d for d in _kustomization_dirs() if _kustomization(d)["kind"] == "Kustomization"
    ]
    for directory in kustomizations:
        if directory == CLUSTER_RUNTIME_DIR:
            assert "namespace" not in _kustomization(directory)
            continue
        assert namespace(directory), f"{directory} puts objects in no one namespace"
        if _own_objects(directory):
            assert "namespace" in _kustomization(directory), (
                f"{directory} adds objects but sets no namespace: they would land in "
                "kubectl's current one"
            )


@pytest.mark.parametrize(
    "directory",
    [d for d in _kustomization_dirs() if _kustomization(d).get("patches")],
    ids=lambda p: str(p.relative_to(K8S_DIR)),
)
def test_patches_target_objects_that_exist(directory):
    targets = {_key(obj) for obj in _patched_objects(directory)}
    assert targets, f"nothing includes {directory}"
    for path in _patch_paths(directory):
        for patch in _documents(path):
            assert _key(patch) in targets, f"{path} patches {_key(patch)}, which is not built"
    for entry in _kustomization(directory)["patches"]:
        if "patch" in entry:
            target = (entry["target"]["kind"], entry["target"]["name"])
            assert target in targets, f"{directory} patches {target}, which is not built"


def _replaced_bindings(kustomization: dict) -> set[str]:
    """The RoleBindings whose subject's namespace the Kustomization's replacements copy from
    the runner's ServiceAccount."""
    source = {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "fieldPath": "metadata.namespace"}
    return {
        target["select"]["name"]
        for replacement in kustomization.get("replacements", [])
        if replacement["source"] == source
        for target in replacement["targets"]
        if target["select"]["kind"] == "RoleBinding"
        and target["fieldPaths"] == ["subjects.0.namespace"]
    }


def test_rolebinding_subject_follows_the_namespace_wherever_it_is_set():
    for directory in _kustomization_dirs():
        kustomization = _kustomization(directory)
        if "namespace" not in kustomization:
            continue
        objects = {_key(o): o for o in _built_objects(directory)}
        assert ("ServiceAccount", SERVICE_ACCOUNT) in objects
        # kustomize moves a RoleBinding's subject only when it is named "default": every
        # binding of the runner, the base's and the components', follows it by replacement.
        runner_bindings = {
            name
            for (kind, name), obj in objects.items()
            if kind == "RoleBinding" and [s["name"] for s in obj["subjects"]] == [SERVICE_ACCOUNT]
        }
        assert runner_bindings >= {SERVICE_ACCOUNT}
        assert _replaced_bindings(kustomization) == runner_bindings, directory
        for name in runner_bindings:
            (subject,) = objects["RoleBinding", name]["subjects"]
            # The field the replacement writes must exist for kustomize to write it.
            assert subject["kind"] == "ServiceAccount" and "namespace" in subject


def test_rolebinding_binds_the_service_account_to_the_role():
    binding = _in_dir(BASE_DIR, "RoleBinding", SERVICE_ACCOUNT)
    _in_dir(BASE_DIR, "ServiceAccount", SERVICE_ACCOUNT)
    role = binding["roleRef"]
    assert role["kind"] == "Role" and role["apiGroup"] == "rbac.authorization.k8s.io"
    _in_dir(BASE_DIR, "Role", role["name"])
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": "tfrecord-pipelines"}
    ]


SPARK_DIR = K8S_DIR / "components" / "spark-executors"
SPARK_DRIVER_ROLE = "tfrecord-pipelines-spark-driver"
TRAINER_WORKERS_DIR = K8S_DIR / "components" / "trainer-workers"
TRAINER_WORKERS_ROLE = "tfrecord-pipelines-trainer-workers"
TRAINJOB_WORKERS_DIR = K8S_DIR / "components" / "trainjob-workers"
TRAINJOB_WORKERS_ROLE = "tfrecord-pipelines-trainjob-workers"
TRAINJOB_RUNTIME_DIR = K8S_DIR / "components" / "trainjob-runtime"


@pytest.mark.parametrize(
    "path",
    [
        p
        for p, _ in _objects_of_kind("Role")
        if p.parent not in (SPARK_DIR, TRAINER_WORKERS_DIR, TRAINJOB_WORKERS_DIR)
    ],
    ids=lambda p: str(p.relative_to(K8S_DIR)),
)
def test_role_is_least_privilege(path):
    (role,) = [doc for doc in _documents(path) if doc["kind"] == "Role"]
    rules = role["rules"]
    for rule in rules:
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert not any("*" in value for value in rule.get(field, [])), f"{field} in {rule}"
        assert set(rule["verbs"]) <= RBAC_VERBS, rule
        # The core group's objects may be read only by name.
        if rule["apiGroups"] == [""]:
            assert rule["verbs"] == ["get"] and rule.get("resourceNames"), rule
    # Argo's executor (>= 3.4) reports outputs through workflowtaskresults.
    assert {
        "apiGroups": ["argoproj.io"],
        "resources": ["workflowtaskresults"],
        "verbs": ["create", "patch"],
    } in rules
    # KFP's driver reads the launcher configuration.
    assert {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "resourceNames": [LAUNCHER_CONFIG_MAP],
        "verbs": ["get"],
    } in rules


@pytest.mark.parametrize(
    "directory",
    sorted(
        {p.parent for p, doc in _objects_of_kind("ConfigMap") if _key(doc)[1] == "kfp-launcher"}
    ),
    ids=lambda p: str(p.relative_to(K8S_DIR)),
)
def test_kfp_launcher_root_is_an_object_store_uri_with_a_provider(directory):
    config_map = _in_dir(directory, "ConfigMap", LAUNCHER_CONFIG_MAP)
    assert set(config_map["data"]) == {"defaultPipelineRoot", "providers"}
    root = urlparse(config_map["data"]["defaultPipelineRoot"])
    assert root.scheme in ROOT_SCHEME_PROVIDERS and root.netloc and root.path.strip("/"), root
    providers = _providers(config_map)
    assert set(providers) == {ROOT_SCHEME_PROVIDERS[root.scheme]}
    default_keys, ref_keys = {
        "s3": (S3_DEFAULT_KEYS, S3_SECRET_REF_KEYS),
        "gs": (GCS_DEFAULT_KEYS, GCS_SECRET_REF_KEYS),
    }[root.scheme]
    default = providers[root.scheme]["default"]
    assert set(default) <= default_keys, set(default) - default_keys
    credentials = default["credentials"]
    assert set(credentials) <= CREDENTIALS_KEYS, credentials
    if credentials.get("fromEnv"):
        assert "secretRef" not in credentials
    else:
        assert set(credentials["secretRef"]) == ref_keys


def test_referenced_secrets_are_readable_and_documented_for_the_user_to_create():
    readme = README.read_text(encoding="utf-8")
    referenced = set()
    for path, config_map in _objects_of_kind("ConfigMap"):
        if _key(config_map) != ("ConfigMap", LAUNCHER_CONFIG_MAP):
            continue
        names = _secret_refs(_providers(config_map))
        # The Role beside each launcher configuration grants exactly those Secrets.
        role = _in_dir(path.parent, "Role", SERVICE_ACCOUNT)
        readable = {
            name
            for rule in role["rules"]
            if "secrets" in rule["resources"]
            for name in rule["resourceNames"]
        }
        assert readable == names, f"{path.parent}: Role reads {readable}, launcher uses {names}"
        referenced |= names
        for provider in _providers(config_map).values():
            ref = provider["default"]["credentials"].get("secretRef")
            if not ref:
                continue
            command = re.search(
                rf"kubectl .*create secret generic {re.escape(ref['secretName'])}(.*\\\n)*.*",
                readme,
            )
            assert command, f"README shows no `kubectl create secret` for {ref['secretName']}"
            for key in (ref["accessKeyKey"], ref["secretKeyKey"]):
                assert f"{key}=" in command.group(0), f"README's command lacks {key}"
    assert referenced == {"tfrecord-pipelines-s3-credentials"}


def test_serving_claim_is_the_one_compile_mounts():
    # compile's --serving-pvc default names this claim.
    claim = _in_dir(BASE_DIR, "PersistentVolumeClaim", DEFAULT_SERVING_PVC)
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    # Left to the cluster's default StorageClass.
    assert "storageClassName" not in claim["spec"]
    assert parse_quantity(claim["spec"]["resources"]["requests"]["storage"]) > 0


def test_gpu_quota_and_default_limits():
    quota = _in_dir(BASE_DIR, "ResourceQuota", "tfrecord-pipelines-gpus")
    assert list(quota["spec"]["hard"]) == [f"requests.{NVIDIA_GPU}"]
    assert int(quota["spec"]["hard"][f"requests.{NVIDIA_GPU}"]) >= 1
    limit_range = _in_dir(BASE_DIR, "LimitRange", "tfrecord-pipelines-defaults")
    (limits,) = limit_range["spec"]["limits"]
    assert limits["type"] == "Container"
    for resource in ("cpu", "memory"):
        request = parse_quantity(limits["defaultRequest"][resource])
        assert 0 < request <= parse_quantity(limits["default"][resource]), resource


def test_readme_describes_every_file_and_the_scheduling_defaults():
    readme = README.read_text(encoding="utf-8")
    for path in [*_manifest_files(), *(d / KUSTOMIZATION_FILE for d in _kustomization_dirs())]:
        assert str(path.relative_to(K8S_DIR)) in readme, f"README does not describe {path}"
    selector = ",".join(f"{k}={v}" for k, v in platform_spec.DEFAULT_GPU_NODE_SELECTOR.items())
    for text in (
        selector,
        platform_spec.DEFAULT_GPU_TOLERATION,
        "--gpu-node-selector KEY=VALUE",
        "--gpu-toleration KEY[=VALUE]:EFFECT",
        f"--serving-pvc {DEFAULT_SERVING_PVC}",
        f"requests.{NVIDIA_GPU}",
    ):
        assert text in readme, f"README does not mention {text}"


DATA_SERVICE_DIR = K8S_DIR / "components" / "data-service"


def _container(workload: dict) -> dict:
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    return container


def _server_arguments(workload: dict):
    """The entry point's own parse of a server's command line (it exits on a bad one)."""
    container = _container(workload)
    assert container["command"] == ["python", "-m", "tfrecord_pipelines.cli.data_service"]
    return data_service.build_parser().parse_args(container["args"])


def test_data_service_address_compile_writes_is_the_dispatchers_service():
    host, port = data_service.KUBERNETES_DISPATCHER.split(":")
    dispatcher_service = _in_dir(DATA_SERVICE_DIR, "Service", host)
    dispatcher = _in_dir(DATA_SERVICE_DIR, "StatefulSet", host)
    (service_port,) = dispatcher_service["spec"]["ports"]
    assert service_port["port"] == int(port)
    labels = dispatcher["spec"]["template"]["metadata"]["labels"]
    assert dispatcher_service["spec"]["selector"].items() <= labels.items()
    arguments = _server_arguments(dispatcher)
    assert (arguments.server, arguments.port) == ("dispatcher", int(port))
    # The journal is on the StatefulSet's volume, so a restarted dispatcher finds it.
    (journal,) = dispatcher["spec"]["volumeClaimTemplates"]
    mounts = {m["name"]: m["mountPath"] for m in _container(dispatcher)["volumeMounts"]}
    assert arguments.journal.startswith(mounts[journal["metadata"]["name"]] + "/")


def test_data_service_workers_come_back_at_their_address_and_reach_the_dispatcher():
    workers = _in_dir(DATA_SERVICE_DIR, "StatefulSet", "tfdata-worker")
    headless = _in_dir(DATA_SERVICE_DIR, "Service", workers["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    arguments = _server_arguments(workers)
    assert arguments.dispatcher == data_service.KUBERNETES_DISPATCHER
    # A stable DNS name per pod: a recreated worker is found where its tasks were.
    name = headless["metadata"]["name"]
    assert arguments.worker_address == (f"$(POD_NAME).{name}.$(POD_NAMESPACE).svc:{arguments.port}")
    env = {e["name"] for e in _container(workers)["env"]}
    assert {"POD_NAME", "POD_NAMESPACE"} <= env
    (service_port,) = headless["spec"]["ports"]
    assert service_port["port"] == arguments.port


def test_data_service_runs_as_non_root_with_requests_and_scales_workers_up_only():
    for kind, name in (("StatefulSet", "tfdata-dispatcher"), ("StatefulSet", "tfdata-worker")):
        workload = _in_dir(DATA_SERVICE_DIR, kind, name)
        assert workload["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
        resources = _container(workload)["resources"]
        for resource in ("cpu", "memory"):
            request = parse_quantity(resources["requests"][resource])
            assert 0 < request <= parse_quantity(resources["limits"][resource])
    autoscaler = _in_dir(DATA_SERVICE_DIR, "HorizontalPodAutoscaler", "tfdata-worker")
    target = autoscaler["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("StatefulSet", "tfdata-worker")
    assert autoscaler["spec"]["behavior"]["scaleDown"]["selectPolicy"] == "Disabled"


def _component_role_of_the_runner(component: Path, role_name: str, overlay: str) -> dict:
    """A component's Role, checked bound to the run's service account (its pods run as it)
    in the overlay that adds the component; returns the Role."""
    documents = _documents(component / "rbac.yaml")
    (role,) = [d for d in documents if d["kind"] == "Role"]
    (binding,) = [d for d in documents if d["kind"] == "RoleBinding"]
    assert role["metadata"]["name"] == role_name
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role_name,
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": "tfrecord-pipelines"}
    ]
    built = K8S_DIR / "overlays" / overlay
    assert f"../../components/{component.name}" in _kustomization(built)["components"]
    assert ("ServiceAccount", SERVICE_ACCOUNT) in {_key(o) for o in _built_objects(built)}
    assert role_name in _replaced_bindings(_kustomization(built))
    return role


def test_spark_driver_may_run_executor_pods_and_nothing_more():
    # The ExampleGen pod, Spark's driver, runs as the run's service account.
    role = _component_role_of_the_runner(SPARK_DIR, SPARK_DRIVER_ROLE, "spark")
    lifecycle = ["create", "get", "list", "watch", "delete", "deletecollection"]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": lifecycle},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": lifecycle},
    ]


def test_the_trainers_task_may_run_its_tfjob():
    """Its rules are held to the calls the task makes by test_tf_job_runner."""
    _component_role_of_the_runner(TRAINER_WORKERS_DIR, TRAINER_WORKERS_ROLE, "trainer-workers")


def test_the_trainers_task_may_run_its_trainjob_on_the_runtime_k8s_installs():
    """Its rules are held to the calls the task makes by test_tf_job_runner."""
    _component_role_of_the_runner(TRAINJOB_WORKERS_DIR, TRAINJOB_WORKERS_ROLE, "trainjob-workers")
    runtime = _in_dir(TRAINJOB_RUNTIME_DIR, "TrainingRuntime", train_job.DEFAULT_RUNTIME)
    overlay = _kustomization(K8S_DIR / "overlays" / "trainjob-workers")
    assert "../../components/trainjob-runtime" in overlay["components"]
    [node] = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    [container] = node["template"]["spec"]["template"]["spec"]["containers"]
    assert [p["containerPort"] for p in container["ports"]] == [train_job.PORT]


def test_a_cluster_admin_installs_the_runtime_once_as_a_clustertrainingruntime():
    """Issue 90, finding 5: the same spec, the kind alone changed (as
    trainjob_contract.cluster_runtime, which the API stand-in serves, assumes); the CRD's
    schema and the webhook's rules are the TrainingRuntime's."""
    kustomization = _kustomization(CLUSTER_RUNTIME_DIR)
    assert kustomization["components"] == ["../../components/trainjob-runtime"]
    assert "resources" not in kustomization and "namespace" not in kustomization
    [patch] = kustomization["patches"]
    assert patch["target"] == {"kind": "TrainingRuntime", "name": train_job.DEFAULT_RUNTIME}
    assert yaml.safe_load(patch["patch"]) == [
        {"op": "replace", "path": "/kind", "value": "ClusterTrainingRuntime"}
    ]
    assert patch["options"] == {"allowKindChange": True}
    runtime = cluster_runtime(
        _in_dir(TRAINJOB_RUNTIME_DIR, "TrainingRuntime", train_job.DEFAULT_RUNTIME)
    )
    assert runtime["kind"] in CLUSTER_SCOPED
    assert runtime_schema_errors(runtime) == runtime_webhook_errors(runtime) == []


def test_a_profiles_owner_may_apply_the_trainjob_overlay():
    """Issue 90, finding 5: the profile overlay makes nothing a profile's owner may not (no
    Namespace, quota, default limits or TrainingRuntime: Trainer v2 lets an editor only read
    those), and grants only what the owner holds (RBAC refuses to grant more): every rule of
    the trainjob Role is kubeflow-edit's, which the owner's kubeflow-admin includes."""
    directory = K8S_DIR / "overlays" / "kubeflow-profile-trainjob"
    kustomization = _kustomization(directory)
    assert kustomization["resources"] == ["../kubeflow-profile"]
    assert kustomization["components"] == ["../../components/trainjob-workers"]
    dropped = {
        _key(d) for p in _patch_paths(K8S_DIR / "overlays" / "kubeflow-profile")
        for d in _documents(p)
    }  # fmt: skip
    kinds = {kind for kind, _ in {_key(o) for o in _built_objects(directory)} - dropped}
    assert not kinds & {"Namespace", "ResourceQuota", "LimitRange", "TrainingRuntime"}
    holder = FakeK8sApi()
    holder.grant("profile-owner", role_rules(KUBEFLOW_EDIT_RULES))
    role = _in_dir(TRAINJOB_WORKERS_DIR, "Role", TRAINJOB_WORKERS_ROLE)
    assert all(
        holder.allows(verb, group, resource)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    )
