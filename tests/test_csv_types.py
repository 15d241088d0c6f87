"""A CSV column's type by majority over the sampled rows (``csv_types``)."""

from tfrecord_pipelines.components.data_source.column_types import ColumnType
from tfrecord_pipelines.components.data_source.csv_types import infer_column_types


def _types(tmp_path, rows: list[str], columns=None) -> dict:
    path = tmp_path / "rows.csv"
    path.write_text("\n".join(rows) + "\n")
    return infer_column_types([str(path)], rows[0].split(","), columns=columns)


def test_a_type_takes_nine_values_in_ten_and_no_fewer(tmp_path):
    # 90 of 100 values: INT, FLOAT; 89 of 100: the next type down.
    rows = ["ints,floats,few_ints,few_floats,text"]
    for i in range(100):
        odd = i < 10
        rows.append(
            ",".join(
                [
                    "x" if odd else str(i),
                    "x" if odd else f"{i}.5",
                    "x" if i < 11 else str(i),
                    "x" if i < 11 else f"{i}.5",
                    f"w{i}",
                ]
            )
        )
    assert _types(tmp_path, rows) == {
        "ints": ColumnType.INT,
        "floats": ColumnType.FLOAT,
        "few_ints": ColumnType.BYTES,
        "few_floats": ColumnType.BYTES,
        "text": ColumnType.BYTES,
    }


def test_empty_cells_do_not_count_and_columns_can_be_chosen(tmp_path):
    rows = ["a,b,label", "1,,yes", "2,2.5,no", ",3.5,yes"]
    assert _types(tmp_path, rows) == {
        "a": ColumnType.INT,
        "b": ColumnType.FLOAT,
        "label": ColumnType.BYTES,
    }
    assert _types(tmp_path, rows, columns=["label"]) == {"label": ColumnType.BYTES}
