"""The schema-driven preprocessing_fn, run through tf.Transform's Beam implementation."""

import tempfile

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from tfrecord_pipelines.components.data_source.column_types import ColumnType
from tfrecord_pipelines.components.data_source.label_values import class_name
from tfrecord_pipelines.components.task import Task
from tfrecord_pipelines.components.transform import preprocessing_fn

RAW_SPEC = {
    "size": tf.io.VarLenFeature(tf.float32),
    "color": tf.io.FixedLenFeature([1], tf.string),
    "label": tf.io.FixedLenFeature([1], tf.int64),
}
ROWS = [
    {"size": [1.0], "color": [b"red"], "label": [3]},
    {"size": [3.0], "color": [b"blue"], "label": [7]},
    {"size": [], "color": [b"red"], "label": [3]},
    {"size": [5.0], "color": [b"red"], "label": [3]},
]


def _transform(task: Task, rows: list[dict] = ROWS) -> list[dict]:
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(RAW_SPEC))
    with tempfile.TemporaryDirectory() as temp_dir, tft_beam.Context(temp_dir=temp_dir):
        (transformed, _), _ = (rows, metadata) | tft_beam.AnalyzeAndTransformDataset(
            lambda inputs: preprocessing_fn(inputs, task.to_custom_config())
        )
    return transformed


def test_numeric_features_become_z_scores_with_missing_values_at_the_mean():
    rows = _transform(Task(label="label"))
    sizes = np.array([row["size_xf"] for row in rows]).ravel()
    present = np.array([1.0, 3.0, 5.0])
    expected = (present - present.mean()) / present.std()
    np.testing.assert_allclose(sizes[[0, 1, 3]], expected, rtol=1e-5)
    assert sizes[2] == 0.0


def _indices(rows: list[dict]) -> tuple[dict, dict]:
    """Each colour's and each class's index in the transformed rows."""
    transformed = _transform(Task(label="label"), rows)
    colors, labels = {}, {}
    for raw, row in zip(rows, transformed, strict=True):
        colors.setdefault(raw["color"][0], set()).add(int(np.ravel(row["color_xf"])[0]))
        labels.setdefault(raw["label"][0], set()).add(int(np.ravel(row["label_xf"])[0]))
    return colors, labels


def test_strings_and_integer_labels_become_vocabulary_indices_whatever_their_counts():
    colors, labels = _indices(ROWS)
    assert colors.keys() == {b"red", b"blue"} and labels.keys() == {3, 7}
    # One index per token, a different one for each token, within the vocabulary.
    assert sorted(i for (i,) in colors.values()) == [0, 1]
    assert sorted(i for (i,) in labels.values()) == [0, 1]
    # Counts swapped (blue and class 7 now the most frequent): the same indices, so a
    # model of one window fits the next (vocabularies ordered by fingerprint).
    swapped = [
        {**row, "color": [b"blue" if row["color"] == [b"red"] else b"red"],
         "label": [7 if row["label"] == [3] else 3]}
        for row in ROWS
    ]  # fmt: skip
    assert _indices(swapped) == (colors, labels)


def test_regression_label_stays_a_float():
    rows = _transform(Task(label="label", problem="regression"))
    assert [float(np.ravel(row["label_xf"])[0]) for row in rows] == [3.0, 7.0, 3.0, 3.0]


def test_unknown_label_is_a_clear_error():
    with pytest.raises(ValueError, match="Label column 'price' is not in the schema"):
        _transform(Task(label="price"))


IMAGE_SPEC = {
    "image": tf.io.FixedLenFeature([1], tf.string),
    "class_name": tf.io.FixedLenFeature([1], tf.string),
    "height": tf.io.FixedLenFeature([1], tf.int64),
    "label": tf.io.FixedLenFeature([1], tf.int64),
}


def _transform_rows(spec, rows, task):
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(spec))
    with tempfile.TemporaryDirectory() as temp_dir, tft_beam.Context(temp_dir=temp_dir):
        (transformed, transformed_metadata), _ = (
            rows,
            metadata,
        ) | tft_beam.AnalyzeAndTransformDataset(
            lambda inputs: preprocessing_fn(inputs, task.to_custom_config())
        )
    return transformed, transformed_metadata


