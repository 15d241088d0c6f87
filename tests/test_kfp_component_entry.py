"""The KFP components' entry point: a task's KFP artifacts and parameters as the ExecutorInput
TFX's Kubeflow V2 runner reads for the TFX component behind it."""

import json

import pytest
from kfp.pipeline_spec import pipeline_spec_pb2

from conftest import REPO_ROOT
from tfrecord_pipelines.kubeflow.reusable import parameter_names
from tfrecord_pipelines.kubeflow.reusable.adapters import BUILDERS
from tfrecord_pipelines.kubeflow.reusable.definitions import COMPONENTS
from tfrecord_pipelines.kubeflow.reusable.entry import tfx_executor_input


def test_every_component_has_the_tfx_component_its_inputs_and_outputs_name():
    for name, component in COMPONENTS.items():
        spec = component.component_spec
        # The specs' defaults, and a value for each parameter that has none.
        parameters = {
            key: given.default for key, given in spec.inputs.items() if "@" not in given.type
        }
        parameters.update(
            label="species", input_base=str(REPO_ROOT / "data" / "penguins"), serving_dir="/s"
        )
        built = BUILDERS[name](parameters, set(spec.inputs))
        artifacts = {key for key, given in spec.inputs.items() if "@" in given.type}
        assert artifacts <= set(built.spec.INPUTS), name
        assert set(spec.outputs) <= set(built.spec.OUTPUTS), name


def test_the_adapters_read_parameters_the_specs_have():
    """Each name the adapters read a KFP parameter by is a parameter of some component."""
    given = {
        key
        for component in COMPONENTS.values()
        for key, spec in component.component_spec.inputs.items()
        if "@" not in spec.type
    }
    read = {value for name, value in vars(parameter_names).items() if name.isupper()}
    assert read and read <= given, read - given


def _task(tmp_path, splits) -> pipeline_spec_pb2.ExecutorInput:
    examples = tmp_path / "examples"
    for split in splits:
        (examples / f"Split-{split}").mkdir(parents=True)
    task = pipeline_spec_pb2.ExecutorInput()
    for key, uri in (("examples", examples), ("schema", tmp_path), ("transform_graph", tmp_path)):
        artifact = task.inputs.artifacts[key].artifacts.add(uri=str(uri))
        artifact.type.schema_title = "system.Dataset" if key == "examples" else "system.Artifact"
    task.outputs.artifacts["model"].artifacts.add(uri=str(tmp_path / "model"))
    task.outputs.artifacts["model_run"].artifacts.add(uri=str(tmp_path / "model_run"))
    return task


def test_a_users_dataset_gets_tfx_types_and_split_names_from_its_folders(tmp_path):
    trainer = BUILDERS["trainer"]({"label": "species", "train_steps": 300}, set())
    translated, inputs_spec = tfx_executor_input(trainer, _task(tmp_path, ("train", "eval")))
    [examples] = translated.inputs.artifacts["examples"].artifacts
    assert examples.type.schema_title == "tfx.types.standard_artifacts.Examples"
    assert json.loads(examples.metadata["split_names"]) == ["eval", "train"]
    [model] = translated.outputs.artifacts["model"].artifacts
    assert model.type.schema_title == "tfx.types.standard_artifacts.Model"
    # The exec properties as TFX serializes them; the inputs spec types the integers.
    assert json.loads(translated.inputs.parameter_values["train_args"].string_value) == {
        "num_steps": 300
    }
    assert (
        json.loads(translated.inputs.parameter_values["custom_config"].string_value)["task"][
            "label"
        ]
        == "species"
    )
    assert "module_file" not in translated.inputs.parameter_values


def test_examples_without_split_folders_are_a_one_line_error(tmp_path):
    trainer = BUILDERS["trainer"]({"label": "species"}, set())
    with pytest.raises(ValueError, match="holds no Split-<name> folder"):
        tfx_executor_input(trainer, _task(tmp_path, ()))
