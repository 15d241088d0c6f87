"""Bad arguments get one line on stderr and a non-zero exit, never a traceback."""

import pytest

from tfrecord_pipelines.cli.main import main


def _error_of(capsys, argv) -> tuple[int, str]:
    status = main(argv)
    err = capsys.readouterr().err.strip()
    return status, err


def _assert_one_line(err: str):
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err


def test_missing_data_folder(capsys, tmp_path):
    status, err = _error_of(capsys, ["run", "--data", str(tmp_path / "nope"), "--label", "y"])
    assert status == 2
    assert err == (
        f"error: Data path {tmp_path / 'nope'} does not exist (give a file, a glob or a folder)."
    )


def test_folder_without_known_data(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    status, err = _error_of(capsys, ["run", "--data", str(tmp_path), "--label", "y"])
    assert status == 2
    assert "holds no data in a layout this project reads" in err
    _assert_one_line(err)


def test_format_that_the_folder_does_not_hold(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    status, err = _error_of(
        capsys, ["run", "--data", str(tmp_path), "--format", "parquet", "--label", "a"]
    )
    assert status == 2
    assert err == f"error: Data folder {tmp_path} holds no parquet file."


def test_label_not_in_csv(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("a,b,c\n1,2,x\n")
    status, err = _error_of(capsys, ["compile", "--data", str(tmp_path), "--label", "price"])
    assert status == 2
    assert "Label column 'price' is not in the CSV header" in err
    assert "columns are: a, b, c" in err
    _assert_one_line(err)


def test_csv_files_with_different_headers(capsys, tmp_path):
    (tmp_path / "1.csv").write_text("a,b\n1,2\n")
    (tmp_path / "2.csv").write_text("a,c\n1,2\n")
    status, err = _error_of(capsys, ["run", "--data", str(tmp_path), "--label", "a"])
    assert status == 2
    assert "all input files need the same header" in err


def test_data_without_label(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    status, err = _error_of(capsys, ["run", "--data", str(tmp_path)])
    assert status == 2
    assert err == "error: --label is required with --data: name the column to predict."


def test_unwritable_output(capsys, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    status, err = _error_of(capsys, ["run", "--output", str(blocker / "out")])
    assert status == 2
    assert err == f"error: Output folder {blocker / 'out'} is not writable: Not a directory."


def test_schema_without_the_label(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("island,sex\nDream,male\n")
    schema = tmp_path / "schema.pbtxt"
    schema.write_text('feature { name: "island" type: BYTES }\n')
    status, err = _error_of(
        capsys, ["run", "--data", str(tmp_path), "--label", "sex", "--schema", str(schema)]
    )
    assert status == 2
    assert err == (
        f"error: Label column 'sex' is not a feature of schema {schema}; features are: island."
    )


def test_missing_schema_file(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("island,sex\nDream,male\n")
    missing = tmp_path / "none.pbtxt"
    status, err = _error_of(
        capsys, ["run", "--data", str(tmp_path), "--label", "sex", "--schema", str(missing)]
    )
    assert status == 2
    assert err == f"error: Schema file {missing} does not exist."


def _image_folder(root):
    for name in ("cat", "dog"):
        (root / name).mkdir(parents=True)
        (root / name / "a.png").write_bytes(b"")
    return root


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--problem", "regression"], "Image data trains a classifier"),
        (["--inputs", "image,class_name"], "--inputs class_name: the class name is the label"),
        (["--inputs", "image,label"], "--inputs label: the class name is the label, its id"),
        (
            ["--label", "label"],
            "--label label: an image folder's label is its class, named by "
            "its folder or labels.csv (the records' class_name); leave --label out.",
        ),
        (["--augment", "rotate"], "image_augment takes crop and flip, got rotate."),
        (["--image-size", "16"], "image_size must be at least 32 pixels, got 16."),
    ],
)
def test_bad_image_options(capsys, tmp_path, extra, message):
    data = _image_folder(tmp_path / "pets")
    status, err = _error_of(capsys, ["compile", "--data", str(data), *extra])
    assert status == 2
    assert message in err
    _assert_one_line(err)


def test_image_options_for_tabular_data(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    status, err = _error_of(
        capsys, ["run", "--data", str(tmp_path), "--label", "a", "--image-size", "64"]
    )
    assert status == 2
    assert err == "error: --image-size: only for image data."


def test_inputs_that_are_not_columns(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("a,b,c\n1,2,3\n")
    status, err = _error_of(
        capsys, ["run", "--data", str(tmp_path), "--label", "a", "--inputs", "b,z"]
    )
    assert status == 2
    assert err == f"error: --inputs z: not a column of {tmp_path}; columns are: a, b, c."


@pytest.mark.parametrize(
    "source, message",
    [
        ("def trainer_fn(args):\n    pass\n", "defines neither preprocessing_fn nor run_fn"),
        ("def run_fn(fn_args)\n    pass\n", "does not import: SyntaxError: expected ':'"),
        ("import no_such_package\n", "does not import: ModuleNotFoundError: No module named"),
    ],
    ids=["no-entry-point", "syntax-error", "import-error"],
)
def test_bad_module_file(capsys, tmp_path, source, message):
    module = tmp_path / "my_module.py"
    module.write_text(source)
    status, err = _error_of(capsys, ["run", "--module-file", str(module)])
    assert status == 2
    assert err.startswith(f"error: Module file {module} ")
    assert message in err
    _assert_one_line(err)


def test_missing_module_file(capsys, tmp_path):
    status, err = _error_of(capsys, ["run", "--module-file", str(tmp_path / "none.py")])
    assert status == 2
    assert err == f"error: Module file {tmp_path / 'none.py'} does not exist."


def test_unknown_problem_is_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--problem", "ranking"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'ranking'" in capsys.readouterr().err


def test_train_steps_and_epochs_are_exclusive(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--train-steps", "100", "--epochs", "2"])
    assert exit_info.value.code == 2
    assert "argument --epochs: not allowed with argument --train-steps" in capsys.readouterr().err


def test_epochs_with_a_module_files_run_fn(capsys, tmp_path):
    module = tmp_path / "my_trainer.py"
    module.write_text("def run_fn(fn_args):\n    pass\n")
    status, err = _error_of(capsys, ["run", "--module-file", str(module), "--epochs", "2"])
    assert status == 2
    assert err == (
        f"error: epochs needs the built-in run_fn; {module}'s run_fn is told "
        "fn_args.train_steps: give train_steps instead."
    )


def test_slice_by_a_column_the_data_does_not_have(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("a,b,c\n1,2,x\n3,4,y\n")
    status, err = _error_of(
        capsys, ["compile", "--data", str(tmp_path), "--label", "c", "--slice-by", "region"]
    )
    assert status == 2
    assert err == f"error: --slice-by region: not a feature of {tmp_path}; features are: a, b, c."


def test_slice_by_a_column_the_curated_schema_leaves_out(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("a,b,c\n1,2,x\n3,4,y\n")
    schema = tmp_path / "schema.pbtxt"
    schema.write_text('feature { name: "a" type: INT }\nfeature { name: "c" type: BYTES }\n')
    status, err = _error_of(
        capsys,
        ["compile", "--data", str(tmp_path), "--label", "c", "--schema", str(schema),
         "--slice-by", "b"],
    )  # fmt: skip
    assert status == 2
    assert err == (
        f"error: Slice feature 'b' is not a feature of schema {schema}; features are: a, c."
    )


def test_positive_class_with_a_module_files_own_label(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("a,c\n1,x\n3,y\n")
    module = tmp_path / "mine.py"
    module.write_text("def preprocessing_fn(inputs):\n    return inputs\n")
    status, err = _error_of(
        capsys,
        ["compile", "--data", str(tmp_path), "--label", "c", "--module-file", str(module),
         "--positive-class", "y"],
    )  # fmt: skip
    assert status == 2
    assert err == (
        f"error: --positive-class y: the preprocessing_fn of {module} makes the label, so the "
        "Evaluator cannot find a class's id in it; leave --positive-class out."
    )


@pytest.mark.parametrize(
    "labels, message",
    [
        ("filename,label,class_name\na.png,0,cat\nb.png,0,dog\n",
         ": label 0 is named both 'cat' and 'dog'; each label needs one class name."),
        ("filename,label,class_name\na.png,0,cat\nb.png,1,cat\n",
         ": class 'cat' has the labels 0 and 1; each class needs one label."),
        ("filename,label,class_name\na.png,cat,cat\n",
         ", line 2: label 'cat' is not an integer id; with a class_name column the label is the "
         "class's id (or drop class_name and give the class's name as the label)."),
        ("filename,label\na.png,cat\nb.png,\n", ", line 3: b.png has no label."),
    ],
)  # fmt: skip
def test_labels_files_that_name_classes_two_ways(capsys, tmp_path, labels, message):
    (tmp_path / "labels.csv").write_text(labels)
    status, err = _error_of(capsys, ["compile", "--data", str(tmp_path)])
    assert status == 2
    assert err == f"error: Labels file {tmp_path / 'labels.csv'}{message}"


def test_convert_eval_rows_must_be_positive(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    status, err = _error_of(
        capsys, ["convert", str(tmp_path), str(tmp_path / "out"), "--eval-rows", "0"]
    )
    assert status == 2
    assert err == "error: --eval-rows must be at least 1, got 0."


@pytest.mark.parametrize(
    "rows, extra, message",
    [
        (["no", "yes"], ["--positive-class", "maybe"],
         "--positive-class 'maybe' is not a value of 'y'; it has 'no' and 'yes'."),
        (["a", "b", "c"], ["--positive-class", "a"],
         "--positive-class is for a label of two classes; 'y' has 3 classes."),
        (["1.5", "2.5"], ["--problem", "regression", "--min-auc", "0.8"],
         "--min-auc 0.8: 'y' is a regression label and its model has no such metric; "
         "a regression model is blessed by --max-mae."),
        (["1.5", "2.5"], ["--problem", "regression", "--min-accuracy", "0.9"],
         "--min-accuracy 0.9: 'y' is a regression label and its model has no such metric; "
         "a regression model is blessed by --max-mae."),
        (["no", "yes"], ["--max-mae", "3"],
         "--max-mae 3.0: 'y' is a classification label and its model has no such metric; "
         "a classification model is blessed by --min-accuracy and --min-auc."),
        # Classes are named as the model names them: a float label's 1.0 is its class "1",
        # and a text label keeps its spaces.
        (["1.0", "0.0"], ["--positive-class", "1.0"],
         "--positive-class '1.0' is not a value of 'y'; it has '0' and '1'."),
        ([" yes", "no "], ["--positive-class", "yes"],
         "--positive-class 'yes' is not a value of 'y'; it has ' yes' and 'no '."),
        (["no", "yes"], ["--max-regression", "-0.01"],
         "--max-regression -0.01: the loss allowed is 0 or more."),
        (["no", "yes"], ["--shard-size", "8MiB", "--num-shards", "3"],
         "--shard-size and --num-shards: Set a target shard size or a shard count, not both: "
         "the count would ignore the size."),
    ],
)  # fmt: skip
def test_bad_evaluation_and_shard_options(capsys, tmp_path, rows, extra, message):
    (tmp_path / "d.csv").write_text("x,y\n" + "".join(f"{i},{v}\n" for i, v in enumerate(rows)))
    status, err = _error_of(
        capsys, ["run", "--data", str(tmp_path), "--label", "y", "--output", str(tmp_path), *extra]
    )
    assert status == 2
    assert err == f"error: {message}"


@pytest.mark.parametrize("flag, value", [("--span", "3"), ("--window", "3")])
def test_a_span_setting_on_data_in_no_spans(capsys, tmp_path, flag, value):
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    status, err = _error_of(capsys, ["run", "--data", str(tmp_path), "--label", "a", flag, value])
    assert status == 2
    assert err == (
        f"error: {flag[2:]} {value}: {tmp_path} names no spans; name its span folders with "
        "{SPAN} or {YYYY}-{MM}-{DD}, e.g. 'events/day-{SPAN}/'."
    )
