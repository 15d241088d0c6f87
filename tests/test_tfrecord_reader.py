"""TFRecord files read without TensorFlow: the records TensorFlow reads, or a clear error."""

import pytest
import tensorflow as tf

from tfrecord_pipelines.components.tfrecords.reader import CorruptRecordFile, read_records

RECORDS = [b"", b"one", b"x" * 70_000, bytes(range(256))]


def _write(path, compression=""):
    with tf.io.TFRecordWriter(str(path), tf.io.TFRecordOptions(compression_type=compression)) as w:
        for record in RECORDS:
            w.write(record)
    return path


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_reads_what_tensorflow_wrote_and_reads(tmp_path, compression):
    # No file name hint: GZIP is told from its magic bytes.
    path = _write(tmp_path / "records", compression)
    assert list(read_records(str(path))) == RECORDS
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(path), compression)] == RECORDS


def test_an_empty_file_has_no_records(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    assert list(read_records(str(tmp_path / "empty"))) == []


def test_truncated_corrupted_and_missing_files_are_named_errors(tmp_path):
    whole = _write(tmp_path / "whole").read_bytes()
    (tmp_path / "cut").write_bytes(whole[:-3])
    with pytest.raises(CorruptRecordFile, match=r"cut is not a valid TFRecord file: truncated"):
        list(read_records(str(tmp_path / "cut")))
    flipped = bytearray(whole)
    flipped[12 + 4 + 12 + 1] ^= 0xFF  # a byte of the second record's data
    (tmp_path / "flipped").write_bytes(bytes(flipped))
    with pytest.raises(CorruptRecordFile, match=r"corrupted record data at byte 16"):
        list(read_records(str(tmp_path / "flipped")))
    gzipped = _write(tmp_path / "gz", "GZIP").read_bytes()
    (tmp_path / "gz-cut").write_bytes(gzipped[: len(gzipped) // 2])
    with pytest.raises(CorruptRecordFile, match=r"gz-cut is not a valid TFRecord file"):
        list(read_records(str(tmp_path / "gz-cut")))
    with pytest.raises(FileNotFoundError):
        list(read_records(str(tmp_path / "absent")))
