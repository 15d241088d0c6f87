"""A plain KFP pipeline (examples/kfp_reuse) that mixes the project's KFP components with a
user's own component, run in the component image by kfp.local.

kfp.local's DockerRunner runs each task's command in the image its spec names
(the cpu image, built from docker/Dockerfile), the pipeline root mounted at
its own path; ``kfp_local_runs`` hands upstream artifacts over untyped, as
the open-source backend's driver does.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import yaml
from kfp_local_runs import run_compiled_pipeline

from component_image import chown_for_the_image
from conftest import REPO_ROOT
from example_data import read_split
from kfp_ui_layout import (
    area_under,
    check_confusion_matrix,
    check_roc_curve,
    compare_scalar_table,
    metrics_table_pages,
)

SPECS = REPO_ROOT / "kfp_components"
EXAMPLE = REPO_ROOT / "examples" / "kfp_reuse" / "pipeline.py"
PENGUINS = REPO_ROOT / "data" / "penguins" / "penguins.csv"
pytestmark = [pytest.mark.e2e, pytest.mark.image]

# The example's tasks: every component but the ExampleValidator, and the user's own.
TASKS = {
    "comp-sharded-example-gen",
    "comp-schema-gen",
    "comp-count-records",
    "comp-transform",
    "comp-trainer",
    "comp-evaluator",
    "comp-pusher",
}


def _example_module():
    spec = importlib.util.spec_from_file_location("kfp_reuse_pipeline", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _output(record, name: str) -> tuple[Path, dict]:
    from google.protobuf import json_format
    from kfp.pipeline_spec import pipeline_spec_pb2

    output = json_format.Parse(record.executor_output_text, pipeline_spec_pb2.ExecutorOutput())
    [artifact] = output.artifacts[name].artifacts
    return Path(artifact.uri), json_format.MessageToDict(artifact.metadata)


def _run_example(root: Path, csv_text: str, **arguments) -> tuple[dict, dict]:
    """examples/kfp_reuse compiled with kfp's compiler and run by kfp.local in the image."""
    data = root / "data" / "penguins"
    data.mkdir(parents=True)
    (data / "penguins.csv").write_text(csv_text)
    package = root.parent / "kfp_reuse.yaml"
    from kfp import compiler

    compiler.Compiler().compile(_example_module().build(SPECS), str(package))
    chown_for_the_image(root)
    arguments = {"data": str(data), "serving_dir": str(root / "serving"), **arguments}
    records = run_compiled_pipeline(package, root, arguments)
    return yaml.safe_load(package.read_text()), records


@pytest.fixture(scope="module")
def reuse_run(tmp_path_factory, component_image, docker_api):
    """The three species."""
    assert _example_module().IMAGE == component_image
    root = tmp_path_factory.mktemp("kfp_reuse") / "pipeline_root"
    spec, records = _run_example(root, PENGUINS.read_text(), label="species", train_steps=200)
    return spec, records, root


@pytest.fixture(scope="module")
def two_class_run(tmp_path_factory, component_image, docker_api):
    """Adelie or not, Adelie the positive class: a KFP user's binary task."""
    root = tmp_path_factory.mktemp("kfp_reuse_two_classes") / "pipeline_root"
    lines = PENGUINS.read_text().splitlines()
    binary = [lines[0]] + [
        line if line.startswith("Adelie,") else "other," + line.split(",", 1)[1]
        for line in lines[1:]
    ]
    _, records = _run_example(
        root, "\n".join(binary) + "\n", label="species", train_steps=100,
        positive_class="Adelie", num_classes=2,
    )  # fmt: skip
    return records


def test_every_task_ran_its_own_components_image(reuse_run, component_image):
    spec, records, _ = reuse_run
    assert set(records) == TASKS
    for name, record in records.items():
        assert record.returncode == 0, (name, record.logs[-2000:])
    images = {e["container"]["image"] for e in spec["deploymentSpec"]["executors"].values()}
    assert images == {component_image}


def test_the_users_component_reads_our_shards_with_make_dataset(reuse_run):
    _, records, _ = reuse_run
    _, examples = _output(records["comp-sharded-example-gen"], "examples")
    assert json.loads(examples["split_names"]) == ["train", "eval"]
    plan = json.loads(examples["shard_plan"])
    _, counts = _output(records["comp-count-records"], "counts")
    for split in ("train", "eval"):
        assert counts[f"{split} records"] == plan["splits"][split]["records"] > 0
    output = json.loads(records["comp-count-records"].executor_output_text)
    assert output["parameterValues"]["Output"] == plan["splits"]["train"]["records"]
    page, _ = _output(records["comp-sharded-example-gen"], "examples_summary")
    assert page.read_text().startswith(f"## Examples: {plan['records_written']:,} records in ")


def test_the_evaluator_outputs_what_kfps_ui_draws(reuse_run):
    _, records, _ = reuse_run
    _, metrics = _output(records["comp-evaluator"], "metrics")
    assert "tfx_version" not in metrics
    [page] = metrics_table_pages(metrics)  # the UI's table: one page, the headline on it
    assert "sparse_categorical_accuracy" in dict(page)
    # Compare-runs of two runs of it: a row per metric, as many as the table's page.
    compared = compare_scalar_table([metrics, metrics])
    assert [name for name, _ in compared] == sorted(name for name, _ in page)
    assert all(run == value for name, value in page for run in dict(compared)[name])
    _, classification = _output(records["comp-evaluator"], "classification_metrics")
    categories, counts = check_confusion_matrix(classification["confusionMatrix"])
    assert sorted(categories) == ["Adelie", "Chinstrap", "Gentoo"]
    assert sum(map(sum, counts)) == metrics["eval rows"]
    summary, _ = _output(records["comp-evaluator"], "evaluation_summary")
    assert summary.read_text().startswith("## Evaluation: blessed")


def test_the_pushed_model_serves_the_eval_split(reuse_run):
    _, records, root = reuse_run
    _, pushed = _output(records["comp-pusher"], "pushed_model")
    assert pushed["pushed"] == 1
    destination = Path(pushed["pushed_destination"])
    assert destination.parent == root / "serving"
    examples, _ = _output(records["comp-sharded-example-gen"], "examples")
    rows = read_split(examples / "Split-eval")
    serve = tf.saved_model.load(str(destination)).signatures["serving_default"]
    served = serve(examples=tf.constant([r.SerializeToString() for r in rows]))
    probabilities = served["scores"].numpy()
    assert probabilities.shape == (len(rows), 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    # The serving signature names the classes, in the scores' order.
    classes = served["classes"].numpy()
    labels = [r.features.feature["species"].bytes_list.value[0] for r in rows]
    predicted = classes[np.arange(len(rows)), np.argmax(probabilities, axis=1)]
    assert np.mean([p == a for p, a in zip(predicted, labels, strict=True)]) >= 0.9


def test_a_two_class_run_draws_the_roc_curve_of_its_positive_class(two_class_run):
    records = two_class_run
    for name, record in records.items():
        assert record.returncode == 0, (name, record.logs[-2000:])
    _, metrics = _output(records["comp-evaluator"], "metrics")
    _, classification = _output(records["comp-evaluator"], "classification_metrics")
    categories, counts = check_confusion_matrix(classification["confusionMatrix"])
    assert sorted(categories) == ["Adelie", "other"]
    assert sum(map(sum, counts)) == metrics["eval rows"]
    roc = check_roc_curve(classification["confidenceMetrics"])
    assert len(roc) > 10
    # The positive class's AUC, as the Evaluator measured it, is the curve's area.
    assert area_under(roc) == pytest.approx(metrics["auc (Adelie)"], abs=0.02)
