"""The Trainer's task creating, waiting for and deleting its TFJob or TrainJob, against the API
stand-in.

A contract test: ``fake_k8s_api`` answers the ``kubernetes`` client's calls as the API
server and the Training Operator's webhook would (kubeflow/trainer v1.9.4), or Trainer
v2's (v2.3.0, against k8s/'s TrainingRuntime), and plays the conditions the controller
would set: a TFJob's Created, Running, Restarting, Succeeded, Failed; a TrainJob's
Complete, Failed. The client, its HTTP and the runner are the real ones.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest
from kubernetes import client

from conftest import REPO_ROOT
from fake_k8s_api import (
    KUBEFLOW_EDIT_RULES,
    PIPELINE_RUNNER_ROLE,
    FakeK8sApi,
    FakeK8sServer,
    FakePod,
    request_attributes,
    role_rules,
    story,
    write_service_account,
)
from tfrecord_pipelines.kubeflow import job_trainer
from tfrecord_pipelines.kubeflow.training_job import job_runner, tf_job, train_job
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources

NAMESPACE = "team-a"
NAME = "trainer-pod-1"


def _job(**overrides) -> dict:
    arguments = dict(
        name=NAME, namespace=NAMESPACE, image="image:1", command=["python", "-m", "x"],
        workers=3, resources=TrainerResources(gpus=1),
    )  # fmt: skip
    return tf_job.tf_job(**{**arguments, **overrides})


@pytest.fixture
def api():
    api = FakeK8sApi()
    server = FakeK8sServer(api)
    configuration = client.Configuration()
    configuration.host = server.url
    api_client = client.ApiClient(configuration)
    api.url = server.url
    api.clients = {
        "custom_objects": client.CustomObjectsApi(api_client),
        "core": client.CoreV1Api(api_client),
    }
    api.authorization = client.AuthorizationV1Api(api_client)
    yield api
    api_client.close()
    server.close()


def _run(api, job=None, timeout_s=30.0):
    lines = []
    outcome = job_runner.run(
        job or _job(),
        api=tf_job.API,
        **api.clients,
        timeout_s=timeout_s,
        poll_s=0.01,
        log=lines.append,
    )
    return outcome, lines


def test_a_job_that_succeeds_gives_the_chiefs_log_and_is_deleted(api):
    api.stories[NAME] = story("Created", "Running", "Succeeded")
    api.pods = [
        FakePod(f"{NAME}-worker-{i}", NAME, exit_code=0, log=f"worker {i} trained\n")
        for i in range(3)
    ]
    outcome, lines = _run(api)
    assert (outcome.state, outcome.chief_log) == ("Succeeded", "worker 0 trained\n")
    assert [line.split(": ")[1] for line in lines[:3]] == ["Created.", "Running.", "Succeeded."]
    assert "worker 0 trained" in lines[-1]
    assert api.deleted == [NAME] and not api.jobs


def test_a_restart_is_reported_and_the_wait_goes_on(api):
    api.stories[NAME] = story("Created", "Running", "Restarting", "Running", "Succeeded")
    api.pods = [FakePod(f"{NAME}-worker-0", NAME, exit_code=0, log="done\n")]
    outcome, lines = _run(api)
    assert outcome.state == "Succeeded"
    assert [line.split(": ")[1] for line in lines[:5]] == [
        "Created.", "Running.", "Restarting.", "Running.", "Succeeded.",
    ]  # fmt: skip


def test_a_failed_job_is_one_line_naming_the_replica_after_its_last_lines(api):
    api.stories[NAME] = story("Created", "Running", "Failed")
    log = "".join(f"step {i}\n" for i in range(40)) + "ValueError: the shards ran out\n"
    api.pods = [
        FakePod(f"{NAME}-worker-0", NAME),
        FakePod(f"{NAME}-worker-2", NAME, exit_code=1, log=log),
    ]
    with pytest.raises(job_runner.JobFailed) as failed:
        _run(api)
    message = str(failed.value)
    assert message == (
        f"TFJob {NAMESPACE}/{NAME} failed: {NAME}-worker-2 exited 1: ValueError: the shards ran out"
    )
    assert api.deleted == [NAME]


def test_a_worker_that_failed_before_a_restart_is_read_from_its_previous_log(api):
    api.stories[NAME] = story("Running", "Failed")
    api.pods = [FakePod(f"{NAME}-worker-1", NAME, restarted_after=137, previous_log="OOMKilled\n")]
    with pytest.raises(job_runner.JobFailed, match=f"{NAME}-worker-1 exited 137: OOMKilled$"):
        _run(api)


def test_a_job_that_does_not_end_in_time_is_deleted(api):
    api.stories[NAME] = story("Created", "Running")
    with pytest.raises(
        job_runner.JobFailed, match="did not finish in 0 s .last state: Running.; deleted"
    ):
        _run(api, timeout_s=0.2)
    assert api.deleted == [NAME]


@pytest.mark.parametrize(
    ("change", "code", "words"),
    [
        (lambda j: j["spec"]["tfReplicaSpecs"]["Worker"].update(replicas="3"), 422, "is invalid"),
        (
            lambda j: j["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][
                0
            ].update(name="main"),
            403,
            "denied the request",
        ),
    ],
)
def test_a_job_the_api_refuses_fails_in_one_line_and_nothing_runs(api, change, code, words):
    job = _job()
    change(job)
    with pytest.raises(job_runner.JobFailed, match=f"could not be created: .*{words}") as e:
        _run(api, job)
    assert "\n" not in str(e.value)
    assert [c for c, _ in api.rejections] == [code] and not api.jobs and not api.deleted


def test_a_name_in_use_is_refused_and_the_other_job_is_left_alone(api):
    api.stories[NAME] = story("Running")
    api.jobs[(NAMESPACE, NAME)] = {"metadata": {"name": NAME}, "status": {}}
    with pytest.raises(job_runner.JobFailed, match="already exists"):
        _run(api)
    assert [c for c, _ in api.rejections] == [409]


def test_a_stopped_task_deletes_its_job(api):
    # KFP stops a cancelled run's task with SIGTERM: the task deletes its job on the way out.
    api.stories[NAME] = story("Created", "Running")
    script = textwrap.dedent(f"""
        import json, sys
        from kubernetes import client
        from tfrecord_pipelines.kubeflow.training_job import job_runner, tf_job, train_job
        configuration = client.Configuration()
        configuration.host = {api.url!r}
        api_client = client.ApiClient(configuration)
        try:
            job_runner.run(
                json.loads(sys.argv[1]), api=tf_job.API,
                custom_objects=client.CustomObjectsApi(api_client),
                core=client.CoreV1Api(api_client), timeout_s=60, poll_s=0.05, log=print,
            )
        except job_runner.JobFailed as e:
            sys.exit(f"error: {{e}}")
    """)
    task = subprocess.Popen(
        [sys.executable, "-c", script, json.dumps(_job())],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert api.read.wait(timeout=60), "the task never read its job"
    task.send_signal(signal.SIGTERM)
    _, err = task.communicate(timeout=60)
    assert task.returncode == 1
    assert err.strip().splitlines()[-1] == (
        "error: the task was stopped (SIGTERM); the TFJob is deleted"
    )
    assert api.deleted == [NAME]


def _in_cluster_clients(account, port: int, token_file=None):
    """The clients a pod's in-cluster configuration makes (kubernetes' own loader, given the
    service account's files where this machine has them)."""
    from kubernetes.config.incluster_config import InClusterConfigLoader

    configuration = client.Configuration()
    InClusterConfigLoader(
        token_filename=str(token_file or account.folder / "token"),
        cert_filename=str(account.certificate),
        environ={"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(port)},
    ).load_and_set(configuration)
    api_client = client.ApiClient(configuration)
    return api_client, {
        "custom_objects": client.CustomObjectsApi(api_client),
        "core": client.CoreV1Api(api_client),
    }


def test_in_a_pod_the_job_is_made_over_tls_with_the_service_accounts_token(tmp_path):
    """As a pod reaches the API server: HTTPS, its CA, its token; another token is refused."""
    api = FakeK8sApi()
    account = write_service_account(tmp_path / "serviceaccount", NAMESPACE)
    server = FakeK8sServer(api, in_cluster=account)
    try:
        api.stories[NAME] = story("Created", "Succeeded")
        api_client, clients = _in_cluster_clients(account, server.port)
        assert server.url.startswith("https://")
        outcome = job_runner.run(
            _job(), api=tf_job.API, **clients, timeout_s=30, poll_s=0.01, log=print
        )
        assert outcome.state == "Succeeded" and api.deleted == [NAME]
        api_client.close()
        other = tmp_path / "other-token"
        other.write_text("not-the-token")
        api_client, clients = _in_cluster_clients(account, server.port, other)
        with pytest.raises(job_runner.JobFailed, match="could not be created: Unauthorized"):
            job_runner.run(_job(), api=tf_job.API, **clients, timeout_s=30, poll_s=0.01, log=print)
        api_client.close()
    finally:
        server.close()


def _granted(rules) -> set[tuple[str, str, str]]:
    """The (verb, group, resource) triples RULES name one by one (no wildcards)."""
    return {
        (verb, group, resource)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _calls(api) -> set[tuple[str, str, str]]:
    """The (verb, group, resource) of every call the task made."""
    return {
        (call.verb, call.group, call.resource)
        for call in (request_attributes(method, path) for method, path in api.requests)
    }


def test_the_role_grants_the_calls_the_task_makes_and_nothing_more(api):
    """k8s/'s Role for the Trainer's task, rule by rule, against the calls a job that succeeds
    and one that fails make."""

    api.stories[NAME] = story("Created", "Succeeded")
    api.pods = [FakePod(f"{NAME}-worker-0", NAME, exit_code=0, log="done\n")]
    _run(api)
    api.stories[NAME] = story("Running", "Failed")
    api.pods = [FakePod(f"{NAME}-worker-0", NAME, exit_code=1, log="ValueError\n")]
    with pytest.raises(job_runner.JobFailed):
        _run(api)
    _read_task_identity(api)
    role = role_rules(REPO_ROOT / tf_job.API.role_file)
    assert _calls(api) == set(tf_job.API.task_access()) == _granted(role)


TASK_POD = "penguins-x7k2q-system-container-impl-1234567890"


def _read_task_identity(api):
    """The task's read of its own pod (``job_trainer.task_identity``), before it makes a job."""
    api.add_task_pod(NAMESPACE, TASK_POD, "uid-1", "default-editor", ("registry",))
    return job_trainer.task_identity(api.clients["core"], NAMESPACE, TASK_POD)


def test_the_workers_get_the_task_pods_account_and_pull_secrets(api):
    """Issue 90, finding 3: read from the task's pod as the API server holds it; a pod it
    cannot read fails the task in one line, never a worker running as ``default``."""
    assert _read_task_identity(api) == ("default-editor", ["registry"])
    with pytest.raises(RuntimeError, match="cannot read its own pod") as e:
        job_trainer.task_identity(api.clients["core"], NAMESPACE, "another-pod")
    assert "\n" not in str(e.value) and "not found" in str(e.value)


# A TrainJob's JobSet names its pods <job>-node-0-<index>-<suffix>: the index is read from
# the completion-index annotation, not the name.
TRAINJOB_PODS = ("x7k2q", "4fz9c", "b2m8d")


def _train_job(**overrides) -> dict:
    arguments = dict(
        name=NAME, namespace=NAMESPACE, image="image:1", command=["python", "-m", "x"],
        workers=3, resources=TrainerResources(gpus=1),
    )  # fmt: skip
    return train_job.train_job(**{**arguments, **overrides})


def _trainjob_pods(exit_codes, logs) -> list[FakePod]:
    # Listed out of index order, as the API server lists by name.
    return [
        FakePod(f"{NAME}-node-0-{i}-{suffix}", NAME, exit_code=code, index=i, log=log,
                kind="trainjobs")
        for i, suffix, code, log in sorted(
            zip(range(3), TRAINJOB_PODS, exit_codes, logs, strict=True), key=lambda p: p[1]
        )
    ]  # fmt: skip


def test_a_trainjob_that_completes_gives_worker_0s_log_and_is_deleted(api):
    api.stories[NAME] = story("Complete")
    api.pods = _trainjob_pods([0, 0, 0], [f"worker {i} trained\n" for i in range(3)])
    lines = []
    outcome = job_runner.run(
        _train_job(), api=train_job.API, **api.clients, timeout_s=30, poll_s=0.01,
        log=lines.append,
    )  # fmt: skip
    assert (outcome.state, outcome.chief_log) == ("Complete", "worker 0 trained\n")
    assert lines[0] == f"TrainJob {NAMESPACE}/{NAME}: Complete."
    assert api.deleted == [NAME] and not api.jobs
    assert ("GET", f"/api/v1/namespaces/{NAMESPACE}/pods") in api.requests


def test_a_failed_trainjob_is_one_line_naming_the_failed_pod(api):
    api.stories[NAME] = story("Failed")
    api.pods = _trainjob_pods([None, 1, None], ["", "ValueError: no shard\n", ""])
    with pytest.raises(job_runner.JobFailed) as failed:
        job_runner.run(
            _train_job(), api=train_job.API, **api.clients, timeout_s=30, poll_s=0.01,
            log=print,
        )  # fmt: skip
    assert str(failed.value) == (
        f"TrainJob {NAMESPACE}/{NAME} failed: {NAME}-node-0-1-{TRAINJOB_PODS[1]} exited 1: "
        "ValueError: no shard"
    )


def test_a_trainjob_the_webhook_refuses_fails_in_one_line(api):
    job = _train_job(volumes=[{"name": "v", "emptyDir": {}}])
    job["spec"]["runtimePatches"][0]["manager"] = "no-domain"
    with pytest.raises(job_runner.JobFailed, match="could not be created: .*denied") as e:
        job_runner.run(job, api=train_job.API, **api.clients, timeout_s=30, poll_s=0.01)
    assert "\n" not in str(e.value) and [c for c, _ in api.rejections] == [403]


def test_the_trainjob_role_grants_the_calls_the_task_makes_and_nothing_more(api):
    # No condition at the first read (the JobSet being made), then Complete.
    api.stories[NAME] = [[], *story("Complete")]
    api.pods = _trainjob_pods([0, 0, 0], ["", "", ""])
    job_runner.run(_train_job(), api=train_job.API, **api.clients, timeout_s=30, poll_s=0.01)
    api.stories[NAME] = story("Failed")
    api.pods = _trainjob_pods([1, None, None], ["x\n", "", ""])
    with pytest.raises(job_runner.JobFailed):
        job_runner.run(_train_job(), api=train_job.API, **api.clients, timeout_s=30, poll_s=0.01)
    _read_task_identity(api)
    role = role_rules(REPO_ROOT / train_job.API.role_file)
    assert _calls(api) == set(train_job.API.task_access()) == _granted(role)


def test_a_trainjob_whose_jobset_jobset_refuses_fails_the_task_in_minutes(api):
    """The stand-in as the Trainer and JobSet leave such a TrainJob (issue 90, finding 2):
    taken, then never a condition, only the Trainer's Warning event, raised at each retry.
    The task fails on it after ``stuck_s`` (finding 6), not at its timeout of a day.
    ``job_api.job_name`` never makes such a name (test_train_job)."""
    long_name = "t" * 49  # <name>-node-0-2-abcde is 64 characters (train_job refuses it)
    job = _train_job()
    job["metadata"]["name"] = long_name
    with pytest.raises(job_runner.JobFailed) as failed:
        job_runner.run(
            job, api=train_job.API, **api.clients, timeout_s=86_400, poll_s=0.01, stuck_s=0.05
        )
    [event] = api.events[long_name]
    assert event["reason"] == "TrainJobResourcesCreationFailed"
    assert api.rejections == [] and api.deleted == [long_name]
    message = str(failed.value)
    assert message.startswith(f"TrainJob {NAMESPACE}/{long_name} cannot start: {long_name} ")
    assert "TrainJobResourcesCreationFailed" in message and "\n" not in message
    assert "pod names generated for this JobSet will exceed 63 characters" in message


@pytest.mark.parametrize(
    ("pod", "words"),
    [
        (
            {"unschedulable": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."},
            "Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
        ),
        (
            {"waiting": ("ImagePullBackOff", 'Back-off pulling image "registry/x:1"')},
            'ImagePullBackOff: Back-off pulling image "registry/x:1"',
        ),
        (
            {"waiting": ("CreateContainerConfigError", 'secret "s3-keys" not found')},
            'CreateContainerConfigError: secret "s3-keys" not found',
        ),
    ],
)
def test_a_worker_that_cannot_start_fails_the_task_in_minutes(api, pod, words):
    """Issue 90, finding 6: the same cause for ``stuck_s`` (5 minutes unless told) fails the
    task in one line naming the pod and the cause; before, it waited out the day."""
    api.stories[NAME] = story("Created")
    api.pods = [
        FakePod(f"{NAME}-worker-0", NAME),
        FakePod(f"{NAME}-worker-1", NAME, **pod),
    ]
    with pytest.raises(job_runner.JobFailed) as failed:
        job_runner.run(
            _job(), api=tf_job.API, **api.clients, timeout_s=86_400, poll_s=0.01, stuck_s=0.05
        )
    message = str(failed.value)
    assert message.startswith(f"TFJob {NAMESPACE}/{NAME} cannot start: {NAME}-worker-1 {words}")
    assert message.endswith("; deleted") and "\n" not in message
    assert api.deleted == [NAME]


def test_a_pod_the_operator_cannot_make_fails_the_task_but_an_old_event_does_not(api):
    """A quota's refusal, recorded again at each of the operator's retries, fails the task;
    the same event no longer recorded (the cause gone) is no cause: the job succeeds."""
    quota = (
        'Error creating: pods "trainer-worker-1" is forbidden: exceeded quota: gpu-quota, '
        "requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=2, limited: "
        "requests.nvidia.com/gpu=2"
    )
    api.stories[NAME] = story("Created")
    api.warn(NAMESPACE, NAME, "FailedCreatePod", quota)
    with pytest.raises(job_runner.JobFailed, match="cannot start: .* FailedCreatePod: Error"):
        job_runner.run(_job(), api=tf_job.API, **api.clients, timeout_s=60, poll_s=0.01,
                       stuck_s=0.05)  # fmt: skip
    api.stories[NAME] = story("Created", "Created", "Running", "Running", "Succeeded")
    api.events.clear()
    api.warn(NAMESPACE, NAME, "FailedCreatePod", quota, retried=False)
    api.pods = [FakePod(f"{NAME}-worker-0", NAME, exit_code=0, log="done\n")]
    outcome = job_runner.run(_job(), api=tf_job.API, **api.clients, timeout_s=60, poll_s=0.05,
                             stuck_s=0.05)  # fmt: skip
    assert outcome.state == "Succeeded"


# Standalone KFP's account for a run's pods, and a Kubeflow profile's.
PIPELINE_RUNNER = f"system:serviceaccount:{NAMESPACE}:pipeline-runner"
DEFAULT_EDITOR = f"system:serviceaccount:{NAMESPACE}:default-editor"


@pytest.mark.parametrize(
    ("kind", "refused"),
    [
        (tf_job.API, "list events"),
        (
            train_job.API,
            "create trainjobs.trainer.kubeflow.org, get trainjobs.trainer.kubeflow.org, "
            "delete trainjobs.trainer.kubeflow.org, list events",
        ),
    ],
    ids=["tfjob", "trainjob"],
)
def test_as_standalone_kfps_pipeline_runner_the_task_fails_before_making_its_job(
    api, kind, refused
):
    """Issue 90, finding 5: KFP's pipeline-runner may do anything in kubeflow.org but nothing
    in trainer.kubeflow.org and nothing on events. The task asks first and names each call
    and the Role that grants it, in one line; nothing is made."""
    api.grant(PIPELINE_RUNNER, role_rules(PIPELINE_RUNNER_ROLE))
    with pytest.raises(job_runner.JobFailed) as e:
        job_runner.check_access(kind, api.authorization, NAMESPACE, "pipeline-runner")
    assert str(e.value) == (
        f"the task's service account {NAMESPACE}/pipeline-runner may not {refused} in "
        f"namespace {NAMESPACE}: bind it the Role in {kind.role_file}; no {kind.kind} was made"
    )
    assert not api.requests  # a question, not a call


@pytest.mark.parametrize("kind", [tf_job.API, train_job.API], ids=["tfjob", "trainjob"])
@pytest.mark.parametrize(
    ("user", "role"),
    [
        (f"system:serviceaccount:{NAMESPACE}:tfrecord-pipelines-runner", None),
        (DEFAULT_EDITOR, KUBEFLOW_EDIT_RULES),
    ],
    ids=["k8s-role", "kubeflow-profile-default-editor"],
)
def test_the_task_may_make_its_calls_with_k8s_role_or_as_a_profiles_default_editor(
    api, kind, user, role
):
    """k8s/'s Role, and a Kubeflow profile's default-editor (kubeflow-edit, which the Training
    Operator's and Trainer v2's roles extend), allow every call: the check passes."""
    api.grant(user, role_rules(role or REPO_ROOT / kind.role_file))
    job_runner.check_access(kind, api.authorization, NAMESPACE, user.rpartition(":")[2])
    assert all(api.allows(*call) for call in kind.task_access())


def test_a_rule_that_names_its_objects_allows_those_alone(api):
    """RBAC's resourceNames: the task's own pod readable, another pod and a list not."""
    pods_by_name = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"],
                    "resourceNames": [TASK_POD]}  # fmt: skip
    api.grant(PIPELINE_RUNNER, [pods_by_name])
    assert _read_task_identity(api) == ("default-editor", ["registry"])
    with pytest.raises(RuntimeError, match=r'pods "another" is forbidden: .* cannot get'):
        job_trainer.task_identity(api.clients["core"], NAMESPACE, "another")
    assert not api.allows("list", "", "pods")


def test_a_call_refused_during_the_wait_fails_the_task_in_one_line_and_deletes_the_job(api):
    """Without the check (as on bca8a10), pipeline-runner's TFJob was made, then the first list
    of its events raised the client's exception, a traceback; now one line, the job deleted."""
    api.stories[NAME] = story("Created", "Running")
    api.grant(PIPELINE_RUNNER, role_rules(PIPELINE_RUNNER_ROLE))
    with pytest.raises(job_runner.JobFailed) as e:
        _run(api)
    assert str(e.value) == (
        f"TFJob {NAMESPACE}/{NAME} could not be watched: events is forbidden: User "
        f'"{PIPELINE_RUNNER}" cannot list resource "events" in API group "" in the namespace '
        f'"{NAMESPACE}"; deleted'
    )
    assert api.deleted == [NAME]


def test_the_api_servers_passing_errors_are_waited_out_but_not_for_ever(api):
    api.stories[NAME] = story("Created", "Running", "Succeeded")
    api.hiccups = [503, 429]
    outcome, _ = _run(api)
    assert outcome.state == "Succeeded" and not api.hiccups
    api.hiccups = [503] * 10_000
    with pytest.raises(job_runner.JobFailed, match="could not be watched: .*; deleted$"):
        job_runner.run(
            _job(), api=tf_job.API, **api.clients, timeout_s=30, poll_s=0.01, stuck_s=0.2
        )