def test_image_bytes_pass_through_and_nothing_else_feeds_the_model():
    # PNG and JPEG bytes hold newlines, which a vocabulary would drop.
    images = [b"\x89PNG\r\n\x1a\n...", b"\xff\xd8\xff\xe0\n\x00JFIF", b"\x89PNG\r\n\x1a\nzz"]
    rows = [
        {"image": [image], "class_name": [name], "height": [8], "label": [label]}
        for image, label, name in zip(images, [1, 0, 1], [b"dog", b"cat", b"dog"], strict=True)
    ]
    # The image task as the command line builds it: the class, by name, is the label.
    transformed, metadata = _transform_rows(
        IMAGE_SPEC, rows, Task(label="class_name", image_feature="image")
    )
    assert set(metadata.schema.feature[i].name for i in range(len(metadata.schema.feature))) == {
        "image_xf",
        "class_name_xf",
    }
    assert [np.ravel(row["image_xf"])[0] for row in transformed] == images
    indices = [int(np.ravel(row["class_name_xf"])[0]) for row in transformed]
    assert indices[0] == indices[2] != indices[1]


MULTI_SPEC = {
    "tags": tf.io.VarLenFeature(tf.string),
    "vector": tf.io.FixedLenFeature([2], tf.float32),
    "label": tf.io.FixedLenFeature([1], tf.int64),
}
MULTI_ROWS = [
    {"tags": [b"a", b"b"], "vector": [1.0, 10.0], "label": [0]},
    {"tags": [], "vector": [3.0, 30.0], "label": [1]},
    {"tags": [b"a"], "vector": [5.0, 50.0], "label": [0]},
]


def test_lists_of_strings_become_bags_and_fixed_lists_vectors():
    task = Task(label="label", multi_valued=("tags", "vector"))
    transformed, metadata = _transform_rows(MULTI_SPEC, MULTI_ROWS, task)
    # "a" is the most frequent tag: index 0.
    assert [list(np.ravel(row["tags_xf"])) for row in transformed] == [[0, 1], [], [0]]
    vectors = np.array([row["vector_xf"] for row in transformed])
    assert vectors.shape == (3, 2)
    # Each position is scaled over its own values: [1, 3, 5] and [10, 30, 50].
    np.testing.assert_allclose(vectors[:, 0], vectors[:, 1], rtol=1e-5)
    np.testing.assert_allclose(vectors.mean(axis=0), [0.0, 0.0], atol=1e-6)


def test_varying_count_of_numbers_is_a_clear_error():
    spec = {
        "scores": tf.io.VarLenFeature(tf.float32),
        "label": tf.io.FixedLenFeature([1], tf.int64),
    }
    rows = [{"scores": [1.0, 2.0], "label": [0]}, {"scores": [3.0], "label": [1]}]
    with pytest.raises(ValueError, match="Feature 'scores' holds a varying count of numbers"):
        _transform_rows(spec, rows, Task(label="label", multi_valued=("scores",)))


def test_named_inputs_leave_the_rest_out():
    transformed, metadata = _transform_rows(RAW_SPEC, ROWS, Task(label="label", inputs=("color",)))
    assert sorted(f.name for f in metadata.schema.feature) == ["color_xf", "label_xf"]


@pytest.mark.parametrize(
    "dtype, column_type, values",
    [
        (tf.int64, ColumnType.INT, [0, 1, -3, 2**40]),
        (tf.float32, ColumnType.FLOAT, [0.0, 1.0, 0.5, 2.25, -1.5, 1e6, 0.1]),
        (tf.string, ColumnType.BYTES, [b" yes", b"no ", b"Adelie", "ü".encode()]),
    ],
)
def test_the_label_vocabulary_names_classes_as_the_command_line_does(
    tmp_path, dtype, column_type, values
):
    """The command line checks a positive class against ``class_name``'s names before
    training; the Evaluator finds it in the vocabulary that Transform wrote."""
    spec = {"x": tf.io.FixedLenFeature([1], tf.float32), "y": tf.io.FixedLenFeature([1], dtype)}
    rows = [{"x": [float(i)], "y": [value]} for i, value in enumerate(values)]
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(spec))
    task = Task(label="y")
    with tft_beam.Context(temp_dir=str(tmp_path / "tmp")):
        transform_fn = (rows, metadata) | tft_beam.AnalyzeDataset(
            lambda inputs: preprocessing_fn(inputs, task.to_custom_config())
        )
        _ = transform_fn | tft_beam.WriteTransformFn(str(tmp_path / "graph"))
    vocabulary = tft.TFTransformOutput(str(tmp_path / "graph")).vocabulary_by_name("y_vocab")
    as_text = [v.decode() if isinstance(v, bytes) else v for v in values]
    assert sorted(t.decode() for t in vocabulary) == sorted(
        class_name(v, column_type) for v in as_text
    )
