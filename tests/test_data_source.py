"""One description of the data: format detection and per-format checks, before any slow import."""

import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from example_data import write_images
from tfrecord_pipelines.components import data_source
from tfrecord_pipelines.components.data_source import DataSource


def _csv(folder, name="d.csv", text="a,b,label\n1,x,0\n"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


def _parquet(folder, name="d.parquet"):
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "size": [1.5, 2.5],
            "tags": [["a", "b"], []],
            "vector": [[1.0, 2.0], [3.0, 4.0]],
            "label": ["x", "y"],
        }
    )
    pq.write_table(table, folder / name)


def _labels_file(folder):
    (folder / "img").mkdir(parents=True)
    (folder / "labels.csv").write_text(
        "filename,label,class_name\nimg/a.png,0,cat\nimg/b.png,1,dog\n"
    )


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda d: write_images(d), "images"),
        (_labels_file, "images"),
        (_csv, "csv"),
        (_parquet, "parquet"),
    ],
    ids=["class-folders", "labels-file", "csv", "parquet"],
)
def test_detects_each_layout(tmp_path, make, expected):
    make(tmp_path / "data")
    assert data_source.detect_format(str(tmp_path / "data")) == expected


def test_csv_and_parquet_together_are_ambiguous(tmp_path):
    _csv(tmp_path)
    _parquet(tmp_path)
    with pytest.raises(ValueError, match="is ambiguous: it holds 1 [*].csv") as error:
        data_source.detect_format(str(tmp_path))
    assert "1 *.parquet(s)" in str(error.value)
    assert "pass --format csv|parquet to choose" in str(error.value)


def test_csv_beside_image_folders_is_ambiguous(tmp_path):
    write_images(tmp_path)
    _csv(tmp_path)
    with pytest.raises(ValueError, match="pass --format csv|images"):
        data_source.detect_format(str(tmp_path))


def test_folder_without_a_known_layout_names_the_layouts(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no data in a layout this project reads") as error:
        data_source.detect_format(str(tmp_path))
    for layout in ("*.csv files", "*.parquet files", "sub-folder of images", "labels.csv"):
        assert layout in str(error.value)


def test_given_format_must_match_the_folder(tmp_path):
    _csv(tmp_path)
    with pytest.raises(ValueError, match=r"holds no \*.parquet file"):
        data_source.open_source(str(tmp_path), "parquet")
    with pytest.raises(ValueError, match="holds no images"):
        data_source.open_source(str(tmp_path), "images")
    assert data_source.open_source(str(tmp_path), "csv") == DataSource(str(tmp_path), "csv")


def test_parquet_columns_and_list_columns(tmp_path):
    _parquet(tmp_path)
    source = DataSource(str(tmp_path), "parquet")
    assert data_source.columns(source) == ["size", "tags", "vector", "label"]
    assert data_source.multi_valued_columns(source) == ("tags", "vector")
    data_source.check_label(source, "label")
    with pytest.raises(ValueError, match="Label column 'tags' of .* holds lists"):
        data_source.check_label(source, "tags")
    with pytest.raises(ValueError, match="Label column 'price' is not in the Parquet columns"):
        data_source.check_label(source, "price")


def test_image_folder_needs_two_classes(tmp_path):
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "a.png").write_bytes(b"")
    source = data_source.open_source(str(tmp_path))
    with pytest.raises(ValueError, match="names 1 class\\(es\\); a classifier needs at least two"):
        data_source.check_label(source, "label")


def test_image_file_pattern_covers_the_images(tmp_path):
    write_images(tmp_path / "folders")
    _labels_file(tmp_path / "labelled")
    assert DataSource(str(tmp_path / "folders"), "images").file_pattern == "*/*"
    assert DataSource(str(tmp_path / "labelled"), "images").file_pattern == "*"
    assert DataSource(str(tmp_path), "csv").file_pattern == "*.csv"


def test_the_cli_checks_a_bad_folder_without_importing_tensorflow(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    probe = (
        "import sys\n"
        "from tfrecord_pipelines.cli.main import main\n"
        f"status = main(['run', '--data', {str(tmp_path)!r}, '--label', 'y'])\n"
        "print(status, 'tensorflow' in sys.modules, 'tfx' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert result.stdout.split() == ["2", "False", "False"], result.stderr
    assert "holds no data in a layout this project reads" in result.stderr


def test_hidden_entries_are_ignored_and_files_not_named_like_images_skipped(tmp_path):
    from tfrecord_pipelines.components import image_folder

    written = write_images(tmp_path)
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "x.png").write_bytes(b"")
    (tmp_path / "cats" / ".DS_Store").write_bytes(b"\0")
    listing = image_folder.list_folder(str(tmp_path))
    assert {f.class_name for f in listing.files} == {"cats", "dogs"}
    assert {p.rsplit("/", 1)[1] for p in (f.path for f in listing.files)} == set(written)
    assert listing.skipped == ["cats/notes.txt"]
    assert image_folder.count_classes(str(tmp_path)) == 2
