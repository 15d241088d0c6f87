"""Transform's analysis from ExampleGen's statistics equals tf.Transform's, and reads no data."""

import os
import random

import apache_beam as beam
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_data_validation as tfdv
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_metadata.proto.v0 import schema_pb2, statistics_pb2
from tensorflow_transform import impl_helper
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from tfrecord_pipelines.components.example_gen.statistics import stats_options
from tfrecord_pipelines.components.task import Task, transformed_name, vocabulary_name
from tfrecord_pipelines.components.transform import preprocessing_fn, statistics_analysis
from tfrecord_pipelines.components.transform.in_place_analysis import has_analyzers
from tfrecord_pipelines.components.transform.preprocessing import CATEGORICAL_INTEGERS_KEY

ROWS = 600
RAW_SPEC = {
    "size": tf.io.VarLenFeature(tf.float32),
    "count": tf.io.VarLenFeature(tf.int64),
    "colour": tf.io.VarLenFeature(tf.string),
    "tags": tf.io.VarLenFeature(tf.string),
    "flat": tf.io.VarLenFeature(tf.float32),
    "label": tf.io.FixedLenFeature([1], tf.string),
    "class_id": tf.io.FixedLenFeature([1], tf.int64),
    # A boolean column, as ExampleGen stores it: the integers 0 and 1.
    "flag": tf.io.FixedLenFeature([1], tf.int64),
    # A code the schema marks categorical (int_domain.is_categorical), sometimes missing.
    "rating": tf.io.VarLenFeature(tf.int64),
}
# Integer labels, whose classes ExampleGen's statistics count in a classification.
INTEGER_LABELS = ("class_id", "flag")
# Drops what the task leaves out: the other label, and "flat" (one value, the same in
# every row: a variance of 0).
TASK = Task(
    label="label",
    inputs=("size", "count", "colour", "tags", "flat", "rating"),
    multi_valued=("tags",),
)
# What Transform's executor adds to the custom_config for a schema marking "rating"
# categorical; ExampleGen then counts its values too.
CATEGORICAL = {CATEGORICAL_INTEGERS_KEY: ["rating"]}


def _rows(seed: int = 0, rows: int = ROWS, span: int = 0) -> list[dict]:
    """Floats and strings with missing values, a token tf.Transform leaves out (a
    newline), lists of strings, and labels as strings and integers. A later ``span``'s
    sizes are larger and its first row has a tag of its own."""
    rng = random.Random(seed)
    colours = ["red", "green", "blue", "über", "two\nlines", ""]
    found = []
    for i in range(rows):
        tags = [f"t{rng.randrange(40)}".encode() for _ in range(rng.randrange(4))]
        found.append({
            "size": [rng.gauss(50 + 30 * span, 20 + 5 * span)] if i % 7 else [],
            "count": [rng.randrange(1000)],
            "colour": [rng.choice(colours).encode()] if i % 5 else [],
            "tags": [*tags, f"span{span}".encode()] if i == 0 and span else tags,
            "flat": [2.5],
            "label": [rng.choice([b"yes", b"no", b"maybe"])],
            "class_id": [rng.randrange(3)],
            "flag": [int(rng.random() < 0.3)],
            "rating": [rng.randint(1, 5)] if i % 6 else [],
        })  # fmt: skip
    return found


def _example(row: dict) -> bytes:
    feature = {}
    for name, values in row.items():
        if RAW_SPEC[name].dtype == tf.string:
            feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
        elif RAW_SPEC[name].dtype == tf.int64:
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        else:
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _statistics(folder, class_label: str | None, rows: list[dict] | None = None) -> str:
    """The rows' statistics as ExampleGen computes them (its TFDV options); their path."""
    folder.mkdir(parents=True, exist_ok=True)
    records = str(folder / "train.tfrecord")
    with tf.io.TFRecordWriter(records) as writer:
        for row in _rows() if rows is None else rows:
            writer.write(_example(row))
    options = stats_options("csv", [class_label, "rating"] if class_label else ["rating"])
    stats = tfdv.generate_statistics_from_tfrecord(records, stats_options=options)
    path = str(folder / "FeatureStats.pb")
    with open(path, "wb") as f:
        f.write(stats.SerializeToString())
    return path


