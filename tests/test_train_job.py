"""The TrainJob the Trainer's task creates on Kubeflow Trainer v2, and k8s/'s TrainingRuntime,
against Trainer v2's contract (offline), and the TF_CONFIG each of its pods ends up with.

``trainjob_contract`` holds what kubeflow/trainer v2.3.0 refuses (its CRD schemas, the
TrainJob's and the TrainingRuntime's webhooks) and the env the ``node`` container of each
pod gets (PlainML's upsert, the completion index by fieldRef, kubelet's ``$(VAR)``
expansion). The runner's calls for a TrainJob are test_tf_job_runner's.
"""

from __future__ import annotations

import copy
import json

import kubernetes_validate
import pytest
import yaml

from conftest import REPO_ROOT
from tfrecord_pipelines.components.trainer.workers import Workers
from tfrecord_pipelines.kubeflow.platform_spec import (
    SecretEnv,
    TaskPlacement,
    Toleration,
    VolumeMount,
)
from tfrecord_pipelines.kubeflow.training_job import (
    job_api,
    train_job,
    trainer_job_spec,
    worker_template,
)
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources
from trainjob_contract import (
    jobset_webhook_errors,
    node_env,
    runtime_schema_errors,
    runtime_webhook_errors,
    trainjob_schema_errors,
    trainjob_webhook_errors,
)

KUBERNETES_VERSION = "1.31"
RUNTIME = yaml.safe_load(
    (REPO_ROOT / "k8s" / "components" / "trainjob-runtime" / "runtime.yaml").read_text()
)
POD = "daily-pipeline-8kqzt-system-container-impl-2904817311"
SECRET = "mlpipeline-minio-artifact"
PLACEMENT = TaskPlacement(
    node_selector={"nvidia.com/gpu.present": "true"},
    tolerations=(Toleration("nvidia.com/gpu"),),
    volumes=(VolumeMount("tfrecord-pipelines-serving", "/pipeline"),),
    secret_env=(SecretEnv(SECRET, (("accesskey", "AWS_ACCESS_KEY_ID"),)),),
)


def _job(workers: int = 4, service_account=None, image_pull_secrets=(), **template_overrides):
    template = trainer_job_spec.worker_template(
        **{
            "workers": workers,
            "image": "image:gpu",
            "resources": TrainerResources(gpus=2, cpu="8"),
            "placement": PLACEMENT,
            "env": ({"name": "TF_USE_LEGACY_KERAS", "value": "1"},),
            "kind": train_job.API.kind,
            **template_overrides,
        }
    )
    return template.job(
        name=job_api.job_name(POD, train_job.API.max_name(template.workers)),
        namespace="kubeflow-user-example-com",
        command=["python", "-m", "tfrecord_pipelines.kubeflow.kfp_executor", "--tfjob_worker"],
        owner={"name": POD, "uid": "6f1c0a52-1b64-4ad4-9d3f-2b8f2e7c1d90"},
        service_account=service_account,
        image_pull_secrets=image_pull_secrets,
    )


def test_the_runtime_is_what_the_crd_schema_and_the_webhook_accept():
    assert runtime_schema_errors(RUNTIME) == []
    assert runtime_webhook_errors(RUNTIME) == []
    [node] = RUNTIME["spec"]["template"]["spec"]["replicatedJobs"]
    assert node["template"]["spec"]["completionMode"] == "Indexed"
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "n"}}
    job["spec"] = node["template"]["spec"]
    kubernetes_validate.validate(job, KUBERNETES_VERSION, strict=True)


