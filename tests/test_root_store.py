"""A task reaches the pipeline root's store as KFP's launcher in its pod does, with no endpoint
compiled in (issue 89, finding 4): no one literal fits KFP 2.14, 2.15 and 2.16+. The whole
pipeline on 2.16's layout is test_cluster_cache's."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from component_image import podman
from conftest import REPO_ROOT
from tfrecord_pipelines.components.storage.object_stores import ARTIFACT_ENDPOINT
from tfrecord_pipelines.kubeflow import root_store

ROOT = "minio://mlpipeline/v2/artifacts/p/run"


def _executor_input(session: dict | None = None, uri: str = f"{ROOT}/ExampleGen/1/examples"):
    given = {"uri": uri, "metadata": {}}
    if session is not None:
        given["metadata"]["store_session_info"] = json.dumps(session)
    return {
        "inputs": {"artifacts": {"examples": {"artifacts": [given]}}},
        "outputs": {"artifacts": {"model": {"artifacts": [{"uri": f"{ROOT}/Trainer/2/model"}]}}},
    }


def test_an_inputs_recorded_session_is_the_endpoint():
    session = {
        "Provider": "minio",
        "Params": {"endpoint": "minio.store:9000", "disableSSL": "true"},
    }
    assert root_store.launcher_endpoint(_executor_input(session)) == "http://minio.store:9000"
    tls = {"Provider": "s3", "Params": {"endpoint": "s3.example", "disableSSL": "false"}}
    assert root_store.from_inputs(_executor_input(tls), ("minio", "mlpipeline")) == (
        "https://s3.example"
    )
    # Another bucket's artifact says nothing of the root's store.
    other = _executor_input(session, uri="minio://elsewhere/x")
    assert root_store.from_inputs(other, ("minio", "mlpipeline")) is None


def test_the_shipped_config_maps_provider_is_the_endpoint():
    data = yaml.safe_load((REPO_ROOT / "k8s" / "base" / "kfp-launcher.yaml").read_text())["data"]
    assert root_store.from_config_map(data, "s3") == "https://s3.amazonaws.com"
    assert root_store.from_config_map(data, "minio") is None
    assert root_store.from_config_map({}, "minio") is None


def test_an_endpoint_compiled_in_wins_and_none_is_found_for_a_gs_root(monkeypatch):
    session = {
        "Provider": "minio",
        "Params": {"endpoint": "minio.store:9000", "disableSSL": "true"},
    }
    argv = ["x", "--json_serialized_invocation_args", json.dumps(_executor_input(session))]
    monkeypatch.setenv(ARTIFACT_ENDPOINT, "http://given:9000")
    root_store.apply(argv)
    assert os.environ[ARTIFACT_ENDPOINT] == "http://given:9000"
    monkeypatch.delenv(ARTIFACT_ENDPOINT)
    root_store.apply(argv)
    assert os.environ[ARTIFACT_ENDPOINT] == "http://minio.store:9000"
    gs_root = {"outputs": {"artifacts": {"m": {"artifacts": [{"uri": "gs://kfp/root/m"}]}}}}
    assert root_store.launcher_endpoint(gs_root) is None


# Each release's Services in the kubeflow namespace (manifests/kustomize at each tag): the
# names a pod can resolve.
LAYOUTS = {
    "2.14": ("minio-service.kubeflow",),
    "2.15": ("minio-service.kubeflow", "seaweedfs.kubeflow"),
    "2.16": ("seaweedfs.kubeflow",),
}
FIND = "from tfrecord_pipelines.kubeflow import root_store; print(root_store.release_default())"


@pytest.mark.image
@pytest.mark.parametrize("release", sorted(LAYOUTS))
def test_each_releases_default_is_found_by_its_services_in_the_image(release, component_image):
    from launcher_sessions import RELEASE_ENDPOINTS

    hosts = []
    for index, name in enumerate(LAYOUTS[release]):
        hosts += ["--add-host", f"{name}:127.0.0.{10 + index}"]
    ran = podman("run", "--rm", "--network", "host", *hosts, component_image, "python", "-c", FIND)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == f"http://{RELEASE_ENDPOINTS[release]}"
