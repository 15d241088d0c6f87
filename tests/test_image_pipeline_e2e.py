"""The image pipeline end to end through LocalDagRunner: folders of digits to a served model."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform as tft

from conftest import json_property, run_cli, run_output, run_summary
from example_data import PLANTED_BAD_IMAGES, STRAY_FILE, write_digit_images
from kfp_ui_layout import check_confusion_matrix
from report_browser import load_report
from tfrecord_pipelines.components.task import transformed_name
from tfrecord_pipelines.components.trainer import make_dataset
from tfrecord_pipelines.components.trainer.image_decoding import ImageDecoding
from tfrecord_pipelines.components.trainer.lookup_dense import LookupDense
from tfrecord_pipelines.report.thumbnails import THUMBNAIL_PIXELS

pytestmark = pytest.mark.e2e

# Three digits a small network tells apart after a hundred steps (accuracy 1 on the eval
# split's 104 images here, at 100 steps as at 200); chance is 1/3.
MIN_ACCURACY = 0.9
TRAIN_STEPS = "100"
# Their class folders: names that are not the classes' ids.
CLASSES = ("zero", "one", "seven")


@pytest.fixture(scope="module")
def digits_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("digits-run")
    data = root / "digits-017"
    labels = write_digit_images(data, names=CLASSES)
    output = root / "out"
    result = run_cli(
        "run", "--data", str(data), "--output", str(output), "--train-steps", TRAIN_STEPS
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = run_summary(output, "digits-017", result.stdout)
    return output / "pipeline_root" / "digits-017", labels, summary, result


def _artifact(root: Path, component: str, output: str) -> Path:
    (path,) = (root / component / output).iterdir()
    return path


def _eval_records(root: Path) -> list[bytes]:
    split = _artifact(root, "ShardedExampleGen", "examples") / "Split-eval"
    return [r.numpy() for f in sorted(split.iterdir()) for r in tf.data.TFRecordDataset(str(f))]


def _feature(record: bytes, name: str):
    value = tf.train.Example.FromString(record).features.feature[name]
    return value.bytes_list.value[0] if value.bytes_list.value else value.int64_list.value[0]


def _serve(summary):
    return tf.saved_model.load(summary.pushed_model).signatures["serving_default"]


def _predict(serve, records: list[bytes]) -> np.ndarray:
    return serve(examples=tf.constant(records))["scores"].numpy()


def _served_classes(serve, records: list[bytes]) -> list[str]:
    """The likeliest class of each record, by the name the serving signature gives it."""
    served = serve(examples=tf.constant(records))
    best = served["scores"].numpy().argmax(axis=1)
    return [c.decode() for c in served["classes"].numpy()[np.arange(len(records)), best]]


def test_image_model_is_blessed_and_pushed(digits_run):
    _, _, summary, result = digits_run
    assert summary.blessed and summary.pushed_model
    assert Path(summary.pushed_model, "saved_model.pb").is_file()
    assert summary.metrics["sparse_categorical_accuracy"] >= MIN_ACCURACY
    # Odd encodings (CMYK JPEG, 16-bit PNG, RGBA, larger sizes) all decoded in training.
    assert "did not decode" not in result.stderr
    # The stray file was neither quarantined nor the reason for a refusal: named, left out.
    assert summary.skipped_files == (1, [f"zero/{STRAY_FILE}"])
    assert f"skipped:       1 file not named like an image, left out: zero/{STRAY_FILE}" in (
        result.stdout
    )


def test_three_class_folders_name_the_classes_everywhere(digits_run):
    root, _, summary, result = digits_run
    output = root.parent.parent
    # The label is the class by its folder's name: the summary, the metrics, KFP's
    # confusion matrix and the serving signature name classes so, never by index.
    assert "(images, label 'class_name', classification)" in result.stdout
    assert sorted(summary.classes.names) == sorted(CLASSES) and summary.classes.positive is None
    assert "  classes:       3: one, seven, zero\n" in result.stdout
    for name in CLASSES:
        assert f"recall ({name})" in [summary.classes.display(m) for m in summary.metrics]
    ui = run_output(output, "digits-017", result.stdout, "Evaluator", "classification_metrics")
    categories, _ = check_confusion_matrix(json_property(ui, "confusionMatrix"))
    assert sorted(categories) == sorted(CLASSES)
    assert set(_served_classes(_serve(summary), _eval_records(root)[:30])) <= set(CLASSES)


def test_bad_files_are_quarantined_through_run(digits_run):
    root, labels, _, _ = digits_run
    quarantine = _artifact(root, "ShardedExampleGen", "quarantine")
    records = [
        json.loads(line)
        for path in quarantine.glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert sorted(r["content"] for r in records) == sorted([*PLANTED_BAD_IMAGES, "truncated.jpg"])
    assert all(r["reason"].startswith("not an image: ") for r in records)
    assert not any("{{function_node" in r["reason"] for r in records)
    plan = json.loads(
        (_artifact(root, "ShardedExampleGen", "examples") / "shard_plan.json").read_text()
    )
    assert plan["records_written"] == len(labels) and plan["quarantined"] == 3
    # Uncompressed image shards, at least one per reader (10 by default), data allowing.
    assert plan["compression"] == "none"
    assert all(len(split["shards"]) >= 2 for split in plan["splits"].values())


def test_report_shows_decodable_thumbnails_of_each_class(digits_run, chromium_endpoint):
    root, labels, _, result = digits_run
    report = Path(re.search(r"^  report: +(\S+)$", result.stdout, re.MULTILINE).group(1))
    page = load_report(chromium_endpoint, report)
    assert page.errors == []
    assert page.requests == [report.as_uri()]
    assert page.sections[-1] == "images"
    # Four of each of the three classes, each an image the browser decoded at thumbnail size.
    assert len(page.images) == 4 * len(set(labels.values()))
    assert all(0 < max(size) <= THUMBNAIL_PIXELS for size in page.images)
    assert page.counts["quarantine-count"] == "3"


def test_statistics_describe_the_image_as_an_image(digits_run):
    root, _, _, _ = digits_run
    import tensorflow_data_validation as tfdv

    stats = tfdv.load_stats_binary(
        str(_artifact(root, "ShardedExampleGen", "statistics") / "Split-train" / "FeatureStats.pb")
    )
    image = next(f for f in stats.datasets[0].features if f.path.step == ["image"])
    custom = {c.name: c for c in image.custom_stats}
    assert custom["domain_info"].str == "image_domain {}"
    formats = {b.label for b in custom["image_format_histogram"].rank_histogram.buckets}
    assert {"png", "jpeg"} <= formats
    anomalies = _artifact(root, "ExampleValidator", "anomalies")
    from tensorflow_metadata.proto.v0 import anomalies_pb2

    for split in ("Split-train", "Split-eval"):
        found = anomalies_pb2.Anomalies.FromString(
            (anomalies / split / "SchemaDiff.pb").read_bytes()
        )
        assert not found.anomaly_info, dict(found.anomaly_info)


def test_serving_gives_the_training_paths_predictions(digits_run):
    root, _, summary, _ = digits_run
    records = _eval_records(root)
    served = _predict(_serve(summary), records)
    # The training path: make_dataset over the same raw shards, the Transform
    # graph and the image decoding in the input pipeline, then the Keras model.
    transform = tft.TFTransformOutput(str(_artifact(root, "Transform", "transform_graph")))
    tft_layer = transform.transform_features_layer()
    model = tf.keras.models.load_model(summary.pushed_model)
    # Rebuilt as the class it was trained as (saved without traces, from its config).
    assert [type(layer) for layer in model.layers if "lookup" in layer.name] == [LookupDense]
    size = model.inputs[0].shape[1]
    spec = {k: v for k, v in transform.raw_feature_spec().items() if k in ("image", "filename")}
    dataset = make_dataset(
        str(_artifact(root, "ShardedExampleGen", "examples") / "Split-eval" / "*"),
        spec,
        32,
        training=False,
        num_epochs=1,
        transform=lambda f: {**tft_layer({"image": f["image"]}), "filename": f["filename"]},
        image=ImageDecoding(transformed_name("image"), size=size),
    )
    trained = {}
    for features in dataset:
        names = features.pop("filename").numpy().ravel()
        trained.update(zip(names, model(features).numpy(), strict=True))
    assert len(trained) == len(records)
    for record, probabilities in zip(records, served, strict=True):
        np.testing.assert_allclose(probabilities, trained[_feature(record, "filename")], atol=1e-5)


def test_model_predicts_from_pixels_not_from_the_label_copies(digits_run):
    root, _, summary, _ = digits_run
    serve = _serve(summary)
    records = _eval_records(root)
    by_label = {}
    for record in records:
        by_label.setdefault(_feature(record, "label"), []).append(record)
    zeros, ones = by_label[0][:20], by_label[1][:20]
    swapped = []
    for zero, one in zip(zeros, ones, strict=True):
        for mine, other in ((zero, one), (one, zero)):
            example = tf.train.Example.FromString(mine)
            theirs = tf.train.Example.FromString(other).features.feature
            for key in ("class_name", "filename", "label"):
                example.features.feature[key].CopyFrom(theirs[key])
            swapped.append(example.SerializeToString())
    originals = [r for pair in zip(zeros, ones, strict=True) for r in pair]
    np.testing.assert_allclose(_predict(serve, swapped), _predict(serve, originals), atol=1e-6)
    predicted = _served_classes(serve, swapped)
    truth = [_feature(r, "class_name").decode() for r in originals]
    assert np.mean(np.equal(predicted, truth)) >= MIN_ACCURACY
    # An example holding only the image is served; bytes that are no image are an error.
    only_image = tf.train.Example()
    only_image.features.feature["image"].CopyFrom(
        tf.train.Example.FromString(zeros[0]).features.feature["image"]
    )
    assert _predict(serve, [only_image.SerializeToString()]).shape == (1, 3)
    not_an_image = tf.train.Example()
    not_an_image.features.feature["image"].bytes_list.value.append(b"not an image at all")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Unknown image file format"):
        _predict(serve, [not_an_image.SerializeToString()])