@pytest.fixture(scope="module")
def statistics_paths(tmp_path_factory) -> dict[str, str]:
    """ExampleGen's statistics in a classification of each label, by label: an integer
    label's classes counted (a string's, listed by TFDV, are not counted again)."""
    folder = tmp_path_factory.mktemp("statistics")
    return {label: _statistics(folder / label, label) for label in ("label", *INTEGER_LABELS)}


def _analyze_and_transform(config: dict, output: str, rows: list[dict] | None = None) -> list[dict]:
    """The rows (``_rows()`` by default) through the built-in preprocessing_fn; the transform
    graph written to ``output``."""
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(RAW_SPEC))
    rows = _rows() if rows is None else rows
    with beam.Pipeline() as pipeline, tft_beam.Context(temp_dir=os.path.join(output, "tmp")):
        data = pipeline | beam.Create(rows, reshuffle=False)
        (transformed, _), transform_fn = (data, metadata) | tft_beam.AnalyzeAndTransformDataset(
            lambda inputs: preprocessing_fn(inputs, config)
        )
        _ = transform_fn | tft_beam.WriteTransformFn(output)
        _ = (
            transformed
            | beam.combiners.ToList()
            | beam.Map(
                lambda batch: np.save(os.path.join(output, "rows.npy"), batch, allow_pickle=True)
            )
        )
    return list(np.load(os.path.join(output, "rows.npy"), allow_pickle=True))


@pytest.mark.parametrize("label", ["label", "class_id", "flag"])
def test_vocabularies_means_and_variances_equal_tf_transforms(statistics_paths, tmp_path, label):
    task = Task(label=label, inputs=TASK.inputs, multi_valued=TASK.multi_valued)
    config = {**task.to_custom_config(), **CATEGORICAL}
    analyzed = _analyze_and_transform(config, str(tmp_path / "analyzed"))
    from_statistics = _analyze_and_transform(
        {**config, statistics_analysis.STATISTICS_PATH_KEY: [statistics_paths[label]]},
        str(tmp_path / "from_statistics"),
    )
    graphs = _assert_same_outputs(tmp_path, analyzed, from_statistics, label, atol=1e-6)
    for name in (*TEXT_OUTPUTS, label):
        vocabulary = graphs[0].vocabulary_by_name(vocabulary_name(name))
        assert b"two\nlines" not in vocabulary and b"" not in vocabulary
    assert "\u00fcber".encode() in graphs[0].vocabulary_by_name(vocabulary_name("colour"))
    # The categorical integer's categories are its values, as text.
    assert sorted(graphs[1].vocabulary_by_name(vocabulary_name("rating"))) == [
        b"1", b"2", b"3", b"4", b"5"
    ]  # fmt: skip


# The outputs through a vocabulary (beside the label), and those scaled to z-scores.
TEXT_OUTPUTS = ("colour", "tags", "rating")
NUMERIC_OUTPUTS = ("size", "count", "flat")


def _assert_same_outputs(
    folder, analyzed: list[dict], from_statistics: list[dict], label: str, atol: float
) -> list[tft.TFTransformOutput]:
    """The two graphs in ``folder`` have the same vocabularies and give the same rows
    (z-scores to float32 arithmetic); the graphs, analyzed first."""
    graphs = [tft.TFTransformOutput(str(folder / n)) for n in ("analyzed", "from_statistics")]
    for name in (*TEXT_OUTPUTS, label):
        vocabularies = [g.vocabulary_by_name(vocabulary_name(name)) for g in graphs]
        assert vocabularies[0] == vocabularies[1]
    for a, b in zip(analyzed, from_statistics, strict=True):
        for key in NUMERIC_OUTPUTS:
            np.testing.assert_allclose(
                a[transformed_name(key)], b[transformed_name(key)], rtol=1e-5, atol=atol
            )
        for key in (*TEXT_OUTPUTS, label):
            np.testing.assert_array_equal(a[transformed_name(key)], b[transformed_name(key)])
    sizes = np.array([row[transformed_name("size")] for row in from_statistics]).ravel()
    assert abs(sizes.mean()) < 0.05 and sizes.std() > 0.9
    return graphs


def _has_analyzers(config: dict) -> bool:
    specs = impl_helper.get_type_specs_from_feature_specs(RAW_SPEC)
    return has_analyzers(lambda x: preprocessing_fn(x, config), specs)


