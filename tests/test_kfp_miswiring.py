"""A miswired plain KFP pipeline of our components compiles (KFP wires system.Artifact from and
into anything), and the components' entry point refuses it in one line before the executor
runs: each input's folder is held to the kind of artifact its input expects."""

import json

import pytest
from google.protobuf import json_format
from kfp import compiler, dsl
from kfp.pipeline_spec import pipeline_spec_pb2

from tfrecord_pipelines.kubeflow.reusable import artifact_kinds, entry
from tfrecord_pipelines.kubeflow.reusable.definitions import COMPONENTS


def _write(folder, *files: str) -> str:
    for name in files:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder)


@pytest.fixture()
def artifacts(tmp_path) -> dict[str, str]:
    """A folder of each kind, laid out as TFX's components write them."""
    return {
        "examples": _write(tmp_path / "examples", "Split-train/data_tfrecord-00000.gz"),
        "statistics": _write(tmp_path / "statistics", "Split-train/FeatureStats.pb"),
        "schema": _write(tmp_path / "schema", "schema.pbtxt"),
        "transform_graph": _write(tmp_path / "graph", "transform_fn/saved_model.pb"),
        "model": _write(tmp_path / "model", "Format-Serving/saved_model.pb"),
        "blessing": _write(tmp_path / "blessing", "BLESSED"),
    }


def test_each_kind_is_told_by_its_folder(artifacts):
    assert {name: artifact_kinds.kind_of(path) for name, path in artifacts.items()} == {
        "examples": artifact_kinds.EXAMPLES,
        "statistics": artifact_kinds.STATISTICS,
        "schema": artifact_kinds.SCHEMA,
        "transform_graph": artifact_kinds.TRANSFORM_GRAPH,
        "model": artifact_kinds.MODEL,
        "blessing": artifact_kinds.BLESSING,
    }


def test_the_four_miswirings_compile(tmp_path):
    """KFP itself refuses none of them (the components' system.Artifact)."""

    @dsl.pipeline(name="miswired")
    def miswired():
        converted = COMPONENTS["sharded_example_gen"](input_base="/data", label="y")
        schema = COMPONENTS["schema_gen"](statistics=converted.outputs["statistics"])
        # Statistics into the Trainer's examples, the schema into Transform's.
        transform = COMPONENTS["transform"](
            examples=schema.outputs["schema"], schema=schema.outputs["schema"], label="y"
        )
        trainer = COMPONENTS["trainer"](
            examples=converted.outputs["statistics"],
            schema=schema.outputs["schema"],
            transform_graph=transform.outputs["transform_graph"],
            label="y",
        )
        evaluator = COMPONENTS["evaluator"](
            examples=converted.outputs["examples"], model=trainer.outputs["model"], label="y"
        )
        # A blessing into the Pusher's model, a model into its blessing.
        COMPONENTS["pusher"](
            model=evaluator.outputs["blessing"],
            model_blessing=trainer.outputs["model"],
            serving_dir="/serving",
        )

    compiler.Compiler().compile(miswired, str(tmp_path / "miswired.yaml"))
    assert (tmp_path / "miswired.yaml").stat().st_size > 0


def _task_input(inputs: dict[str, str], outputs: tuple[str, ...], tmp_path) -> str:
    task = pipeline_spec_pb2.ExecutorInput()
    for key, uri in inputs.items():
        task.inputs.artifacts[key].artifacts.add(uri=uri).type.schema_title = "system.Artifact"
    for key in outputs:
        task.outputs.artifacts[key].artifacts.add(uri=str(tmp_path / "out" / key))
    task.outputs.output_file = str(tmp_path / "out" / "executor_output.json")
    return json_format.MessageToJson(task)


MISWIRINGS = {
    "statistics into the Trainer's examples": (
        "trainer",
        {"label": "y"},
        {"examples": "statistics", "schema": "schema", "transform_graph": "transform_graph"},
        ("model", "model_run"),
        "Input 'examples' expects examples, but {statistics} holds statistics",
    ),
    "the schema into Transform's examples": (
        "transform",
        {"label": "y"},
        {"examples": "schema", "schema": "schema"},
        ("transform_graph",),
        "Input 'examples' expects examples, but {schema} holds a schema",
    ),
    "a blessing into the Pusher's model": (
        "pusher",
        {"serving_dir": "/serving"},
        {"model": "blessing", "model_blessing": "blessing"},
        ("pushed_model",),
        "Input 'model' expects a model, but {blessing} holds a model blessing",
    ),
    "a model into the Pusher's blessing": (
        "pusher",
        {"serving_dir": "/serving"},
        {"model": "model", "model_blessing": "model"},
        ("pushed_model",),
        "Input 'model_blessing' expects a model blessing, but {model} holds a model",
    ),
}


@pytest.mark.parametrize("wiring", sorted(MISWIRINGS))
def test_the_entry_point_refuses_a_miswiring_in_one_line(wiring, artifacts, tmp_path, capsys):
    component, parameters, inputs, outputs, message = MISWIRINGS[wiring]
    task = json.loads(_task_input({k: artifacts[v] for k, v in inputs.items()}, outputs, tmp_path))
    for name, value in parameters.items():
        task["inputs"].setdefault("parameterValues", {})[name] = value
    with pytest.raises(SystemExit) as refused:
        entry.main([component, json.dumps(task)])
    said = str(refused.value.code)
    assert said.startswith("error: " + message.format(**artifacts)), said
    assert "\n" not in said
    assert not (tmp_path / "out").exists()  # refused before the executor wrote anything


def test_a_correct_wiring_passes_the_check(artifacts):
    for name in ("examples", "statistics", "schema", "transform_graph", "model", "blessing"):
        type_name = {
            "examples": "Examples",
            "statistics": "ExampleStatistics",
            "schema": "Schema",
            "transform_graph": "TransformGraph",
            "model": "Model",
            "blessing": "ModelBlessing",
        }[name]
        artifact_kinds.check_input(name, type_name, artifacts[name], artifacts[name])
