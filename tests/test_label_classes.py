"""The classes `run` names before training: the label's values as the model's vocabulary will
hold them, for every label type a table can give, so that the Evaluator finds the positive
class after training."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tfrecord_pipelines.cli.main import build_parser
from tfrecord_pipelines.cli.task_arguments import config_from_args


def _config(data, *extra: str):
    args = build_parser().parse_args(["compile", "--data", str(data), *extra])
    return config_from_args(args)


@pytest.mark.parametrize(
    "values, positive",
    [
        ([True, False] * 5, "1"),  # ExampleGen stores booleans as the integers 0 and 1
        ([1.0, 0.0] * 5, "1"),  # a float's 1.0 is the model's class "1"
        ([2.5, 0.5] * 5, "2.5"),
        ([7, 3] * 5, "7"),
        (["yes", "no"] * 5, "yes"),
    ],
)
def test_parquet_labels_of_every_type_name_their_classes(tmp_path, values, positive):
    pq.write_table(pa.table({"x": list(range(len(values))), "y": values}), tmp_path / "d.parquet")
    config = _config(tmp_path, "--label", "y")
    assert config.evaluation.num_classes == 2
    assert config.evaluation.positive_class == positive


@pytest.mark.parametrize(
    "column, positive",
    [(["0.0", "1.0"], "1"), (["0", "1"], "1"), (["no ", " yes"], "no ")],
)
def test_csv_labels_name_their_classes_as_their_inferred_type(tmp_path, column, positive):
    rows = "".join(f"{i},{column[i % 2]}\n" for i in range(10))
    (tmp_path / "d.csv").write_text("x,y\n" + rows)
    assert _config(tmp_path, "--label", "y").evaluation.positive_class == positive


def test_a_curated_schema_types_the_label(tmp_path):
    (tmp_path / "d.csv").write_text("x,y\n" + "".join(f"{i},{i % 2}\n" for i in range(10)))
    schema = tmp_path / "schema.pbtxt"
    schema.write_text('feature { name: "x" type: INT }\nfeature { name: "y" type: FLOAT }\n')
    config = _config(tmp_path, "--label", "y", "--schema", str(schema))
    assert config.evaluation.positive_class == "1"


def test_an_image_labels_file_names_its_classes(tmp_path):
    (tmp_path / "labels.csv").write_text("filename,label\na.png,flower\nb.png,china\n")
    config = _config(tmp_path)
    assert config.task.label == "class_name"
    assert config.evaluation.positive_class == "flower"
