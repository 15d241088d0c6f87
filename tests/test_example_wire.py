"""The columnar tf.Example encoder writes exactly protobuf's deterministic bytes."""

import numpy as np
import pyarrow as pa
import pytest
import tensorflow as tf

from tfrecord_pipelines.components.example_gen.example_wire import (
    encode_examples,
    map_key_order,
    unencodable,
)
from tfrecord_pipelines.components.example_gen.record_encoding import ExampleEncoder

_INTS = [0, 1, -1, 127, 128, 300, 2**35, -(2**63), 2**63 - 1]
_FLOATS = [0.0, -0.0, 1.5, np.nan, np.inf, -3e38, 1e-45]
# Names whose order tests upb's: a prefix sorts after the longer name ("aB" before "a").
_NAMES = ["a", "B", "a_b", "aB", "label", "é", "x" * 200, "", "a\x00"]
_TYPES = (pa.int64(), pa.float32(), pa.large_binary())


def _column(rng, rows: int, value_type: pa.DataType) -> pa.LargeListArray:
    counts = rng.integers(0, 4, rows)
    counts[rng.random(rows) < 0.3] = 1
    offsets = np.zeros(rows + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    if value_type == pa.int64():
        values = pa.array(rng.choice(_INTS, offsets[-1]).astype(np.int64))
    elif value_type == pa.float32():
        values = pa.array(rng.choice(_FLOATS, offsets[-1]).astype(np.float32))
    else:
        lengths = rng.choice([0, 1, 5, 127, 128, 300], offsets[-1])
        values = pa.array([bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in lengths],
                          pa.large_binary())  # fmt: skip
    mask = pa.array(rng.random(rows) < 0.2) if rng.random() < 0.5 else None
    return pa.LargeListArray.from_arrays(pa.array(offsets), values, mask=mask)


def _protobuf_bytes(batch: pa.RecordBatch) -> list[bytes]:
    """Each row built with protobuf's API and serialized in its deterministic mode."""
    records = []
    for row in batch.to_pylist():
        example = tf.train.Example()
        for name, values in row.items():
            if values is None:
                continue
            kind = batch.schema.field(name).type.value_type
            feature = example.features.feature[name]
            if kind == pa.int64():
                feature.int64_list.value.extend(values)
                feature.int64_list.SetInParent()
            elif kind == pa.float32():
                feature.float_list.value.extend(values)
                feature.float_list.SetInParent()
            else:
                feature.bytes_list.value.extend(values)
                feature.bytes_list.SetInParent()
        example.features.SetInParent()
        records.append(example.SerializeToString(deterministic=True))
    return records


@pytest.mark.parametrize("seed", range(4))
def test_random_batches_match_protobufs_deterministic_bytes(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        rows = int(rng.integers(1, 40))
        names = rng.choice(_NAMES, int(rng.integers(1, 6)), replace=False)
        batch = pa.RecordBatch.from_pydict(
            {name: _column(rng, rows, _TYPES[rng.integers(0, 3)]) for name in names}
        )
        if rows > 4 and rng.random() < 0.3:
            batch = batch.slice(2, rows - 3)
        assert unencodable(batch) is None
        assert encode_examples(batch).to_pylist() == _protobuf_bytes(batch)


def test_nulls_are_absent_features_and_empty_lists_present_ones():
    batch = pa.RecordBatch.from_pydict(
        {
            "n": pa.array([[], None, [7]], pa.large_list(pa.int64())),
            "s": pa.array([None, None, [b""]], pa.large_list(pa.large_binary())),
        }
    )
    examples = [tf.train.Example.FromString(r) for r in ExampleEncoder().encode(batch)]
    assert [sorted(e.features.feature) for e in examples] == [["n"], [], ["n", "s"]]
    assert examples[0].features.feature["n"].WhichOneof("kind") == "int64_list"
    assert list(examples[2].features.feature["s"].bytes_list.value) == [b""]


def test_map_key_order_is_upbs():
    assert sorted(["a", "aB", "B", "a_b", ""], key=map_key_order) == ["B", "aB", "a_b", "a", ""]


def test_a_null_outside_a_slice_is_not_the_slices():
    column = pa.array([[1.0, None], [2.0], [3.0, 4.0]], pa.large_list(pa.float32()))
    batch = pa.RecordBatch.from_pydict({"v": column}).slice(1)
    assert unencodable(batch) is None
    assert ExampleEncoder().encode(batch) == _protobuf_bytes(batch)


def test_a_column_the_encoder_does_not_take_is_named():
    values = pa.array([[1.0, None]], pa.large_list(pa.float32()))
    nulls_inside = pa.RecordBatch.from_pydict({"v": values})
    with pytest.raises(ValueError, match="column 'v' has a null value inside a list"):
        ExampleEncoder().encode(nulls_inside)
    strings = pa.RecordBatch.from_pydict({"t": pa.array([["x"]], pa.list_(pa.string()))})
    assert "column 't' is list<item: string>" in unencodable(strings)
