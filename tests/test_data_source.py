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
    assert data_source.open_source(str(tmp_path / "data")).format == expected


def test_csv_and_parquet_together_are_ambiguous(tmp_path):
    _csv(tmp_path)
    _parquet(tmp_path)
    with pytest.raises(ValueError, match=r"is ambiguous: it holds 1 CSV file\(s\)") as error:
        data_source.open_source(str(tmp_path))
    assert "1 Parquet file(s) (d.parquet, ...)" in str(error.value)
    assert "pass --format csv|parquet to choose" in str(error.value)


def test_csv_beside_image_folders_is_ambiguous(tmp_path):
    write_images(tmp_path)
    _csv(tmp_path)
    with pytest.raises(ValueError, match="pass --format csv|images"):
        data_source.open_source(str(tmp_path))


def test_folder_without_a_known_layout_names_the_layouts(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no data in a layout this project reads") as error:
        data_source.open_source(str(tmp_path))
    for layout in ("CSV (.csv, .tsv", "Parquet files", "sub-folder of images", "labels.csv"):
        assert layout in str(error.value)


def test_given_format_must_match_the_folder(tmp_path):
    _csv(tmp_path)
    with pytest.raises(ValueError, match=r"holds no parquet file"):
        data_source.open_source(str(tmp_path), "parquet")
    with pytest.raises(ValueError, match="holds no images"):
        data_source.open_source(str(tmp_path), "images")
    assert data_source.open_source(str(tmp_path), "csv") == DataSource(
        str(tmp_path), "csv", pattern="*.csv", delimiter=","
    )


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
    assert DataSource(str(tmp_path), "csv").file_pattern == "*"  # its files by extension


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
    from tfrecord_pipelines.components.data_source import image_folder

    written = write_images(tmp_path)
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "x.png").write_bytes(b"")
    (tmp_path / "cats" / ".DS_Store").write_bytes(b"\0")
    listing = image_folder.list_folder(str(tmp_path))
    assert {f.class_name for f in listing.files} == {"cats", "dogs"}
    assert {p.rsplit("/", 1)[1] for p in (f.path for f in listing.files)} == set(written)
    assert listing.skipped == ["cats/notes.txt"]
    assert image_folder.count_classes(str(tmp_path)) == 2


@pytest.mark.parametrize(
    "labels, classes",
    [
        # Ids and names: the names name the classes.
        ("filename,label,class_name\na.png,1,dog\nb.png,0,cat\nc.png,1,dog\n",
         {"a.png": (1, "dog"), "b.png": (0, "cat"), "c.png": (1, "dog")}),
        # The label alone, as names: ids by the names' sorted order.
        ("filename,label\na.png,flower\nb.png,china\nc.png,flower\n",
         {"a.png": (1, "flower"), "b.png": (0, "china"), "c.png": (1, "flower")}),
        # The label alone, as ids: each id names its class.
        ("filename,label\na.png,7\nb.png,3\n", {"a.png": (7, "7"), "b.png": (3, "3")}),
    ],
)  # fmt: skip
def test_a_labels_file_names_classes_with_or_without_class_names(tmp_path, labels, classes):
    from tfrecord_pipelines.components.data_source import image_folder

    (tmp_path / "labels.csv").write_text(labels)
    assert data_source.open_source(str(tmp_path)).format == "images"
    listing = image_folder.list_folder(str(tmp_path))
    found = {f.path.rsplit("/", 1)[1]: (f.label, f.class_name) for f in listing.files}
    assert found == classes
    assert image_folder.class_names(str(tmp_path)) == sorted({n for _, n in classes.values()})


def test_an_image_records_class_id_key_leaves_the_class_name_alone():
    from tfrecord_pipelines.components.data_source import image_folder

    assert image_folder.class_id_key(None) == "label"
    # The class by name is what a pipeline's model learns; every record holds it.
    assert image_folder.class_id_key("class_name") == "label"
    assert image_folder.class_id_key("target") == "target"
    with pytest.raises(ValueError, match="Label key 'filename' is taken"):
        image_folder.class_id_key("filename")


def test_a_regression_labels_bad_values_are_held_to_the_runs_quarantine_limit(tmp_path):
    from tfrecord_pipelines.components.data_source.label_values import check_label_serves

    rows = [f"{i % 7},{10 + i % 5}" for i in range(200)]
    rows[10] = rows[20] = rows[30] = "3,n/a"  # 1.5% of the labels are not numbers
    _csv(tmp_path / "prices", text="rooms,price\n" + "\n".join(rows) + "\n")
    source = data_source.open_source(str(tmp_path / "prices"))
    found = check_label_serves(source, "price", "regression", max_bad_fraction=0.02)
    assert (found.rows, found.non_numeric) == (200, 3)
    with pytest.raises(ValueError, match=r"3 of 200 values .* more than the 1\.00% ExampleGen"):
        check_label_serves(source, "price", "regression", max_bad_fraction=0.01)
