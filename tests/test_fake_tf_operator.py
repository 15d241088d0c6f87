"""The Training Operator's stand-in fails where a cluster fails (a contract test of
``fake_tf_operator``): in an Istio namespace a worker without the annotation keeps its
proxy and never ends; a Secret it lacks leaves its pods waiting, as kubelet does."""

from __future__ import annotations

import json

import pytest

from fake_k8s_api import FakeK8sApi
from fake_tf_operator import FakeTFOperator
from tfrecord_pipelines.kubeflow.training_job import job_api, tf_job
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources

pytestmark = pytest.mark.image

NAMESPACE = "kubeflow-user-example-com"


def _run(tmp_path, component_image, name, annotated: bool, env=()):
    """The job's last conditions and pods, the operator given 20 s for its workers."""
    api = FakeK8sApi()
    operator = FakeTFOperator(api, tmp_path, {}, {}, {}, istio_namespaces=(NAMESPACE,))
    operator.worker_timeout_s = 20
    job = tf_job.tf_job(
        name=name, namespace=NAMESPACE, image=component_image, command=["true"], workers=2,
        resources=TrainerResources(gpus=0), env=env,
    )  # fmt: skip
    if not annotated:
        del job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"]
    try:
        path = f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/tfjobs"
        status, _ = api.handle("POST", path, {}, json.dumps(job).encode())
        assert status == 201
    finally:
        operator.close()  # waits for the workers, then removes their pod
    conditions = api.jobs[(NAMESPACE, name)]["status"]["conditions"]
    return [c for c in conditions if c["status"] == "True"], api.pods


def test_a_proxied_worker_never_ends_and_an_annotated_one_does(tmp_path, component_image):
    [last], _ = _run(tmp_path, component_image, "proxied", annotated=False)
    assert last["type"] == "Failed" and "still running after 20 s" in last["message"]
    [last], _ = _run(tmp_path, component_image, "annotated", annotated=True)
    assert last["type"] == "Succeeded"
    assert job_api.NO_SIDECAR == {"sidecar.istio.io/inject": "false"}


def test_a_missing_secret_leaves_the_pods_waiting(tmp_path, component_image):
    secret = {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s3-keys", "key": "k"}}}
    [last], pods = _run(tmp_path, component_image, "keyless", annotated=True, env=[secret])
    assert last["type"] == "Created"
    assert [p.waiting for p in pods] == [
        ("CreateContainerConfigError", 'secret "s3-keys" not found')
    ] * 2
