"""The label and the problem are given once, to ShardedExampleGen: Transform, the Trainer and
the Evaluator (the KFP components) take them from their examples' metadata, where
ShardedExampleGen records them, and refuse in one line a given one that is not the
recorded one (tests/test_pipeline_e2e.py: the recording)."""

import json

import pytest
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from tfrecord_pipelines.kubeflow.reusable import entry
from tfrecord_pipelines.kubeflow.reusable.recorded_task import task_parameters


def _task(recorded: dict[str, str], uri: str = "/examples") -> pipeline_spec_pb2.ExecutorInput:
    task = pipeline_spec_pb2.ExecutorInput()
    examples = task.inputs.artifacts["examples"].artifacts.add(uri=uri)
    for name, value in recorded.items():
        examples.metadata[name] = value
    return task


def test_a_task_not_given_is_the_recorded_one():
    recorded = {"label": "species", "problem": "classification"}
    assert task_parameters({"train_steps": 5}, _task(recorded)) == {
        "train_steps": 5,
        "label": "species",
        "problem": "classification",
    }


def test_the_same_task_given_again_passes():
    recorded = {"label": "price", "problem": "regression"}
    given = {"label": "price", "problem": "regression"}
    assert task_parameters(given, _task(recorded)) == given


def test_examples_from_elsewhere_need_the_label_given():
    assert task_parameters({"label": "y"}, _task({})) == {"label": "y", "problem": "classification"}
    with pytest.raises(ValueError, match=r"^No label: give it to ShardedExampleGen"):
        task_parameters({}, _task({}))


@pytest.mark.parametrize(
    "given, message",
    [
        ({"label": "island"}, "label 'island' is not the 'species' ShardedExampleGen recorded"),
        ({"problem": "regression"}, "problem 'regression' is not the 'classification'"),
    ],
)
def test_a_task_that_disagrees_is_refused_in_one_line(given, message, tmp_path):
    """Through the entry point, before the component is built or anything written."""
    task = _task({"label": "species", "problem": "classification"}, str(tmp_path / "examples"))
    task.outputs.output_file = str(tmp_path / "out" / "executor_output.json")
    payload = json.loads(json_format.MessageToJson(task))
    payload["inputs"]["parameterValues"] = given
    with pytest.raises(SystemExit) as refused:
        entry.main(["trainer", json.dumps(payload)])
    said = str(refused.value.code)
    assert said.startswith(f"error: {message}") and "\n" not in said, said
    assert not (tmp_path / "out").exists()
