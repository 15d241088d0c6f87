"""ShardedExampleGen on image folders and Parquet files."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf

from example_data import (
    convert_as_written,
    read_split,
    trainer_decodes,
    write_corrupt_photos,
    write_images,
)
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.local.beam_args import local_beam_args

# In memory, one process; TFX not packaged for workers (what convert passes).
IN_MEMORY = local_beam_args()


def _convert(source, dest, source_format, **overrides):
    settings = dict(
        source_format=source_format,
        sharding=ShardingOptions(),
        compression="gzip",
        max_bad_fraction=0.5,
        beam_pipeline_args=IN_MEMORY,
    )
    settings.update(overrides)
    return convert_as_written(source, dest, **settings)


def _all_examples(out):
    return read_split(out / "Split-train") + read_split(out / "Split-eval")


def _quarantined(out):
    return [
        json.loads(line)
        for path in (out / "quarantine").glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]


def test_images_are_stored_byte_identical_with_label_and_shape(tmp_path):
    written = write_images(tmp_path / "images")
    report = _convert(tmp_path / "images", tmp_path / "out", "images")
    examples = {
        e.features.feature["filename"].bytes_list.value[0].decode(): e.features.feature
        for e in _all_examples(tmp_path / "out")
    }
    assert set(examples) == set(written)
    for name, encoded in written.items():
        feature = examples[name]
        assert feature["image"].bytes_list.value[0] == encoded
        is_cat = name.startswith("cats")
        assert feature["label"].int64_list.value[0] == (0 if is_cat else 1)
        assert feature["class_name"].bytes_list.value[0] == (b"cats" if is_cat else b"dogs")
        assert feature["channels"].int64_list.value[0] == (3 if is_cat else 1)
        assert feature["width"].int64_list.value[0] == 12
        assert feature["height"].int64_list.value[0] == 8 + int(name.split("-")[1][0])
    # notes.txt is skipped and named; hidden files are ignored; nothing is bad.
    assert report["quarantined"] == 0
    assert report["skipped_files"] == {"count": 1, "first": ["cats/notes.txt"]}


def test_a_folder_with_a_stray_file_converts_at_the_default_bad_fraction(tmp_path):
    # 60 JPEGs and a notes.txt: 1.6% of the files, over the default 1%, once refused.
    for i in range(60):
        (tmp_path / "images" / f"c{i % 2}").mkdir(parents=True, exist_ok=True)
        (tmp_path / "images" / f"c{i % 2}" / f"{i}.jpg").write_bytes(
            tf.io.encode_jpeg(tf.fill([8, 8, 3], tf.constant(i, tf.uint8))).numpy()
        )
    (tmp_path / "images" / "c0" / "notes.txt").write_text("shot on a Tuesday\n")
    (tmp_path / "images" / "c1" / ".DS_Store").write_bytes(b"\0")
    report = _convert(tmp_path / "images", tmp_path / "out", "images", max_bad_fraction=0.01)
    assert (report["records_written"], report["quarantined"]) == (60, 0)
    assert report["skipped_files"] == {"count": 1, "first": ["c0/notes.txt"]}


def test_every_jpeg_the_trainers_decoder_rejects_is_quarantined(tmp_path):
    # Damaged in the middle, header and end marker intact: only a decode tells.
    decodes = write_corrupt_photos(tmp_path / "photos")
    rejected = {name for name, ok in decodes.items() if not ok}
    assert 0 < len(rejected) < len(decodes)
    report = _convert(tmp_path / "photos", tmp_path / "out", "images")
    quarantined = _quarantined(tmp_path / "out")
    assert {bad["content"] for bad in quarantined} == rejected
    assert all(bad["reason"].startswith("not an image: ") for bad in quarantined)
    assert report["records_written"] == len(decodes) - len(rejected)
    for example in _all_examples(tmp_path / "out"):
        assert trainer_decodes(example.features.feature["image"].bytes_list.value[0])


def test_images_with_a_labels_file(tmp_path):
    written = write_images(tmp_path / "images")
    lines = ["filename,label,class_name"] + [
        f"{name.split('-')[0]}/{name},{7 if name.startswith('cats') else 9},"
        f"{'tabby' if name.startswith('cats') else 'terrier'}"
        for name in written
    ]
    (tmp_path / "images" / "labels.csv").write_text("\n".join(lines) + "\n")
    _convert(tmp_path / "images", tmp_path / "out", "images", label_key="target")
    examples = {
        e.features.feature["filename"].bytes_list.value[0].decode(): e.features.feature
        for e in _all_examples(tmp_path / "out")
    }
    assert sorted(examples) == sorted(written)  # notes.txt is not listed, so not read
    assert examples["cats-0.jpg"]["target"].int64_list.value[0] == 7
    assert examples["dogs-1.png"]["class_name"].bytes_list.value[0] == b"terrier"
    assert examples["dogs-1.png"]["image"].bytes_list.value[0] == written["dogs-1.png"]


def test_empty_image_folder_is_a_clear_error(tmp_path):
    (tmp_path / "images").mkdir()
    with pytest.raises(ValueError, match="holds no images: expected one sub-folder of images"):
        _convert(tmp_path / "images", tmp_path / "out", "images")


def test_parquet_types_lists_and_nulls(tmp_path):
    (tmp_path / "pq").mkdir()
    table = pa.table(
        {
            "id": pa.array(range(300), pa.int32()),
            "score": pa.array([None if i % 10 == 0 else i / 3 for i in range(300)], pa.float64()),
            "tags": pa.array([["a", "b"][: i % 3] for i in range(300)], pa.list_(pa.string())),
            "flag": pa.array([i % 2 == 0 for i in range(300)]),
        }
    )
    pq.write_table(table, tmp_path / "pq" / "part-0.parquet")
    (tmp_path / "pq" / "part-1.parquet").write_bytes(b"PAR1 this is not parquet")
    report = _convert(tmp_path / "pq", tmp_path / "out", "parquet")
    assert report["records_written"] == 300
    assert report["quarantined"] == 1
    (bad,) = _quarantined(tmp_path / "out")
    assert bad["source"].endswith("part-1.parquet")
    assert bad["reason"].startswith("unreadable Parquet file")
    by_id = {
        e.features.feature["id"].int64_list.value[0]: e.features.feature
        for e in _all_examples(tmp_path / "out")
    }
    assert "score" not in by_id[10]
    assert by_id[4]["score"].float_list.value[0] == pytest.approx(4 / 3)
    assert list(by_id[2]["tags"].bytes_list.value) == [b"a", b"b"]
    assert by_id[2]["flag"].int64_list.value[0] == 1
