"""Resolving --data in a bucket asks the store each look-up once (filesystem.one_listing), and
nothing is remembered outside that scope. TensorFlow's in-memory file system (ram://) stands in
for the bucket's API here; tests/test_object_store_gcs.py resolves a Hive folder on
fake-gcs-server."""

import collections

import pytest
import tensorflow as tf

from tfrecord_pipelines.components.data_source import open_source
from tfrecord_pipelines.components.storage import filesystem

ROOT = "ram://one-listing/events"


@pytest.fixture()
def asked(monkeypatch):
    """Counts the look-ups that reach the file system, by kind."""
    counts = collections.Counter()
    for name in ("exists", "isdir", "listdir", "stat", "walk"):
        real = getattr(tf.io.gfile, name)

        def counting(*args, _real=real, _name=name):
            counts[_name] += 1
            return _real(*args)

        monkeypatch.setattr(tf.io.gfile, name, counting)
    return counts


def _write(path: str, text: str = "x,label\n1,0\n2,1\n") -> None:
    tf.io.gfile.makedirs(path.rsplit("/", 1)[0])
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(text)


def test_each_look_up_is_asked_once_within_one_listing(asked):
    for day in ("2026-11-01", "2026-11-02"):
        _write(f"{ROOT}/day={day}/part-0.csv")
    with filesystem.one_listing():
        source = open_source(ROOT)
        first = sum(asked.values())
        again = open_source(ROOT)
        assert again == source and sum(asked.values()) == first
    assert source.format == "csv" and source.pattern == "day=*/*.csv"
    assert len(source.files()) == 2


def test_nothing_is_remembered_outside_it(asked):
    _write(f"{ROOT}-later/day=1/part-0.csv")
    with filesystem.one_listing():
        assert len(filesystem.glob(f"{ROOT}-later/day=*/*.csv")) == 1
        _write(f"{ROOT}-later/day=2/part-0.csv")
        # Inside: the listing taken once (the data is not meant to change while it is read).
        assert len(filesystem.glob(f"{ROOT}-later/day=*/*.csv")) == 1
    assert len(filesystem.glob(f"{ROOT}-later/day=*/*.csv")) == 2
