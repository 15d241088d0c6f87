"""``make_dataset`` (components.trainer) yields exactly what a sequential reader reads."""

import collections
import os

import numpy as np
import pytest
import tensorflow as tf

from tfrecord_pipelines.components.trainer import feature_spec_from_schema, make_dataset
from tfrecord_pipelines.components.trainer.input_options import InputOptions

FEATURE_SPEC = {
    "id": tf.io.FixedLenFeature([], tf.int64),
    "pair": tf.io.FixedLenFeature([2], tf.float32),
    "colour": tf.io.FixedLenFeature([], tf.string),
    "tags": tf.io.VarLenFeature(tf.int64),
    "label": tf.io.FixedLenFeature([], tf.int64),
}
SHARDS = 6
PER_SHARD = 53  # not a multiple of the batch: the last batch is short


def _example(i: int) -> bytes:
    feature = {
        "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
        "pair": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 2, -i])),
        "colour": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"rgb"[i % 3 :]])),
        "tags": tf.train.Feature(int64_list=tf.train.Int64List(value=list(range(i % 4)))),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _write_shards(folder, compression: str) -> str:
    suffix = ".gz" if compression == "GZIP" else ""
    os.makedirs(folder, exist_ok=True)
    for shard in range(SHARDS):
        path = os.path.join(folder, f"data-{shard:05d}-of-{SHARDS:05d}{suffix}")
        with tf.io.TFRecordWriter(path, options=compression or None) as writer:
            for i in range(shard * PER_SHARD, (shard + 1) * PER_SHARD):
                writer.write(_example(i))
    return os.path.join(folder, "data-*")


def _rows(features: dict) -> list[tuple]:
    """One hashable tuple per example of a parsed batch (sparse features as tuples)."""
    columns = {}
    for name, value in features.items():
        if isinstance(value, tf.SparseTensor):
            columns[name] = [tuple(r) for r in tf.RaggedTensor.from_sparse(value).to_list()]
        else:
            columns[name] = [
                tuple(v.tolist()) if isinstance(v, np.ndarray) else v for v in value.numpy()
            ]
    return list(zip(*(columns[name] for name in sorted(columns)), strict=True))


def _sequential(pattern: str, compression: str) -> list[tuple]:
    rows = []
    for path in sorted(tf.io.gfile.glob(pattern)):
        for record in tf.data.TFRecordDataset(path, compression_type=compression):
            parsed = tf.io.parse_example(record[tf.newaxis], FEATURE_SPEC)
            rows.extend(_rows(parsed))
    return rows


def _read(dataset) -> list[tuple]:
    return [row for batch in dataset for row in _rows(batch)]


