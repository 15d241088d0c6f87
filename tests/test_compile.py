"""The compiled Kubeflow spec passes kfp's parser and the KFP server's upload checks."""

import pytest
import yaml
from google.protobuf import json_format
from kfp.client import client as kfp_client
from kfp.pipeline_spec import pipeline_spec_pb2

from conftest import run_cli

EXPECTED_TASKS = {
    "ShardedExampleGen",
    "StatisticsGen",
    "ImportSchemaGen",
    "ExampleValidator",
    "Transform",
    "Trainer",
    "Evaluator",
    "Pusher",
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    output = tmp_path_factory.mktemp("kfp") / "penguins.yaml"
    result = run_cli(
        "compile",
        "--output",
        str(output),
        "--image",
        "registry.example/tp:1",
        "--gpus",
        "2",
        "--trainer-cpu",
        "8",
        "--trainer-memory",
        "32Gi",
    )
    assert result.returncode == 0, result.stderr
    assert str(output) in result.stdout
    return output


def test_spec_parses_with_kfp_into_pipeline_spec(compiled):
    # kfp.Client's own loader: the same parse upload_pipeline and create_run do.
    spec = kfp_client._extract_pipeline_yaml(str(compiled)).pipeline_spec
    # And a strict parse of the raw document (unknown fields are errors).
    json_format.ParseDict(yaml.safe_load(compiled.read_text()), pipeline_spec_pb2.PipelineSpec())
    # What KFP's API server checks on upload (backend/src/apiserver/template/v2_template.go).
    assert spec.schema_version == "2.1.0"
    assert spec.pipeline_info.name == "penguins"
    assert set(spec.root.dag.tasks) == EXPECTED_TASKS


def test_no_resolver_node(compiled):
    text = compiled.read_text()
    assert "resolver" not in text.lower()
    spec = yaml.safe_load(text)
    for executor in spec["deploymentSpec"]["executors"].values():
        assert "resolver" not in executor, executor


def test_components_run_in_the_given_image_with_the_project_entry_points(compiled):
    spec = yaml.safe_load(compiled.read_text())
    executors = spec["deploymentSpec"]["executors"]
    images = {e["container"]["image"] for e in executors.values() if "container" in e}
    assert images == {"registry.example/tp:1"}
    transform = spec["root"]["dag"]["tasks"]["Transform"]["inputs"]["parameters"]
    trainer = spec["root"]["dag"]["tasks"]["Trainer"]["inputs"]["parameters"]
    assert "components.transform.preprocessing.preprocessing_fn" in str(transform)
    assert "components.trainer.run.run_fn" in str(trainer)


def test_compile_rejects_a_non_yaml_output(tmp_path):
    result = run_cli("compile", "--output", str(tmp_path / "p.json"))
    assert result.returncode == 2
    assert (
        result.stderr.strip() == f"error: --output {tmp_path / 'p.json'} must end in .yaml or .yml."
    )


def _executor(spec: dict, task: str) -> dict:
    component = spec["root"]["dag"]["tasks"][task]["componentRef"]["name"]
    label = spec["components"][component]["executorLabel"]
    return spec["deploymentSpec"]["executors"][label]


def test_the_trainer_asks_for_its_gpus_cpu_and_memory(compiled):
    spec = yaml.safe_load(compiled.read_text())
    resources = _executor(spec, "Trainer")["container"]["resources"]
    assert resources["accelerator"] == {
        "type": "nvidia.com/gpu",
        "count": "2",
        "resourceType": "nvidia.com/gpu",
        "resourceCount": "2",
    }
    assert resources["resourceCpuLimit"] == "8"
    assert resources["cpuLimit"] == 8.0
    assert resources["resourceMemoryLimit"] == "32Gi"
    assert resources["memoryLimit"] == pytest.approx(34.359738368)
    # Only the Trainer needs a GPU.
    assert "resources" not in _executor(spec, "Transform")["container"]


def test_training_options_reach_the_trainer(compiled):
    spec = yaml.safe_load(compiled.read_text())
    trainer = str(spec["root"]["dag"]["tasks"]["Trainer"]["inputs"]["parameters"])
    assert '"training": {"batch_size": 64' in trainer.replace("\\", "")


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--trainer-memory", "lots"], "Trainer memory 'lots' is not a positive Kubernetes"),
        (["--gpus", "-1"], "gpus must be 0 or more, got -1."),
    ],
)
def test_bad_trainer_resources_are_one_line_errors(flags, message, tmp_path):
    result = run_cli("compile", "--output", str(tmp_path / "p.yaml"), *flags)
    assert result.returncode == 2
    assert result.stderr.strip().startswith(f"error: {message}")
    assert not (tmp_path / "p.yaml").exists()
