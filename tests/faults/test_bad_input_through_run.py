"""Bad input through ``run``: quarantined as by ``convert``, reported; bad labels stop early."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, run_cli, run_summary
from example_data import PLANTED_BAD_ROWS, write_csv
from running_pipeline import FAST, run

pytestmark = pytest.mark.faults


def test_run_quarantines_what_convert_quarantines_and_says_where(tmp_path):
    data = write_csv(tmp_path / "rows", rows=600)
    converted = run_cli("convert", str(data), str(tmp_path / "shards"), "--label", "label")
    assert converted.returncode == 0, converted.stderr[-3000:]
    report = json.loads((tmp_path / "shards" / "shard_plan.json").read_text())
    assert report["quarantined"] == len(PLANTED_BAD_ROWS)

    output = tmp_path / "out"
    status, text = run("--data", str(data), "--label", "label", "--output", str(output), *FAST)
    assert status == 0, text[-3000:]
    summary = run_summary(output, "rows", text)
    assert summary.quarantined == report["quarantined"]
    assert f"quarantined:   {len(PLANTED_BAD_ROWS)} input records ({summary.quarantine})" in text
    reasons = [
        json.loads(line)["reason"]
        for path in sorted(p for p in (tmp_path / "out").rglob("quarantine*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    assert sorted(r.split(":")[0] for r in reasons) == sorted(
        reason.split(":")[0] for _, reason in PLANTED_BAD_ROWS
    )


def _fails_before_tensorflow(argv: list[str]) -> tuple[str, str]:
    """Runs the CLI in a fresh interpreter; returns its stdout and stderr."""
    probe = (
        "import sys\n"
        "from tfrecord_pipelines.cli.main import main\n"
        f"status = main({argv!r})\n"
        "print(status, 'tensorflow' in sys.modules, 'tfx' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    return result.stdout.strip(), result.stderr.strip()


def test_regression_on_a_string_label_fails_in_one_line_before_any_slow_work(tmp_path):
    out, err = _fails_before_tensorflow(
        ["run", "--problem", "regression", "--output", str(tmp_path / "out")]
    )
    assert out == "2 False False"
    assert err == (
        f"error: Label column 'species' of {REPO_ROOT / 'data' / 'penguins'} is not numeric "
        "(344 of 344 values are not numbers, e.g. 'Adelie'; more than the 1.00% ExampleGen may "
        "quarantine); regression needs a number: use --problem classification or another label."
    )


def test_classification_label_with_one_class_fails_in_one_line(tmp_path):
    data = tmp_path / "one-class"
    data.mkdir()
    rows = "".join(f"{i},{i * 0.5},yes\n" for i in range(50))
    (data / "d.csv").write_text("id,size,answer\n" + rows)
    out, err = _fails_before_tensorflow(
        ["run", "--data", str(data), "--label", "answer", "--output", str(tmp_path / "out")]
    )
    assert out == "2 False False"
    assert err == (
        f"error: Label column 'answer' of {data} holds one class ('yes' in all 50 rows); "
        "a classifier needs at least two."
    )


def test_regression_label_with_one_bad_value_in_400_passes_the_label_check(tmp_path):
    data = tmp_path / "prices"
    data.mkdir()
    rows = [f"{i % 7},{10 + 3 * (i % 7) + (i % 3) * 0.1}" for i in range(400)]
    rows[100] = "3,n/a"
    (data / "d.csv").write_text("rooms,price\n" + "\n".join(rows) + "\n")
    # 1 of 400 labels is not a number: ExampleGen types the column by majority
    # (float) and quarantines that row, as it does other bad values.
    out, err = _fails_before_tensorflow(
        [
            "compile",
            "--data",
            str(data),
            "--label",
            "price",
            "--problem",
            "regression",
            "--output",
            str(tmp_path / "p.yaml"),
            "--volume",
            f"data:{tmp_path}",
        ]
    )
    assert out.splitlines()[-1].startswith("0 "), err
