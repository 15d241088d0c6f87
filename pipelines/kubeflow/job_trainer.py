"""The Trainer's executor when the pipeline was compiled with more than one trainer worker.

As TFX's Vertex trainer runs its custom job from the Trainer's task
(tfx/extensions/google_cloud_ai_platform/trainer/executor.py), the task's executor
creates a training job (a TFJob, ``tf_job``, or a TrainJob, ``train_job``) from the
template the compiled pipeline holds in the Trainer's custom_config
(``worker_template.WorkerTemplate``), waits for it (``job_runner``) and ends as it ends.
Each worker runs the task's own command line, the same entry point with the same
ExecutorInput, plus ``--tfjob_worker``: there the entry point reads every input and
writes every output in its store, as no launcher stages anything in a worker's pod
(``kfp_executor.locate_in_stores``), and this executor, in a process whose ``TF_CONFIG``
names more than one worker, trains (TFX's GenericExecutor, the built-in run_fn's
MultiWorkerMirroredStrategy). The chief (worker 0) writes the model and its reports at
the task's output URIs; the task's own output folders stay empty, so its launcher
uploads nothing over them.

The task needs what KFP's driver gives every executor pod: ``KFP_POD_NAME`` and
``KFP_POD_UID`` (the job's name and its owner; compiler/argocompiler/common.go:42-56 of
kubeflow/pipelines 7b70c7b95f68), and the pod's service account, whose namespace and
token the in-cluster configuration reads (k8s/'s RBAC lets it manage its jobs, read its
own pod and its workers' pods, logs and events; the task asks the API server first and
fails in one line, before any job exists, if a call would be refused). The workers run
as the task's pod runs: its service account (so its cloud identity, Workload Identity or
IRSA, and its role bindings) and its image pull secrets, read from the task's pod when
the job is made.
"""

from __future__ import annotations

import json
import os
import sys

from absl import logging
from tfx.components.trainer import executor as trainer_executor
from tfx.components.util import udf_utils

from tfrecord_pipelines.components.trainer import workers
from tfrecord_pipelines.kubeflow import api_errors
from tfrecord_pipelines.kubeflow.training_job import job_api, job_runner, worker_template

POD_NAME, POD_UID = "KFP_POD_NAME", "KFP_POD_UID"
# Where Kubernetes mounts the pod's service account (its namespace, token and CA).
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class Executor(trainer_executor.GenericExecutor):
    """Trains in a job's workers: creates the job from the task, trains in each worker."""

    def Do(self, input_dict, output_dict, exec_properties) -> None:  # noqa: N802 (TFX's name)
        template = worker_template.WorkerTemplate.from_custom_config(
            json.loads(exec_properties.get("custom_config") or "null")
        )
        place = workers.Workers.from_environment()
        if template is None or (place.is_chief and place.count > 1):
            super().Do(input_dict, output_dict, exec_properties)
            return
        if place.count > 1:
            # TFX's Do but for its check that the model exists: the chief alone writes it.
            fn_args = self._GetFnArgs(input_dict, output_dict, exec_properties)
            udf_utils.get_fn(exec_properties, "run_fn")(fn_args)
            return
        outcome = run_job(template)
        logging.info(
            "The %s's %d workers trained in %.0f s.",
            template.kind,
            template.workers,
            outcome.seconds,
        )


def worker_command(argv: list[str]) -> list[str]:
    """The workers' command: the task's own command line, and ``--tfjob_worker``."""
    return [*argv, f"--{worker_template.WORKER_FLAG}"]


def run_job(template: worker_template.WorkerTemplate, environ=os.environ) -> job_runner.Outcome:
    """Creates the task's job from TEMPLATE through the in-cluster API and waits for it.

    Raises:
      job_runner.JobFailed: the task may not make the calls it needs, or the job failed,
        timed out or was refused, in one line.
      RuntimeError: not in a KFP pod (no pod name or uid, no service account), in one line.
    """
    from kubernetes import client, config

    missing = [name for name in (POD_NAME, POD_UID) if not environ.get(name)]
    namespace_file = os.path.join(SERVICE_ACCOUNT_DIR, "namespace")
    if missing or not os.path.exists(namespace_file):
        raise RuntimeError(
            f"{template.workers} trainer workers need the task to run in a KFP pod with a "
            f"service account: {', '.join(missing) or namespace_file} missing"
        )
    with open(namespace_file, encoding="utf-8") as f:
        namespace = f.read().strip()
    config.load_incluster_config()
    core = client.CoreV1Api()
    account, pull_secrets = task_identity(core, namespace, environ[POD_NAME])
    job_runner.check_access(
        template.api, client.AuthorizationV1Api(), namespace, account or "default"
    )
    job = template.job(
        name=job_api.job_name(environ[POD_NAME], template.api.max_name(template.workers)),
        namespace=namespace,
        command=worker_command(list(sys.orig_argv)),
        owner={"name": environ[POD_NAME], "uid": environ[POD_UID]},
        service_account=account,
        image_pull_secrets=pull_secrets,
    )
    return job_runner.run(
        job,
        api=template.api,
        custom_objects=client.CustomObjectsApi(),
        core=core,
        timeout_s=template.timeout_s,
        log=lambda line: logging.info("%s", line),
    )


def task_identity(core, namespace: str, pod_name: str) -> tuple[str | None, list[str]]:
    """The task pod's service account and image pull secrets, which its workers get.

    Raises:
      RuntimeError: the pod cannot be read (the task's Role lacks ``get`` on pods), in one
        line: workers made without its identity would run as the namespace's default.
    """
    from kubernetes.client.exceptions import ApiException

    try:
        pod = core.read_namespaced_pod(pod_name, namespace)
    except ApiException as e:
        raise RuntimeError(
            f"the task cannot read its own pod {namespace}/{pod_name} to give its service "
            f"account to the workers: {api_errors.message_of(e) or f'{e.status} {e.reason}'}"
        ) from None
    secrets = [s.name for s in pod.spec.image_pull_secrets or [] if s.name]
    return pod.spec.service_account_name, secrets
