"""The local paths a compiled task is given, and the volumes that hold them
(``kubeflow.task_paths``), on a spec reduced to what they read."""

from __future__ import annotations

import json

import pytest

from tfrecord_pipelines.kubeflow.artifact_store import ArtifactStoreAccess
from tfrecord_pipelines.kubeflow.platform_spec import VolumeMount
from tfrecord_pipelines.kubeflow.task_paths import (
    UnreachablePathError,
    check_reachable,
    local_paths,
    volumes_by_task,
)


def _task(parameters: dict, args: list[str]) -> tuple[dict, dict, dict]:
    return (
        {"componentRef": {"name": "comp-x"}, "inputs": {"parameters": {
            name: {"runtimeValue": {"constant": value}} for name, value in parameters.items()
        }}},
        {"executorLabel": "x_executor"},
        {"container": {"args": args}},
    )  # fmt: skip


def _spec(parameters: dict, args: list[str]) -> dict:
    task, component, executor = _task(parameters, args)
    return {
        "root": {"dag": {"tasks": {"Pusher": task}}},
        "components": {"comp-x": component},
        "deploymentSpec": {"executors": {"x_executor": executor}},
    }


SPEC = _spec(
    {
        # TFX's custom_config: a path inside a parameter's JSON.
        "custom_config": json.dumps({"serving": {"base_directory": "/pipeline/models/events"}}),
        "input_base": "gs://bucket/events",
        "eval_rows": 500,
    },
    ["--json_serialized_invocation_args", "{{$}}", "--daily_state_dir=/pipeline/state/events"],
)


def test_paths_in_parameters_their_json_and_the_containers_arguments():
    assert local_paths(SPEC) == {"Pusher": ["/pipeline/models/events", "/pipeline/state/events"]}


def test_a_volume_is_mounted_where_a_path_under_it_is_given():
    models, data = VolumeMount("models", "/pipeline"), VolumeMount("data", "/data")
    assert volumes_by_task(SPEC, [models, data]) == {"Pusher": (models,)}
    # A folder named like the mount's beginning is not under it.
    assert volumes_by_task(SPEC, [VolumeMount("p", "/pipe")]) == {}


def test_a_path_no_volume_holds_is_named_with_its_task():
    with pytest.raises(UnreachablePathError, match=r"^Pusher is given /pipeline/models/events"):
        check_reachable(SPEC, {}, in_image=("/app",))
    check_reachable(SPEC, {"Pusher": [VolumeMount("models", "/pipeline")]}, in_image=())


@pytest.mark.parametrize(
    "secret, keys",
    [
        ("mlpipeline-minio-artifact", ("accesskey", "secretkey")),
        (
            "creds:AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY",
            ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
        ),
    ],
)
def test_the_artifact_secret_names_its_entries(secret, keys):
    access = ArtifactStoreAccess.parse(secret, "http://minio-service.kubeflow:9000")
    assert access.secret_env().key_to_env == tuple(
        zip(
            keys,
            (
                "TFRECORD_PIPELINES_ARTIFACT_ACCESS_KEY_ID",
                "TFRECORD_PIPELINES_ARTIFACT_SECRET_ACCESS_KEY",
            ),
            strict=True,
        )
    )


@pytest.mark.parametrize(
    "secret, endpoint, message",
    [
        (
            "creds:only-one",
            "http://m:9000",
            "must be NAME or NAME:ACCESS_KEY_ENTRY,SECRET_KEY_ENTRY",
        ),
        ("creds", "minio-service:9000", "must be a URL"),
    ],
)
def test_bad_artifact_store_settings_are_named(secret, endpoint, message):
    with pytest.raises(ValueError, match=message):
        ArtifactStoreAccess.parse(secret, endpoint)