@pytest.mark.parametrize("label", ["label", *INTEGER_LABELS])
def test_nothing_is_left_to_analyze_with_a_string_integer_or_boolean_label(statistics_paths, label):
    """With the statistics, the label leaves no analyzer (Transform then runs in place,
    without reading the data), and the classes are named by value."""
    task = Task(label=label, inputs=TASK.inputs, multi_valued=TASK.multi_valued)
    with_statistics = {statistics_analysis.STATISTICS_PATH_KEY: [statistics_paths[label]]}
    assert _has_analyzers({**task.to_custom_config(), **CATEGORICAL})
    assert not _has_analyzers({**task.to_custom_config(), **CATEGORICAL, **with_statistics})
    statistics = statistics_analysis.load((statistics_paths[label],))
    classes = statistics.vocabulary(label)
    assert sorted(classes) == {
        "label": [b"maybe", b"no", b"yes"], "class_id": [b"0", b"1", b"2"], "flag": [b"0", b"1"]
    }[label]  # fmt: skip


@pytest.mark.parametrize("label", INTEGER_LABELS)
def test_an_integer_labels_classes_are_counted_beside_its_numeric_statistics(
    statistics_paths, label
):
    """The label keeps TFDV's numeric statistics, so SchemaGen infers what it inferred
    before (an INT feature, which validates), and gains each class's count."""
    statistics = tfdv.load_stats_binary(statistics_paths[label])
    [feature] = [f for f in statistics.datasets[0].features if f.path.step == [label]]
    values = [row[label][0] for row in _rows()]
    assert feature.num_stats.mean == pytest.approx(np.mean(values))
    [counted] = feature.custom_stats
    assert {b.label: b.sample_count for b in counted.rank_histogram.buckets} == {
        str(v): values.count(v) for v in set(values)
    }
    schema = tfdv.infer_schema(statistics)
    assert tfdv.get_feature(schema, label).type == schema_pb2.INT
    assert not tfdv.validate_statistics(statistics, schema).anomaly_info


def test_statistics_that_describe_an_integer_label_as_numbers_leave_it_to_tf_transform(
    tmp_path,
):
    """Statistics not told the label names classes (``convert``'s, or a regression's) hold
    no values of it: its vocabulary falls back to tf.Transform's analyzer."""
    path = _statistics(tmp_path, class_label=None)
    assert statistics_analysis.load((path,)).vocabulary("class_id") is None
    task = Task(label="class_id", inputs=TASK.inputs, multi_valued=TASK.multi_valued)
    config = {**task.to_custom_config(), statistics_analysis.STATISTICS_PATH_KEY: [path]}
    assert _has_analyzers(config)


def _string_feature(values: list[str], unique: int) -> statistics_pb2.DatasetFeatureStatistics:
    stats = statistics_pb2.DatasetFeatureStatistics()
    feature = stats.features.add()
    feature.path.step.append("s")
    feature.string_stats.unique = unique
    for v in values:
        feature.string_stats.top_values.add(value=v, frequency=1)
    return stats


def test_statistics_that_miss_values_leave_the_vocabulary_to_tf_transform():
    complete = statistics_analysis.TrainStatistics(_string_feature(["b", "a", "c"], unique=3))
    assert sorted(complete.vocabulary("s")) == [b"a", b"b", b"c"]
    truncated = statistics_analysis.TrainStatistics(_string_feature(["b", "a"], unique=3))
    assert truncated.vocabulary("s") is None
    placeholder = statistics_analysis.TrainStatistics(
        _string_feature(["a", "__BYTES_VALUE__"], unique=2)
    )
    assert placeholder.vocabulary("s") is None
    assert complete.vocabulary("other") is None and complete.moments("s") is None


def test_numbers_with_nans_leave_the_moments_to_tf_transform():
    stats = statistics_pb2.DatasetFeatureStatistics()
    feature = stats.features.add()
    feature.path.step.append("x")
    feature.num_stats.mean, feature.num_stats.std_dev = 2.0, 3.0
    feature.num_stats.common_stats.tot_num_values = 10
    assert statistics_analysis.TrainStatistics(stats).moments("x") == (2.0, 9.0)
    feature.num_stats.histograms.add().num_nan = 1
    assert statistics_analysis.TrainStatistics(stats).moments("x") is None


# A window of spans of unequal sizes, with moved means and a tag of span 3's own.
WINDOW = {1: 600, 2: 150, 3: 400}