@pytest.fixture(scope="module", params=["GZIP", ""], ids=["gzip", "uncompressed"])
def shards(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    pattern = _write_shards(str(folder), request.param)
    return pattern, request.param


@pytest.mark.parametrize("training", [True, False], ids=["training", "evaluation"])
def test_yields_the_same_examples_as_a_sequential_reader(shards, training):
    pattern, compression = shards
    expected = _sequential(pattern, compression)
    dataset = make_dataset(pattern, FEATURE_SPEC, 32, training=training, num_epochs=1)
    got = _read(dataset)
    assert len(expected) == SHARDS * PER_SHARD
    assert collections.Counter(got) == collections.Counter(expected)


@pytest.mark.parametrize("read_block_size", [1, 7, 100])
def test_any_read_block_size_gives_every_example_in_full_batches(shards, read_block_size):
    # 7 divides neither the batch nor a shard (53 records); 100 exceeds a shard.
    pattern, compression = shards
    dataset = make_dataset(
        pattern,
        FEATURE_SPEC,
        32,
        num_epochs=1,
        options=InputOptions(read_block_size=read_block_size, seed=3),
    )
    # Training parses batches out of order: the short batch may come before the last.
    sizes = sorted((int(batch["id"].shape[0]) for batch in dataset), reverse=True)
    assert sizes == [32] * (SHARDS * PER_SHARD // 32) + [SHARDS * PER_SHARD % 32]
    got = _read(dataset)
    assert collections.Counter(got) == collections.Counter(_sequential(pattern, compression))


@pytest.mark.parametrize("cache", ["memory", "file"])
def test_cached_epochs_yield_the_same_examples(shards, cache, tmp_path):
    pattern, compression = shards
    expected = collections.Counter(_sequential(pattern, compression))
    cache_arg = "memory" if cache == "memory" else str(tmp_path / "cache" / "train")
    dataset = make_dataset(pattern, FEATURE_SPEC, 32, training=True, num_epochs=2, cache=cache_arg)
    got = _read(dataset)
    assert collections.Counter(got[: len(got) // 2]) == expected
    assert collections.Counter(got[len(got) // 2 :]) == expected
    if cache == "file":
        assert tf.io.gfile.glob(str(tmp_path / "cache" / "train*"))


def test_evaluation_order_is_deterministic(shards):
    pattern, _ = shards
    first = _read(make_dataset(pattern, FEATURE_SPEC, 16, training=False, num_epochs=1))
    again = _read(make_dataset(pattern, FEATURE_SPEC, 16, training=False, num_epochs=1))
    assert first == again


@pytest.mark.parametrize("cache", [None, "memory"])
def test_training_order_differs_across_epochs(shards, cache):
    pattern, compression = shards
    expected = _sequential(pattern, compression)
    rows = _read(make_dataset(pattern, FEATURE_SPEC, 16, num_epochs=2, cache=cache))
    # Without a cache, epochs meet inside the shuffle buffer: check the whole run.
    assert collections.Counter(rows) == collections.Counter(expected * 2)
    half = len(rows) // 2
    assert rows[:half] != rows[half:]


def test_label_key_splits_the_label_off(shards):
    pattern, _ = shards
    features, label = next(iter(make_dataset(pattern, FEATURE_SPEC, 8, label_key="label")))
    assert "label" not in features
    assert label.shape == (8,)
    np.testing.assert_array_equal(label.numpy(), features["id"].numpy() % 2)


def test_ragged_features_parse_in_batches(shards):
    pattern, _ = shards
    spec = {"id": FEATURE_SPEC["id"], "tags": tf.io.RaggedFeature(tf.int64)}
    batch = next(iter(make_dataset(pattern, spec, 8, training=False, num_epochs=1)))
    assert isinstance(batch["tags"], tf.RaggedTensor)
    assert [len(r) for r in batch["tags"].to_list()] == [i % 4 for i in batch["id"].numpy()]


def test_drop_remainder_gives_full_batches_only(shards):
    pattern, _ = shards
    sizes = [
        int(batch["id"].shape[0])
        for batch in make_dataset(
            pattern, FEATURE_SPEC, 32, num_epochs=1, options=InputOptions(drop_remainder=True)
        )
    ]
    assert sizes == [32] * (SHARDS * PER_SHARD // 32)


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("", "file_pattern is empty"),
        ([], "file_pattern is empty"),
        ("/nonexistent/shards-*", "No TFRecord files match '/nonexistent/shards-\\*'"),
    ],
)
def test_a_missing_or_empty_pattern_is_a_clear_error(pattern, message):
    with pytest.raises(ValueError, match=message):
        make_dataset(pattern, FEATURE_SPEC, 8)


def test_mixed_compression_needs_an_explicit_setting(tmp_path):
    _write_shards(str(tmp_path / "a"), "GZIP")
    _write_shards(str(tmp_path / "b"), "")
    patterns = [str(tmp_path / "a" / "*"), str(tmp_path / "b" / "*")]
    with pytest.raises(ValueError, match="Some files end in .gz and some do not"):
        make_dataset(patterns, FEATURE_SPEC, 8)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0}, "batch_size must be at least 1, got 0"),
        ({"num_epochs": 0}, "num_epochs must be at least 1"),
        ({"label_key": "price"}, "label_key 'price' is not in the feature spec"),
        ({"options": {"compression": "lz4"}}, "compression must be GZIP, ZLIB, NONE"),
        ({"options": {"read_block_size": 0}}, "read_block_size must be at least 1, got 0"),
    ],
)
def test_bad_arguments_are_named(shards, kwargs, message):
    pattern, _ = shards
    arguments = {"batch_size": 8, **kwargs}
    with pytest.raises(ValueError, match=message):
        if "options" in arguments:  # InputOptions checks its own settings as it is made
            arguments["options"] = InputOptions(**arguments["options"])
        make_dataset(pattern, FEATURE_SPEC, **arguments)


def test_feature_spec_comes_from_the_curated_schema():
    from conftest import REPO_ROOT

    spec = feature_spec_from_schema(str(REPO_ROOT / "schemas" / "penguins" / "schema.pbtxt"))
    assert spec["species"] == tf.io.FixedLenFeature([1], tf.string)
    assert spec["bill_length_mm"].dtype == tf.float32
    # Optional features (presence below 1) are variable-length.
    assert spec["body_mass_g"] == tf.io.VarLenFeature(tf.int64)
