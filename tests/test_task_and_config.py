"""Validation of the task and pipeline settings."""

import re

import pytest

from tfrecord_pipelines.components.data_source import DataSource
from tfrecord_pipelines.components.task import Task
from tfrecord_pipelines.components.trainer.options import TrainingOptions
from tfrecord_pipelines.definition.config import EvaluationThresholds, IngestOptions, PipelineConfig
from tfrecord_pipelines.definition.module_file import ModuleFile
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources


def _config(**overrides) -> PipelineConfig:
    fields = dict(
        name="penguins",
        source=DataSource("/data", "csv"),
        task=Task(label="species"),
        serving_dir="/serving",
    )
    fields.update(overrides)
    return PipelineConfig(**fields)


@pytest.mark.parametrize(
    "task",
    [
        Task(label="price", problem="regression"),
        Task(label="y", inputs=("a", "b"), multi_valued=("b",)),
        Task(label="label", image_feature="image"),
    ],
)
def test_task_round_trips_through_custom_config(task):
    assert Task.from_custom_config(task.to_custom_config()) == task


def test_image_task_reads_the_image_alone_by_default():
    task = Task(label="label", image_feature="image")
    assert task.model_inputs(["image", "label", "class_name", "filename", "height"]) == ["image"]
    # Tabular tasks read every feature but the label.
    assert Task(label="y").model_inputs(["b", "y", "a"]) == ["a", "b"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"label": "y", "inputs": ("x", "y")}, "Task.inputs holds the label 'y'"),
        ({"label": "y", "inputs": ()}, "Task.inputs must name at least one feature"),
        (
            {"label": "label", "image_feature": "image", "inputs": ("height",)},
            "Task.image_feature 'image' is not among the inputs ['height']",
        ),
        (
            {"label": "label", "image_feature": "image", "problem": "regression"},
            "An image task must be a classification",
        ),
    ],
)
def test_task_rejects_inconsistent_inputs(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Task(**kwargs)


def test_task_names_inputs_missing_from_the_schema():
    with pytest.raises(ValueError, match=r"Input feature\(s\) 'z' not in the schema"):
        Task(label="y", inputs=("a", "z")).model_inputs(["a", "y"])


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


def test_train_steps_and_epochs_are_exclusive():
    with pytest.raises(ValueError, match="Give train_steps or epochs, not both."):
        _config(train_steps=10, training=TrainingOptions(epochs=1))


def test_thresholds_are_range_checked():
    with pytest.raises(ValueError, match=r"min_accuracy must be within \[0, 1\], got 1.5"):
        EvaluationThresholds(min_accuracy=1.5)
    with pytest.raises(ValueError, match="max_mean_absolute_error must be positive"):
        EvaluationThresholds(max_mean_absolute_error=0)


def test_training_options_round_trip_through_custom_config():
    options = TrainingOptions(
        batch_size=1024,
        cache="memory",
        mixed_precision=True,
        raw_examples=True,
        image_size=96,
        image_augment=("crop", "flip"),
        image_model="mobilenet_v2",
        epochs=2.5,
    )
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
        ({"epochs": 0}, "epochs must be positive, got 0."),
        ({"cache": ""}, "cache must be 'auto', 'none', 'memory' or a file path prefix"),
        ({"image_size": 16}, "image_size must be at least 32 pixels, got 16."),
        ({"image_augment": ("rotate",)}, "image_augment takes crop and flip, got rotate."),
        ({"image_model": "vgg"}, "image_model must be one of resnet, mobilenet_v2"),
        ({"image_channels": 2}, "image_channels must be 1 or 3, got 2."),
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


def test_ingest_compression_defaults_by_format():
    assert IngestOptions().compression_for(DataSource("/d", "csv")) == "gzip"
    assert IngestOptions().compression_for(DataSource("/d", "parquet")) == "gzip"
    assert IngestOptions().compression_for(DataSource("/d", "images")) == "none"
    assert IngestOptions(compression="gzip").compression_for(DataSource("/d", "images")) == "gzip"
    with pytest.raises(ValueError, match="num_readers must be at least 1, got 0"):
        IngestOptions(num_readers=0)


def test_module_file_names_its_entry_points():
    with pytest.raises(ValueError, match="must name preprocessing_fn and/or run_fn"):
        ModuleFile(path="m.py", functions=("trainer_fn",))
    assert ModuleFile(path="m.py", functions=["run_fn"]).defines("run_fn")


def test_image_source_needs_an_image_task():
    with pytest.raises(ValueError, match="holds images: the task must name its image_feature"):
        _config(source=DataSource("/photos", "images"), task=Task(label="label"))