@pytest.fixture(scope="module")
def window(tmp_path_factory) -> tuple[list[dict], dict[str, list[str]]]:
    """The window's rows, all spans together, and each span's statistics files by label."""
    folder = tmp_path_factory.mktemp("window")
    spans = {span: _rows(seed=span, rows=n, span=span) for span, n in WINDOW.items()}
    paths = {
        label: [
            _statistics(folder / label / str(span), label, rows) for span, rows in spans.items()
        ]
        for label in ("label", "class_id")
    }
    return [row for rows in spans.values() for row in rows], paths


@pytest.mark.parametrize("label", ["label", "class_id"])
def test_a_windows_merged_statistics_equal_tf_transforms_analysis_of_the_whole_window(
    window, tmp_path, label
):
    """Each span's statistics, merged, give what tf.Transform's analyzers give over every
    row of the window: output by output, with no analyzer left."""
    rows, paths = window
    task = Task(label=label, inputs=TASK.inputs, multi_valued=TASK.multi_valued)
    config = {**task.to_custom_config(), **CATEGORICAL}
    merged = {**config, statistics_analysis.STATISTICS_PATH_KEY: paths[label]}
    assert not _has_analyzers(merged)
    analyzed = _analyze_and_transform(config, str(tmp_path / "analyzed"), rows)
    from_statistics = _analyze_and_transform(merged, str(tmp_path / "from_statistics"), rows)
    graphs = _assert_same_outputs(tmp_path, analyzed, from_statistics, label, atol=1e-5)
    assert b"span3" in graphs[1].vocabulary_by_name(vocabulary_name("tags"))
    # The spans' sizes differ in mean and spread: one span's moments would not do.
    alone = statistics_analysis.load((paths[label][0],)).moments("size")
    assert abs(alone[0] - statistics_analysis.load(tuple(paths[label])).moments("size")[0]) > 10


def test_one_spans_incomplete_statistics_leave_that_feature_to_tf_transform(window):
    """A feature is taken from the window's statistics only where every span's are exact;
    the others are unaffected."""
    _, paths = window
    spans = [statistics_analysis.load((path,)) for path in paths["label"]]
    complete = [_string_feature(["b", "a"], unique=2), _string_feature(["c"], unique=1)]
    assert sorted(statistics_analysis.TrainStatistics(*complete).vocabulary("s")) == [
        b"a", b"b", b"c"
    ]  # fmt: skip
    truncated = [complete[0], _string_feature(["c"], unique=2)]
    assert statistics_analysis.TrainStatistics(*truncated).vocabulary("s") is None
    # A span without the feature at all: not taken from statistics.
    assert (
        statistics_analysis.TrainStatistics(complete[0], _number("x", 1.0, 1.0, 5)).vocabulary("s")
        is None
    )
    assert all(span.vocabulary("colour") for span in spans)


def _number(name: str, mean: float, std_dev: float, count: int, nans: int = 0):
    stats = statistics_pb2.DatasetFeatureStatistics()
    feature = stats.features.add()
    feature.path.step.append(name)
    feature.num_stats.mean, feature.num_stats.std_dev = mean, std_dev
    feature.num_stats.common_stats.tot_num_values = count
    if nans:
        feature.num_stats.histograms.add().num_nan = nans
    return stats


def test_merged_moments_are_those_of_the_values_together():
    """Counts, means and variances combine exactly; a span with NaNs leaves the feature to
    tf.Transform, and a span without values adds nothing."""
    rng = np.random.default_rng(0)
    parts = [
        rng.normal(mean, sd, n) for mean, sd, n in ((1.0, 2.0, 50), (9.0, 0.5, 7), (-3, 4, 200))
    ]
    spans = [_number("x", p.mean(), p.std(), len(p)) for p in parts]
    together = np.concatenate(parts)
    mean, variance = statistics_analysis.TrainStatistics(*spans).moments("x")
    assert mean == pytest.approx(together.mean(), rel=1e-12)
    assert variance == pytest.approx(together.var(), rel=1e-12)
    empty = _number("x", 0.0, 0.0, 0)
    assert statistics_analysis.TrainStatistics(*spans, empty).moments("x") == (mean, variance)
    with_nans = _number("x", 1.0, 1.0, 10, nans=1)
    assert statistics_analysis.TrainStatistics(*spans, with_nans).moments("x") is None
