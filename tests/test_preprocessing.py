"""The schema-driven preprocessing_fn, run through tf.Transform's Beam implementation."""

import tempfile

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from components.task import Task
from components.transform import preprocessing_fn

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


def _transform(task: Task) -> list[dict]:
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(RAW_SPEC))
    with tempfile.TemporaryDirectory() as temp_dir, tft_beam.Context(temp_dir=temp_dir):
        (transformed, _), _ = (ROWS, metadata) | tft_beam.AnalyzeAndTransformDataset(
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


def test_strings_and_integer_labels_become_vocabulary_indices():
    rows = _transform(Task(label="label"))
    colors = [int(np.ravel(row["color_xf"])[0]) for row in rows]
    labels = [int(np.ravel(row["label_xf"])[0]) for row in rows]
    # Vocabularies order by frequency: "red" and class "3" are the most frequent.
    assert colors == [0, 1, 0, 0]
    assert labels == [0, 1, 0, 0]


def test_regression_label_stays_a_float():
    rows = _transform(Task(label="label", problem="regression"))
    assert [float(np.ravel(row["label_xf"])[0]) for row in rows] == [3.0, 7.0, 3.0, 3.0]


def test_unknown_label_is_a_clear_error():
    with pytest.raises(ValueError, match="Label column 'price' is not in the schema"):
        _transform(Task(label="price"))
