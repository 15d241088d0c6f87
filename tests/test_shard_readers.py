"""Shards as ExampleGen writes them (pieces of several bundles joined) read alike by
TensorFlow and Beam's ReadFromTFRecord, for each compression; Spark's read is in
test_example_gen_spark, beside its session."""

import apache_beam as beam
import pytest
import tensorflow as tf
from apache_beam.testing.util import assert_that, equal_to

from example_data import BUNDLES, write_bundled_shards
from tfrecord_pipelines.components.tfrecords.reader import read_records


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return write_bundled_shards(tmp_path_factory.mktemp("shards"))


def test_gzip_shards_are_one_member_per_bundle(shards):
    for compression in ("gzip", "gzip:6"):
        path, expected = shards[compression]
        assert open(path, "rb").read().count(b"\x1f\x8b\x08") >= BUNDLES
        # Python's gzip reads every member; the reader checks each record's CRC32Cs.
        assert list(read_records(path)) == expected


@pytest.mark.parametrize("compression", ["gzip", "gzip:6", "none"])
def test_tensorflow_and_beam_read_every_record_in_order(shards, compression):
    path, expected = shards[compression]
    kind = "" if compression == "none" else "GZIP"
    assert [r.numpy() for r in tf.data.TFRecordDataset(path, compression_type=kind)] == expected
    with beam.Pipeline() as pipeline:
        read = pipeline | beam.io.ReadFromTFRecord(path) | beam.combiners.ToList()
        assert_that(read, equal_to([expected]))
