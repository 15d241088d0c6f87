"""The fake KFP API server refuses and accepts what the real one (2.4.1, 2.5.0) does.

One test per behaviour of kubeflow/pipelines' ``backend/src/apiserver`` that
``submit`` relies on, each against a small hand-written PipelineSpec; the
compiled pipeline itself goes through the fake in ``test_submit_contract.py``.
The source of each behaviour is named in ``fake_kfp_api``'s docstring.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from fake_kfp_api import API, MAX_FILE_LENGTH, Call, FakeKfpApi

SPEC: dict[str, Any] = {
    "pipelineInfo": {"name": "penguins"},
    "schemaVersion": "2.1.0",
    "sdkVersion": "tfx-1.16.0",
    "root": {
        "dag": {
            "tasks": {
                "Trainer": {"taskInfo": {"name": "Trainer"}, "componentRef": {"name": "Trainer"}}
            }
        }
    },
    "components": {"Trainer": {"executorLabel": "Trainer_executor"}},
    "deploymentSpec": {
        "executors": {
            "Trainer_executor": {
                "container": {"image": "example.com/t:1", "command": ["python", "-m", "x"]}
            }
        }
    },
}
PLATFORM = {
    "platforms": {
        "kubernetes": {
            "deploymentSpec": {
                "executors": {"Trainer_executor": {"nodeSelector": {"labels": {"gpu": "true"}}}}
            }
        }
    }
}


def _spec(**changes: Any) -> dict:
    spec = copy.deepcopy(SPEC)
    spec.update(changes)
    return spec


def _api() -> tuple[FakeKfpApi, str]:
    api = FakeKfpApi()
    return api, api.add_experiment("penguins")


def _run(
    api: FakeKfpApi,
    experiment_id: str,
    spec: dict,
    platform: dict | None = None,
    parameters: dict | None = None,
) -> tuple[int, dict]:
    """POST /runs with an inline spec, wrapped with its PlatformSpec as kfp.Client does."""
    body = {
        "display_name": "nightly",
        "experiment_id": experiment_id,
        "pipeline_spec": spec
        if platform is None
        else {"pipeline_spec": spec, "platform_spec": platform},
        "runtime_config": {"parameters": parameters or {}},
    }
    return api.handle(Call("POST", f"{API}/runs", {}, None, body), {})


def _upload(api: FakeKfpApi, content: bytes, filename: str = "p.yaml") -> tuple[int, dict]:
    call = Call("POST", f"{API}/pipelines/upload", {"name": "penguins"}, None, None)
    return api.handle(call, {"uploadfile": (filename, content)})


def _yaml(*documents: dict) -> bytes:
    return yaml.safe_dump_all(documents).encode()


def test_a_valid_run_and_upload_are_accepted():
    api, experiment_id = _api()
    assert _run(api, experiment_id, _spec(), PLATFORM)[0] == 200
    assert api.received_specs == [(SPEC, PLATFORM)]
    assert _upload(api, _yaml(SPEC, PLATFORM))[0] == 200
    assert api.rejections == []
    (template,) = api.templates.values()
    assert template.platform == PLATFORM


def test_a_platform_spec_that_does_not_parse_is_ignored_not_refused():
    # A typo: the real server keeps a document only if it parses into a
    # PlatformSpec with a kubernetes platform, and says nothing of the rest.
    typo = {"platforms": {"kubernetes": {"deploymentSpecs": {"executors": {}}}}}
    api, experiment_id = _api()
    assert _run(api, experiment_id, _spec(), typo)[0] == 200
    assert api.received_specs == [(SPEC, {})]
    assert _upload(api, _yaml(SPEC, typo))[0] == 200
    (template,) = api.templates.values()
    assert (template.platform, template.ignored) == ({}, (typo,))
    assert api.rejections == []


def test_an_upload_name_outside_the_mlmd_pattern_is_a_server_error():
    api, _ = _api()
    status, body = _upload(api, _yaml(_spec(pipelineInfo={"name": "Penguins_v2"})))
    assert status == 500
    assert "must contain only lowercase alphanumeric characters or '-'" in body["error_message"]
    assert api.pipelines == {}


def test_an_upload_over_32_mib_is_refused():
    api, _ = _api()
    # A comment as the padding: YAML's Python dumper takes half a minute over 32 MiB.
    padded = _yaml(_spec()) + b"# " + b"x" * MAX_FILE_LENGTH + b"\n"
    status, body = _upload(api, padded)
    assert status == 400
    assert "File size too large. Maximum supported size: 33554432" in body["error_message"]


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({}, "parameter epochs is not optional, yet has neither default value nor user provided"),
        ({"epochs": "ten"}, "input parameter epochs requires type double or integer, but"),
        ({"epochs": 10, "epoch": 3}, "parameter(s) provided are not required by pipeline: epoch"),
    ],
    ids=["missing", "mistyped", "extra"],
)
def test_run_parameters_must_be_the_roots_typed_and_no_more(parameters, message):
    spec = _spec()
    spec["root"]["inputDefinitions"] = {
        "parameters": {"epochs": {"parameterType": "NUMBER_INTEGER"}}
    }
    api, experiment_id = _api()
    status, body = _run(api, experiment_id, spec, parameters=parameters)
    assert status == 400
    assert message in body["message"]
    assert api.runs == []


def test_run_parameters_a_pipeline_without_inputs_refuses_any():
    api, experiment_id = _api()
    status, body = _run(api, experiment_id, _spec(), parameters={"epochs": 3})
    assert status == 400
    assert "not required by pipeline: epochs" in body["message"]


def _broken(kind: str) -> dict:
    spec = _spec()
    if kind == "missing executor":
        spec["deploymentSpec"] = {"executors": {}}
    elif kind == "unresolved component":
        spec["components"] = {"Trainer_v1": spec["components"]["Trainer"]}
    elif kind == "resolver executor":
        spec["deploymentSpec"]["executors"]["Trainer_executor"] = {"resolver": {}}
    elif kind == "task name":
        tasks = spec["root"]["dag"]["tasks"]
        tasks["trainer_1"] = tasks.pop("Trainer")
    return spec


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("missing executor", "executor(label='Trainer_executor') not found in deployment config"),
        ("unresolved component", "cannot find component ref name='Trainer'"),
        ("resolver executor", "non-container and non-importer executor not implemented"),
        ("task name", "tasks.trainer_1 name must consist of alpha-numeric characters or '-'"),
    ],
)
def test_run_creation_compiles_the_dag_as_the_argo_compiler(kind, message):
    api, experiment_id = _api()
    status, body = _run(api, experiment_id, _broken(kind))
    assert status == 500
    assert message in body["message"]
    assert api.runs == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (_spec(schemaVersion="2.0.0"), "KFP only supports schema version 2.1.0"),
        (_spec(pipelineInfo={"name": "---"}), "name should consist of lower case alphanumeric"),
        (_spec(unknownField=1), "no pipeline spec is provided"),
    ],
    ids=["schema-version", "name-without-alphanumerics", "does-not-parse"],
)
def test_run_with_a_bad_spec_is_a_server_error(spec, message):
    api, experiment_id = _api()
    status, body = _run(api, experiment_id, spec)
    assert status == 500
    assert message in body["message"]
