"""``compile --trainer-workers N``: the Trainer's TFJob template in the compiled spec (offline).

The template the compiled Trainer carries is checked here: the Trainer's pod again for
each worker (image, GPUs, node pool, tolerations, claims, the Secret's keys by reference),
the job it makes valid for kubeflow/trainer v1.9.4's CRD schema and webhook
(``tfjob_contract``), and the executor that creates it. The job's run is
test_cluster_daily's (the harness, the API stand-in and the operator's).
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import yaml

from conftest import REPO_ROOT, compile_in_process, run_cli
from tfjob_contract import object_name_errors, past_backoff_limit, schema_errors, webhook_errors
from tfrecord_pipelines.kubeflow import job_trainer
from tfrecord_pipelines.kubeflow.platform_spec import (
    SecretEnv,
    TaskPlacement,
    Toleration,
    VolumeMount,
)
from tfrecord_pipelines.kubeflow.training_job import job_api, trainer_job_spec, worker_template
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources
from trainjob_contract import (
    cluster_runtime,
    jobset_webhook_errors,
    runtime_schema_errors,
    trainjob_schema_errors,
    trainjob_webhook_errors,
)

POD = "penguins-x7k2q-system-container-impl-1234567890"
PLACEMENT = TaskPlacement(
    node_selector={"nvidia.com/gpu.present": "true"},
    tolerations=(Toleration("nvidia.com/gpu"),),
    volumes=(VolumeMount("tfrecord-pipelines-serving", "/pipeline"),),
    secret_env=(
        SecretEnv(
            "mlpipeline-minio-artifact",
            (("accesskey", "TFRECORD_PIPELINES_ARTIFACT_ACCESS_KEY_ID"),),
        ),
    ),
)
ENV = ({"name": "TFRECORD_PIPELINES_ARTIFACT_ENDPOINT", "value": "http://seaweedfs.kubeflow:9000"},)


def _template(**overrides) -> worker_template.WorkerTemplate:
    arguments = dict(
        workers=4, image="image:gpu", resources=TrainerResources(gpus=2), placement=PLACEMENT,
        env=ENV,
    )  # fmt: skip
    return trainer_job_spec.worker_template(**{**arguments, **overrides})


def test_each_worker_is_the_trainers_pod_again_and_the_job_is_what_the_operator_takes():
    template = _template()
    job = template.job(
        name=job_api.job_name(POD, template.api.max_name(template.workers)),
        namespace="team-a", command=["python", "-m", "x"],
        owner={"name": POD, "uid": "uid-1"},
    )  # fmt: skip
    assert schema_errors(job) == webhook_errors(job) == object_name_errors(job) == []
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    pod = worker["template"]["spec"]
    [container] = pod["containers"]
    assert worker["replicas"] == 4
    assert (container["image"], container["resources"]) == (
        "image:gpu",
        {"limits": {"nvidia.com/gpu": "2"}},
    )
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule", "operator": "Exists"}
    ]
    [volume] = pod["volumes"]
    assert volume["persistentVolumeClaim"] == {"claimName": "tfrecord-pipelines-serving"}
    assert container["volumeMounts"] == [{"name": volume["name"], "mountPath": "/pipeline"}]
    # The Secret's key by reference: its value never enters the job.
    assert container["env"] == [
        ENV[0],
        {
            "name": "TFRECORD_PIPELINES_ARTIFACT_ACCESS_KEY_ID",
            "valueFrom": {
                "secretKeyRef": {"name": "mlpipeline-minio-artifact", "key": "accesskey"}
            },
        },
    ]


def test_the_template_comes_back_from_the_trainers_custom_config_as_compiled():
    template = _template()
    through_json = json.loads(json.dumps({"other": 1, **template.to_custom_config()}))
    assert worker_template.WorkerTemplate.from_custom_config(through_json) == template
    assert worker_template.WorkerTemplate.from_custom_config({"other": 1}) is None


def test_one_worker_or_a_bad_timeout_is_refused_in_one_line():
    with pytest.raises(ValueError, match="2 to 999 trainer workers, got 1"):
        _template(workers=1)
    with pytest.raises(ValueError, match="timeout must be positive"):
        _template(timeout_s=0)


def test_the_worker_command_is_the_tasks_own_and_the_worker_flag():
    argv = ["python", "-m", "tfrecord_pipelines.kubeflow.kfp_executor", "--x", "{}"]
    assert job_trainer.worker_command(argv) == [*argv, "--tfjob_worker"]


def test_outside_a_kfp_pod_the_task_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(job_trainer, "SERVICE_ACCOUNT_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="KFP_POD_NAME, KFP_POD_UID missing"):
        job_trainer.run_job(_template(), environ={})


# The guide's commands (docs/guides/trainer-workers.md), and two more to compare with.
GUIDE_COMMAND = ("--trainer-workers", "4", "--gpus", "2")
GUIDE_TRAINJOB_COMMAND = (*GUIDE_COMMAND, "--trainer-job", "trainjob")
COMPILES = {
    "one": ("--gpus", "0"),
    "guide": GUIDE_COMMAND,
    "guide-trainjob": GUIDE_TRAINJOB_COMMAND,
    "twelve": ("--gpus", "0", "--trainer-workers", "12", "--shard-size", "64MiB"),
    # Issue 90's done-when: three workers in a Kubeflow profile, of each kind.
    "three-tfjob": ("--trainer-workers", "3"),
    "three-trainjob": (
        "--trainer-workers", "3", "--trainer-job", "trainjob", "--trainer-runtime", "cluster",
    ),
}  # fmt: skip
GUIDE = REPO_ROOT / "docs" / "guides" / "trainer-workers.md"
RUNTIME = REPO_ROOT / "k8s" / "components" / "trainjob-runtime" / "runtime.yaml"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """The bundled pipeline compiled as the guide says, with 12 workers and a shard size,
    and, to compare, with one worker."""
    folder = tmp_path_factory.mktemp("compiled")
    specs = {}
    for name, settings in COMPILES.items():
        output = folder / f"{name}.yaml"
        ran = compile_in_process("--output", str(output), *settings)
        assert ran.returncode == 0, ran.stderr[-2000:]
        specs[name] = list(yaml.safe_load_all(output.read_text()))[0]
    return specs


def _trainer(spec: dict) -> tuple[list[str], dict]:
    args = spec["deploymentSpec"]["executors"]["Trainer_executor"]["container"]["args"]
    parameters = spec["root"]["dag"]["tasks"]["Trainer"]["inputs"]["parameters"]
    return args, json.loads(parameters["custom_config"]["runtimeValue"]["constant"])


def test_workers_give_the_trainer_the_job_executor_and_its_template(compiled):
    args, custom_config = _trainer(compiled["guide"])
    assert args[args.index("--executor_class_path") + 1] == trainer_job_spec.EXECUTOR_CLASS_PATH
    template = worker_template.WorkerTemplate.from_custom_config(custom_config)
    assert template.workers == 4 and template.resources.gpus == 2
    container = compiled["guide"]["deploymentSpec"]["executors"]["Trainer_executor"]["container"]
    assert template.image == container["image"]
    # Everything else in the Trainer's custom_config is as one worker compiles it.
    one_args, one = _trainer(compiled["one"])
    assert one_args[one_args.index("--executor_class_path") + 1] == (
        "tfx.components.trainer.executor.GenericExecutor"
    )
    assert {k: v for k, v in custom_config.items() if k != worker_template.CUSTOM_CONFIG_KEY} == one


def _example_gen_sharding(spec: dict) -> dict:
    parameters = spec["root"]["dag"]["tasks"]["ShardedExampleGen"]["inputs"]["parameters"]
    return {
        name: parameters[name]["runtimeValue"]["constant"]
        for name in ("num_readers", "num_shards", "target_shard_bytes")
        if name in parameters
    }


def test_example_gen_plans_at_least_a_train_shard_per_worker(compiled):
    """The default floor of 10 readers covers 4 workers; 12 workers raise it, and a shard
    size set keeps its own size with that floor."""
    assert _example_gen_sharding(compiled["guide"]) == _example_gen_sharding(compiled["one"])
    assert _example_gen_sharding(compiled["one"])["num_readers"] == 10
    assert _example_gen_sharding(compiled["twelve"]) == {
        "num_readers": 12,
        "target_shard_bytes": 64 * 2**20,
    }


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--trainer-workers", "0"], "--trainer-workers: must be at least 1"),
        (
            ["--trainer-workers", "3", "--num-shards", "2"],
            "--num-shards 2 for --trainer-workers 3",
        ),
    ],
)
def test_workers_without_a_shard_each_are_refused_before_compiling(tmp_path, argv, message):
    ran = run_cli("compile", "--output", str(tmp_path / "p.yaml"), *argv)
    assert ran.returncode != 0
    assert message in ran.stderr
    assert not (tmp_path / "p.yaml").exists()


GUIDE_ACCOUNT = "default-editor"


@pytest.mark.parametrize(
    ("compile_name", "command", "api_version"),
    [
        ("guide", GUIDE_COMMAND, "kubeflow.org/v1"),
        ("guide-trainjob", GUIDE_TRAINJOB_COMMAND, "trainer.kubeflow.org/v1alpha1"),
    ],
)
def test_the_guides_jobs_are_the_ones_its_commands_make(
    compiled, compile_name, command, api_version
):
    """The guide's YAML blocks: the job the task of a run creates for each of the guide's
    commands, for the pod the guide names, its command's arguments shortened as the guide
    shows."""
    text = GUIDE.read_text(encoding="utf-8")
    [block] = re.findall(rf"```yaml\n(apiVersion: {re.escape(api_version)}\n.*?)```", text, re.S)
    assert " ".join(command) in text
    shown = yaml.safe_load(block)
    pod = shown["metadata"]["ownerReferences"][0]["name"]
    _, custom_config = _trainer(compiled[compile_name])
    template = worker_template.WorkerTemplate.from_custom_config(custom_config)
    made = template.job(
        name=job_api.job_name(pod, template.api.max_name(template.workers)),
        namespace=shown["metadata"]["namespace"],
        command=job_trainer.worker_command(
            ["python", "-m", "tfrecord_pipelines.kubeflow.kfp_executor", "<the task's arguments>"]
        ),
        owner={"name": pod, "uid": "<the task pod's uid>"},
        # The account KFP runs a Kubeflow profile's pods as, read from the task's pod.
        service_account=GUIDE_ACCOUNT,
    )
    assert shown == made


def test_trainer_job_trainjob_compiles_a_trainjob_of_k8s_runtime(compiled):
    _, custom_config = _trainer(compiled["guide-trainjob"])
    template = worker_template.WorkerTemplate.from_custom_config(custom_config)
    runtime = yaml.safe_load(RUNTIME.read_text())
    assert (template.kind, template.workers, template.runtime) == (
        "TrainJob",
        4,
        runtime["metadata"]["name"],
    )
    job = template.job(name="trainer-1", namespace="team-a", command=["python"])
    assert trainjob_schema_errors(job) == trainjob_webhook_errors(job, runtime) == []
    # The rest of the Trainer's task is the TFJob's.
    _, tf_job_config = _trainer(compiled["guide"])
    tf_job_template = worker_template.WorkerTemplate.from_custom_config(tf_job_config)
    assert dataclasses.replace(tf_job_template, kind="TrainJob") == template


# A recurring run's task pod (a schedule's name, its timestamp, KFP's driver's suffix) in a
# Kubeflow profile's namespace, run as the profile's account with a pull secret.
RECURRING_POD = "daily-events-training-schedule-1764633600-system-container-impl-3141592653"
PROFILE = "kubeflow-user-example-com"


@pytest.mark.parametrize("compile_name", ["three-tfjob", "three-trainjob"])
def test_three_workers_of_a_recurring_run_in_a_profile_make_a_job_the_cluster_takes(
    compiled, compile_name
):
    """Issue 90's done-when: as compiled, for a recurring run's task pod, the job passes the
    CRD schema, the webhook and (a TrainJob) JobSet's webhook on the cluster's runtime; its
    pods carry the Istio annotation, the task's account and pull secret; and it survives one
    fault of all three workers as its operator counts faults."""
    _, custom_config = _trainer(compiled[compile_name])
    template = worker_template.WorkerTemplate.from_custom_config(custom_config)
    job = template.job(
        name=job_api.job_name(RECURRING_POD, template.api.max_name(3)),
        namespace=PROFILE,
        command=["python", "-m", "tfrecord_pipelines.kubeflow.kfp_executor"],
        owner={"name": RECURRING_POD, "uid": "6f1c0a52-1b64-4ad4-9d3f-2b8f2e7c1d90"},
        service_account="default-editor",
        image_pull_secrets=["registry"],
    )
    if template.kind == "TFJob":
        assert schema_errors(job) == webhook_errors(job) == object_name_errors(job) == []
        [pod] = [s["template"] for s in job["spec"]["tfReplicaSpecs"].values()]
        assert not past_backoff_limit(job, [1, 1, 1])
    else:
        runtime = cluster_runtime(yaml.safe_load(RUNTIME.read_text()))
        assert job["spec"]["runtimeRef"]["kind"] == "ClusterTrainingRuntime"
        assert runtime_schema_errors(runtime) == []
        assert trainjob_schema_errors(job) == trainjob_webhook_errors(job, runtime) == []
        assert jobset_webhook_errors(job, runtime) == []
        [patch] = job["spec"]["runtimePatches"]
        [node] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        pod = node["template"]["spec"]["template"]
        [rjob] = runtime["spec"]["template"]["spec"]["replicatedJobs"]
        assert rjob["template"]["spec"]["backoffLimitPerIndex"] >= 1  # each worker's own
    assert pod["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert pod["spec"]["serviceAccountName"] == "default-editor"
    assert pod["spec"]["imagePullSecrets"] == [{"name": "registry"}]


def test_a_cluster_runtime_is_a_trainjobs_only(tmp_path):
    ran = run_cli(
        "compile", "--output", str(tmp_path / "p.yaml"), "--trainer-workers", "3",
        "--trainer-runtime", "cluster",
    )  # fmt: skip
    assert ran.returncode != 0
    assert "--trainer-runtime cluster is a TrainJob's: give --trainer-job trainjob" in ran.stderr
    assert not (tmp_path / "p.yaml").exists()
