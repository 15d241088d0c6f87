"""When a Trainer may start from a base model's weights, and for how many steps."""

import json

import pytest

from tfrecord_pipelines.components.trainer import warm_start


def _inputs(**changes) -> dict:
    inputs = {
        "features": {"x_xf": "FixedLenFeature(shape=[], dtype=tf.float32)"},
        "vocabularies": {"colour_vocab": "aa", "label_vocab": "bb"},
        "model": {"task": {"label": "label"}, "image": None},
        "train_files": ["day-1/Split-train/*"],
    }
    for key, value in changes.items():
        inputs[key] = {**inputs[key], **value}
    return inputs


def _plan(base_model, current, new_records, train_records):
    base = warm_start.read_base_inputs(base_model)
    return warm_start.plan(base_model, base, current, new_records, train_records)


@pytest.fixture
def base_model(tmp_path):
    """A base model's serving folder and the inputs it recorded beside it."""
    folder = tmp_path / "model" / warm_start.WARM_START_FOLDER
    folder.mkdir(parents=True)
    (folder / "inputs.json").write_text(json.dumps(_inputs()))
    return str(tmp_path / "model" / "Format-Serving")


def test_same_inputs_warm_start_for_the_new_records_share_of_the_steps(base_model):
    plan = _plan(base_model, _inputs(), new_records=1_000, train_records=30_000)
    assert plan.weights and plan.weights.endswith("warm_start/weights")
    assert plan.reason == "3.3% of the train records are new to it"
    assert plan.steps(3_000) == 100
    assert plan.steps(30_000) == 1_000
    # Never more than a fresh start, never fewer than the floor.
    assert plan.steps(50) == 50
    assert plan.steps(1_000) == warm_start.WARM_START_MIN_STEPS


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"vocabularies": {"colour_vocab": "cc"}}, "vocabulary 'colour_vocab' changed"),
        ({"vocabularies": {"size_vocab": "dd"}}, "vocabulary 'size_vocab' is new"),
        ({"features": {"y_xf": "FixedLenFeature"}}, "feature 'y_xf' is new"),
        ({"model": {"image": [64, 3, "resnet"]}}, "the model's image settings changed"),
    ],
)
def test_changed_inputs_train_from_scratch_and_say_which(base_model, changes, reason):
    plan = _plan(base_model, _inputs(**changes), new_records=10, train_records=100)
    assert plan.weights is None and plan.steps(3_000) == 3_000
    assert plan.reason.startswith(f"from scratch: {reason}"), plan.reason


def test_no_base_model_or_none_kept_trains_from_scratch(tmp_path):
    assert _plan(None, _inputs(), 10, 100).reason == "no earlier blessed model"
    kept_nothing = _plan(str(tmp_path / "Format-Serving"), _inputs(), 10, 100)
    assert kept_nothing.weights is None
    assert kept_nothing.reason == "the base model kept no weights to start from"


def test_new_train_files_are_those_the_base_model_did_not_read(base_model):
    files = ["day-1/Split-train/*", "day-2/Split-train/*"]
    base = warm_start.read_base_inputs(base_model)
    assert warm_start.new_train_files(base, files) == ["day-2/Split-train/*"]
    assert warm_start.new_train_files(None, files) == files


def _pipeline_node_ids(tmp_path, *flags: str) -> set[str]:
    from tfrecord_pipelines.cli.main import build_parser
    from tfrecord_pipelines.cli.task_arguments import config_from_args
    from tfrecord_pipelines.definition.pipeline import create_pipeline

    for day in (1, 2):
        (tmp_path / f"day-{day}").mkdir(exist_ok=True)
        (tmp_path / f"day-{day}" / "rows.csv").write_text("x,label\n1.5,a\n2.5,b\n")
    args = build_parser().parse_args(
        ["run", "--data", f"{tmp_path}/day-{{SPAN}}/", "--label", "label", "--span", "2", *flags]
    )
    pipeline = create_pipeline(
        config_from_args(args), str(tmp_path / "root"), compare_to_latest_blessed=True
    )
    return {node.id for node in pipeline.components}


def test_runs_over_spans_resolve_a_base_model_unless_told_not_to(tmp_path):
    from tfrecord_pipelines.components.daily.baseline_model import BASE_MODEL_RESOLVER

    assert BASE_MODEL_RESOLVER in _pipeline_node_ids(tmp_path)
    assert BASE_MODEL_RESOLVER not in _pipeline_node_ids(tmp_path, "--no-warm-start")
