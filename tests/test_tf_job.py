"""The TFJob the Trainer's task creates, against the Training Operator's contract (offline).

``tfjob_contract`` holds what kubeflow/trainer v1.9.4 refuses: its CRD schema (unknown
fields refused), its validating webhook, and the names its workers' pods and Services
take. The pod template is also checked as Kubernetes 1.31 checks a pod (strict).
"""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest

from tfjob_contract import object_name_errors, past_backoff_limit, schema_errors, webhook_errors
from tfrecord_pipelines.kubeflow.training_job import job_api, tf_job
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources

KUBERNETES_VERSION = "1.31"
# A KFP v2 task's pod name: the run's and the task's names and a suffix.
POD = "daily-pipeline-8kqzt-system-container-impl-2904817311"


def _job(**overrides) -> dict:
    workers = overrides.get("workers", 4)
    arguments = dict(
        name=job_api.job_name(POD, tf_job.API.max_name(workers)),
        namespace="kubeflow-user-example-com",
        image="ghcr.io/tfrecord-pipelines/tfrecord-pipelines:0.1.0-gpu",
        command=["python", "-m", "tfrecord_pipelines.kubeflow.kfp_executor", "--worker"],
        workers=4,
        resources=TrainerResources(gpus=2, cpu="8", memory="32Gi"),
        owner={"name": POD, "uid": "6f1c0a52-1b64-4ad4-9d3f-2b8f2e7c1d90"},
        env=[
            {"name": "TF_USE_LEGACY_KERAS", "value": "1"},
            {
                "name": "AWS_ACCESS_KEY_ID",
                "valueFrom": {
                    "secretKeyRef": {"name": "mlpipeline-minio-artifact", "key": "accesskey"}
                },
            },
        ],
        volumes=[
            {
                "name": "serving",
                "persistentVolumeClaim": {"claimName": "tfrecord-pipelines-serving"},
            }
        ],
        volume_mounts=[{"name": "serving", "mountPath": "/pipeline/serving_model"}],
        service_account="tfrecord-pipelines-runner",
    )
    arguments.update(overrides)
    return tf_job.tf_job(**arguments)


def test_the_job_is_what_the_crd_schema_and_the_webhook_accept():
    job = _job()
    assert schema_errors(job) == []
    assert webhook_errors(job) == []
    assert object_name_errors(job) == []
    [worker] = job["spec"]["tfReplicaSpecs"].values()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": job["metadata"], **worker["template"]}
    kubernetes_validate.validate(pod, KUBERNETES_VERSION, strict=True)


def test_the_job_runs_every_worker_to_its_end_and_restarts_a_failed_one():
    job = _job()
    spec = job["spec"]
    assert spec["successPolicy"] == "AllWorkers"
    assert spec["runPolicy"] == {"cleanPodPolicy": "None", "backoffLimit": 3 * 4 + 1}
    [(kind, worker)] = spec["tfReplicaSpecs"].items()
    assert (kind, worker["replicas"], worker["restartPolicy"]) == ("Worker", 4, "OnFailure")
    [container] = worker["template"]["spec"]["containers"]
    assert container["name"] == "tensorflow"
    assert container["resources"] == {
        "limits": {"nvidia.com/gpu": "2", "cpu": "8", "memory": "32Gi"}
    }
    assert job["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": POD,
            "uid": "6f1c0a52-1b64-4ad4-9d3f-2b8f2e7c1d90",
        }
    ]


def test_a_cpu_worker_asks_for_no_accelerator():
    [worker] = _job(resources=TrainerResources(gpus=0))["spec"]["tfReplicaSpecs"].values()
    assert "resources" not in worker["template"]["spec"]["containers"][0]


@pytest.mark.parametrize(
    "pod_name",
    [
        POD,
        "a" * 63,
        "Trainer_Task.With.Dots-and-CAPS",
        "0-starts-with-a-digit",
        "---",
        "x" * 40 + "-" * 30 + "y",
    ],
)
def test_every_pod_name_gives_a_name_the_workers_can_carry(pod_name):
    max_name = tf_job.API.max_name(job_api.MAX_WORKERS)
    name = job_api.job_name(pod_name, max_name)
    job = _job(name=name, workers=job_api.MAX_WORKERS)
    assert webhook_errors(job) == [] and object_name_errors(job) == [], name
    assert name != job_api.job_name(pod_name + "-2", max_name)


def test_a_short_valid_pod_name_is_kept():
    assert job_api.job_name("trainer-pod-1", tf_job.API.max_name(2)) == "trainer-pod-1"


@pytest.mark.parametrize("workers", [2, 3, 8, job_api.MAX_WORKERS])
def test_the_job_survives_one_fault_of_every_worker_as_the_operator_counts(workers):
    """Issue 90, finding 4: one fault restarts every worker; the operator sums the restarts
    (PastBackoffLimit). The compiled 3 faults of every worker survive, a fourth fails it."""
    job = _job(workers=workers)
    for faults in range(job_api.DEFAULT_BACKOFF_LIMIT + 1):
        assert not past_backoff_limit(job, [faults] * workers), faults
    assert past_backoff_limit(job, [job_api.DEFAULT_BACKOFF_LIMIT + 1] * workers)
    # As compiled before (backoffLimit 3), one fault of three workers failed the job.
    before = copy.deepcopy(job)
    before["spec"]["runPolicy"]["backoffLimit"] = 3
    assert past_backoff_limit(before, [1, 1, 1])
    assert past_backoff_limit(_job(workers=workers, backoff_limit=0), [0] * (workers - 1) + [1])


def test_the_workers_run_as_the_task_without_istios_proxy():
    """Issue 90, findings 1 and 3: the task's service account and pull secrets on every
    worker, and the annotation that keeps Istio's proxy out of a profile namespace's pods."""
    job = _job(image_pull_secrets=["registry"])
    [worker] = job["spec"]["tfReplicaSpecs"].values()
    assert worker["template"]["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    spec = worker["template"]["spec"]
    assert spec["serviceAccountName"] == "tfrecord-pipelines-runner"
    assert spec["imagePullSecrets"] == [{"name": "registry"}]
    assert schema_errors(job) == webhook_errors(job) == []


def test_the_contract_refuses_what_the_operator_refuses():
    # The checks themselves fail where the real ones fail.
    job = _job()
    unknown = copy.deepcopy(job)
    unknown["spec"]["tfReplicaSpecs"]["Worker"]["replica"] = 2
    assert any("replica" in e for e in schema_errors(unknown))
    text = copy.deepcopy(job)
    text["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "4"
    assert any("replicas" in e for e in schema_errors(text))
    renamed = copy.deepcopy(job)
    renamed["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = (
        "main"
    )
    assert webhook_errors(renamed) == [
        "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: "
        "must have at least one container with name tensorflow"
    ]
    long_name = copy.deepcopy(job)
    long_name["metadata"]["name"] = "a" * 60
    assert webhook_errors(long_name) == [] and len(object_name_errors(long_name)) == 4


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"workers": 1}, "2 to 999 trainer workers, got 1"),
        ({"workers": 1000}, "got 1000"),
        ({"name": "Trainer"}, "'Trainer' must be a DNS-1035 label"),
        ({"name": "a" * 55}, "at most 54 characters for 4 workers"),
        ({"backoff_limit": -1}, "backoff_limit must be 0 or more"),
        ({"image": ""}, "the task's image and a command"),
    ],
)
def test_arguments_the_operator_would_refuse_fail_in_one_line(overrides, message):
    with pytest.raises(ValueError, match=message) as raised:
        _job(**overrides)
    assert "\n" not in str(raised.value)
