"""Validation of the task and pipeline settings."""

import re

import pytest

from components.task import Task
from components.trainer.options import TrainingOptions
from pipelines.config import EvaluationThresholds, PipelineConfig
from pipelines.trainer_resources import TrainerResources


def _config(**overrides) -> PipelineConfig:
    fields = dict(
        name="penguins", data_root="/data", task=Task(label="species"), serving_dir="/serving"
    )
    fields.update(overrides)
    return PipelineConfig(**fields)


def test_task_round_trips_through_custom_config():
    task = Task(label="price", problem="regression")
    assert Task.from_custom_config(task.to_custom_config()) == task


def test_task_rejects_unknown_problem():
    with pytest.raises(ValueError, match="problem must be one of classification, regression"):
        Task(label="y", problem="ranking")


def test_task_rejects_empty_label():
    with pytest.raises(ValueError, match="label must name a column"):
        Task(label="")


def test_missing_task_in_custom_config_is_named():
    with pytest.raises(ValueError, match="custom_config has no 'task' entry"):
        Task.from_custom_config({"other": 1})


@pytest.mark.parametrize("name", ["Penguins", "-bad", "a_b", "x" * 64])
def test_pipeline_name_must_be_a_kubernetes_style_name(name):
    with pytest.raises(ValueError, match="must be 1-63 lower-case letters"):
        _config(name=name)


def test_train_steps_must_be_positive():
    with pytest.raises(ValueError, match="train_steps must be at least 1, got 0"):
        _config(train_steps=0)


def test_thresholds_are_range_checked():
    with pytest.raises(ValueError, match=r"min_accuracy must be within \[0, 1\], got 1.5"):
        EvaluationThresholds(min_accuracy=1.5)
    with pytest.raises(ValueError, match="max_mean_absolute_error must be positive"):
        EvaluationThresholds(max_mean_absolute_error=0)


def test_training_options_round_trip_through_custom_config():
    options = TrainingOptions(batch_size=1024, cache="memory", mixed_precision=True)
    config = {**Task(label="y").to_custom_config(), **options.to_custom_config()}
    assert TrainingOptions.from_custom_config(config) == options
    # A Trainer configured before the options existed gets the defaults.
    assert TrainingOptions.from_custom_config(Task(label="y").to_custom_config()) == (
        TrainingOptions()
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0}, "batch_size must be at least 1, got 0."),
        ({"epoch_steps": -5}, "epoch_steps must be at least 1, got -5."),
        ({"cache": ""}, "cache must be 'auto', 'none', 'memory' or a file path prefix"),
    ],
)
def test_training_options_reject_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        TrainingOptions(**kwargs)


def test_cpu_only_trainer_resources_request_no_accelerator():
    spec = TrainerResources(gpus=0, cpu="7500m").to_resource_spec()
    assert not spec.HasField("accelerator")
    assert spec.resource_cpu_limit == "7500m"
    assert spec.cpu_limit == pytest.approx(7.5)