def test_the_job_is_what_the_crd_schema_and_the_webhook_accept():
    job = _job()
    assert trainjob_schema_errors(job) == []
    assert trainjob_webhook_errors(job, RUNTIME) == []
    spec = job["spec"]
    assert spec["runtimeRef"] == {
        "name": RUNTIME["metadata"]["name"],
        "kind": RUNTIME["kind"],
        "apiGroup": "trainer.kubeflow.org",
    }
    trainer = spec["trainer"]
    assert (trainer["numNodes"], trainer["image"]) == (4, "image:gpu")
    assert trainer["resourcesPerNode"] == {"limits": {"nvidia.com/gpu": "2", "cpu": "8"}}
    [patch] = spec["runtimePatches"]
    [node] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = node["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert pod["volumes"][0]["persistentVolumeClaim"] == {"claimName": "tfrecord-pipelines-serving"}
    assert pod["containers"] == [
        {
            "name": "node",
            "volumeMounts": [{"name": pod["volumes"][0]["name"], "mountPath": "/pipeline"}],
        }
    ]
    assert job["metadata"]["ownerReferences"][0]["name"] == POD
    assert jobset_webhook_errors(job, RUNTIME) == []


def test_the_workers_run_as_the_task_without_istios_proxy():
    """Issue 90, findings 1 and 3, as a TrainJob's patch of the ``node`` pods says it; the
    runtime says no proxy too, for a TrainJob made by hand."""
    job = _job(service_account="default-editor", image_pull_secrets=("registry",))
    [patch] = job["spec"]["runtimePatches"]
    [node] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod_template = node["template"]["spec"]["template"]
    assert pod_template["metadata"]["annotations"] == job_api.NO_SIDECAR
    assert pod_template["spec"]["serviceAccountName"] == "default-editor"
    assert pod_template["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    assert trainjob_schema_errors(job) == trainjob_webhook_errors(job, RUNTIME) == []
    [rjob] = RUNTIME["spec"]["template"]["spec"]["replicatedJobs"]
    assert rjob["template"]["spec"]["template"]["metadata"]["annotations"] == job_api.NO_SIDECAR


def test_each_worker_may_fault_as_often_as_a_tfjob_worker():
    """Issue 90, finding 4: the runtime's Job counts each index's faults apart (one fault
    aborts every worker), as many as the compiled default of a TFJob's."""
    [rjob] = RUNTIME["spec"]["template"]["spec"]["replicatedJobs"]
    job_spec = rjob["template"]["spec"]
    assert job_spec["backoffLimitPerIndex"] == job_api.DEFAULT_BACKOFF_LIMIT
    assert "backoffLimit" not in job_spec and job_spec["maxFailedIndexes"] == 0
    # Kubernetes takes backoffLimitPerIndex only with restartPolicy Never.
    assert job_spec["template"]["spec"]["restartPolicy"] == "Never"


# A recurring run's task pod (a schedule's name, its timestamp, KFP's driver's suffix).
RECURRING_POD = "daily-events-training-schedule-1764633600-system-container-impl-3141592653"


@pytest.mark.parametrize("workers", [2, 3, 10, 11, 100, job_api.MAX_WORKERS])
@pytest.mark.parametrize("pod_name", [POD, RECURRING_POD, "a" * 63, "t" * 49])
def test_every_task_pod_gives_a_name_jobset_takes(pod_name, workers):
    """Issue 90, finding 2: JobSet's webhook refuses a JobSet whose last pod's name is over
    63 characters; the TrainJob then waits, never Failed. Every name fits, for any count."""
    name = job_api.job_name(pod_name, train_job.API.max_name(workers))
    job = _job(workers=workers)
    job["metadata"]["name"] = name
    job["spec"]["trainer"]["env"] = train_job.tf_config_env(name, workers)
    assert jobset_webhook_errors(job, RUNTIME) == [], name
    assert trainjob_schema_errors(job) == [], name
    assert name != job_api.job_name(pod_name + "-2", train_job.API.max_name(workers))
    # Cut to 52 characters, as every kind's names were, each of these was refused.
    job["metadata"]["name"] = job_api.job_name(pod_name, 52)
    assert jobset_webhook_errors(job, RUNTIME) != []


def test_each_pod_gets_the_tf_config_a_tfjob_worker_would():
    """Through what Kubernetes does with the job's env: worker i of four, the JobSet's host
    names, the Secret's key read at the pod, never written in the job."""
    job = _job()
    name = job["metadata"]["name"]
    assert "secret-value" not in json.dumps(job)
    seen = []
    for index in range(4):
        env = node_env(job, RUNTIME, index, secrets={SECRET: {"accesskey": "secret-value"}})
        assert env["AWS_ACCESS_KEY_ID"] == "secret-value"
        place = Workers.from_environment(env)
        assert (place.count, place.index) == (4, index)
        config = json.loads(env["TF_CONFIG"])
        assert config["cluster"]["worker"] == [
            f"{name}-node-0-{i}.{name}:{train_job.PORT}" for i in range(4)
        ]
        seen.append(place.is_chief)
    assert seen == [True, False, False, False]


def test_the_contract_refuses_what_trainer_v2_refuses():
    # The checks themselves fail where the real ones fail.
    job = _job()
    unknown = copy.deepcopy(job)
    unknown["spec"]["trainer"]["numWorkers"] = 4
    assert any("numWorkers" in e for e in trainjob_schema_errors(unknown))
    long_name = copy.deepcopy(job)
    long_name["metadata"]["name"] = "Trainer"
    assert any("RFC 1035" in e for e in trainjob_schema_errors(long_name))
    manager = copy.deepcopy(job)
    manager["spec"]["runtimePatches"][0]["manager"] = "tfrecord-pipelines"
    assert trainjob_webhook_errors(manager, RUNTIME) == [
        "spec.runtimePatches.manager: Invalid value: 'tfrecord-pipelines'"
    ]
    env = copy.deepcopy(job)
    [node] = env["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
        "replicatedJobs"
    ]
    node["template"]["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"}
    ]
    assert len(trainjob_webhook_errors(env, RUNTIME)) == 1
    node["name"] = "trainer"
    assert "doesn't exist" in trainjob_webhook_errors(env, RUNTIME)[0]
    runtime = copy.deepcopy(RUNTIME)
    [rjob] = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjob["replicas"] = 2
    rjob["template"]["spec"]["template"]["spec"]["containers"][0]["name"] = "tensorflow"
    assert len(runtime_webhook_errors(runtime)) == 2
    runtime["spec"]["mlPolicy"].update(torch={}, jax={})
    assert "Only one of the policy" in runtime_schema_errors(runtime)[-1]


def test_a_job_without_placement_patches_only_the_annotation_and_a_cpu_worker_no_limits():
    job = _job(placement=TaskPlacement(), resources=TrainerResources(gpus=0))
    [patch] = job["spec"]["runtimePatches"]
    [node] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert node["template"]["spec"]["template"] == {"metadata": {"annotations": job_api.NO_SIDECAR}}
    assert "resourcesPerNode" not in job["spec"]["trainer"]
    assert trainjob_schema_errors(job) == trainjob_webhook_errors(job, RUNTIME) == []


def test_an_unknown_kind_of_job_is_refused_in_one_line():
    with pytest.raises(ValueError, match="unknown kind of training job 'PyTorchJob': one of"):
        worker_template.WorkerTemplate(workers=2, image="i", kind="PyTorchJob")


def test_the_contract_refuses_a_runtime_the_namespace_does_not_hold():
    """As trainjob_webhook.go:114-118 and trainingruntime.go:304-314 refuse: a kind or group
    that is not a registered runtime's, a TrainingRuntime not in the namespace, and a
    ClusterTrainingRuntime (the CRD's default kind) where the cluster has none."""
    job = _job()
    renamed = copy.deepcopy(job)
    renamed["spec"]["runtimeRef"]["name"] = "tensorflow"
    [error] = trainjob_webhook_errors(renamed, RUNTIME)
    assert "must be created before the TrainJob is created" in error
    defaulted = copy.deepcopy(job)
    del defaulted["spec"]["runtimeRef"]["kind"]
    [error] = trainjob_webhook_errors(defaulted, RUNTIME)
    assert "specified clusterTrainingRuntime must be created" in error
    foreign = copy.deepcopy(job)
    foreign["spec"]["runtimeRef"]["apiGroup"] = "kubeflow.org"
    assert trainjob_webhook_errors(foreign, RUNTIME) == [
        "unsupported runtime: TrainingRuntime.kubeflow.org"
    ]
    managed = copy.deepcopy(job)
    managed["spec"]["managedBy"] = "tfrecord-pipelines"
    assert any("ManagedBy must be" in e for e in trainjob_schema_errors(managed))


def test_the_contract_reads_an_initializers_storage_uri_as_cel_does():
    """The CRD's rule is RE2's matches(): a URI with a trailing newline fails it, as does one
    without a scheme; an empty one passes."""
    job = _job()
    for uri, refused in (("gs://bucket/data", False), ("", False), ("gs://bucket/data\n", True),
                         ("bucket/data", True)):  # fmt: skip
        job["spec"]["initializer"] = {"dataset": {"storageUri": uri}}
        errors = trainjob_schema_errors(job)
        assert any("storageUri" in e for e in errors) is refused, uri


def test_the_contract_checks_init_containers_names_and_not_their_env():
    """jobset.go:190-196: a patched initContainer must exist in the runtime's job (init or not)
    and may carry env; a patched container named node may not (199-202)."""
    job = _job()
    [rjob] = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
        "replicatedJobs"
    ]
    pod = rjob["template"]["spec"]["template"]["spec"]
    pod["initContainers"] = [{"name": "node", "env": [{"name": "A", "value": "1"}]}]
    assert trainjob_webhook_errors(job, RUNTIME) == []
    pod["initContainers"] = [{"name": "fetch"}]
    assert trainjob_webhook_errors(job, RUNTIME) == [
        "spec.runtimePatches: Invalid value: must not have initContainer that doesn't exist "
        "in the runtime job node"
    ]
