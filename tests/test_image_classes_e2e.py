"""Two-class image data through ``run`` to a pushed model, its classes named by folder or by
labels.csv everywhere, never by index; a three-class folder is test_image_pipeline_e2e's."""

import numpy as np
import pytest
import tensorflow as tf

from conftest import json_property, run_cli, run_output, run_summary
from example_data import write_photo_tiles
from kfp_ui_layout import check_confusion_matrix

pytestmark = pytest.mark.e2e

CLASSES = ["china", "flower"]
# Enough to push a model whose metrics name its classes: what these tests are about.
FAST = ("--train-steps", "20", "--min-accuracy", "0")


def _run(root, layout: str, *extra: str):
    data = root / "photos"
    write_photo_tiles(data, layout=layout)
    output = root / "out"
    result = run_cli("run", "--data", str(data), "--output", str(output), *FAST, *extra)
    assert result.returncode == 0, result.stderr[-3000:]
    return output, result


@pytest.fixture(scope="module")
def class_folders_run(tmp_path_factory):
    """china/ and flower/: the positive class is the second name in sorted order."""
    return (*_run(tmp_path_factory.mktemp("folders"), "folders"), "flower")


@pytest.fixture(scope="module")
def labels_file_run(tmp_path_factory):
    """labels.csv with ids that are not the names' order (flower 0, china 1), and the
    positive class named on the command line."""
    root = tmp_path_factory.mktemp("labels-file")
    return (*_run(root, "labels-file", "--positive-class", "china"), "china")


@pytest.fixture(params=["class_folders_run", "labels_file_run"])
def two_class_run(request):
    return request.getfixturevalue(request.param)


def test_summary_and_metrics_name_the_two_classes(two_class_run):
    output, result, positive = two_class_run
    summary = run_summary(output, "photos", result.stdout)
    assert summary.blessed and summary.pushed_model
    assert "(images, label 'class_name', classification)" in result.stdout
    assert sorted(summary.classes.names) == CLASSES and summary.classes.positive == positive
    assert f"  classes:       2: china, flower (positive: {positive})\n" in result.stdout
    headline = result.stdout.split("  metrics:")[1].splitlines()[0]
    # Precision is left out when 20 steps leave a model that predicts no row positive (its
    # share of nothing); AUC and recall are always there.
    for metric in ("auc", "recall"):
        assert f" {metric} ({positive})=" in f" {headline}"
    assert "(class " not in headline


def test_kfp_metrics_and_the_confusion_matrix_name_the_classes(two_class_run):
    output, result, positive = two_class_run
    metrics = run_output(output, "photos", result.stdout, "Evaluator", "metrics")
    assert {f"auc ({positive})", f"recall ({positive})"} <= set(metrics.custom_properties)
    ui = run_output(output, "photos", result.stdout, "Evaluator", "classification_metrics")
    categories, rows = check_confusion_matrix(json_property(ui, "confusionMatrix"))
    assert sorted(categories) == CLASSES
    assert sum(map(sum, rows)) == metrics.custom_properties["eval rows"].double_value


def test_the_served_model_names_the_classes_in_its_scores_order(two_class_run):
    output, result, _ = two_class_run
    summary = run_summary(output, "photos", result.stdout)
    serve = tf.saved_model.load(summary.pushed_model).signatures["serving_default"]
    (split,) = (output / "pipeline_root" / "photos" / "ShardedExampleGen" / "examples").iterdir()
    records = [
        r.numpy()
        for path in sorted((split / "Split-eval").iterdir())
        for r in tf.data.TFRecordDataset(str(path))
    ][:16]
    served = serve(examples=tf.constant(records))
    assert served["scores"].shape == (len(records), 2)
    np.testing.assert_allclose(served["scores"].numpy().sum(axis=1), 1.0, rtol=1e-5)
    names = [n.encode() for n in summary.classes.names]
    assert served["classes"].numpy().tolist() == [names] * len(records)
