"""The run report of a real pipeline run, opened in headless Chromium.

The data is the bundled penguins with rows planted that ExampleGen must
quarantine and values the curated schema does not allow, so the page has
anomalies and quarantined rows to show; what it shows is compared with the
artifacts themselves.
"""

import datetime
import itertools
import json
import re
import shutil
from pathlib import Path

import pytest
from tensorflow_metadata.proto.v0 import anomalies_pb2

from conftest import PIPELINE_COMPONENTS, REPO_ROOT, run_cli
from report_browser import load_report

pytestmark = pytest.mark.e2e

SECTIONS = ["components", "data", "quarantine", "features", "schema", "training", "evaluation"]
# Rows the converter quarantines (wrong column count, a value that is not a number)...
BAD_ROWS = [
    "Adelie,Torgersen,39.1,18.7,181",
    "Gentoo,Biscoe,47.5,14.2,217,4875,female,2008,extra",
    "Adelie,Dream,not-a-number,18.0,190,3700,male,2008",
]
# ...and rows that convert but break the curated schema (an island outside its
# domain, a body mass above its range): ExampleValidator's anomalies.
SCHEMA_BREAKING_ROWS = [
    f"Adelie,Atlantis,{38 + i},18.1,186,{3500 + 100 * i},male,2008" for i in range(6)
] + [f"Gentoo,Biscoe,{46 + i},15.0,215,9{i}00,female,2009" for i in range(6)]


@pytest.fixture(scope="module")
def penguins_with_problems(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    # The folder's name picks the curated schema (schemas/penguins).
    data = root / "penguins"
    data.mkdir()
    shutil.copy(REPO_ROOT / "data" / "penguins" / "penguins.csv", data / "penguins.csv")
    with open(data / "penguins.csv", "a") as f:
        f.write("\n".join(BAD_ROWS + SCHEMA_BREAKING_ROWS) + "\n")
    output = root / "out"
    result = run_cli(
        "run", "--data", str(data), "--label", "species", "--output", str(output),
        "--train-steps", "100", "--slice-by", "island",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return output / "pipeline_root" / "penguins", _printed_report(result.stdout)


def _printed_report(stdout: str) -> Path:
    return Path(re.search(r"^  report: +(\S+)$", stdout, re.MULTILINE).group(1))


def _only(folder: Path) -> Path:
    (path,) = folder.iterdir()
    return path


def _anomalies(root: Path) -> dict[str, anomalies_pb2.Anomalies]:
    artifact = _only(root / "ExampleValidator" / "anomalies")
    return {
        split.name: anomalies_pb2.Anomalies.FromString((split / "SchemaDiff.pb").read_bytes())
        for split in artifact.iterdir()
    }


def _quarantined(root: Path) -> list[dict]:
    artifact = _only(root / "ShardedExampleGen" / "quarantine")
    return [
        json.loads(line)
        for path in sorted(artifact.glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def test_run_prints_the_path_of_a_report_that_loads_offline(
    penguins_with_problems, chromium_endpoint
):
    _, report = penguins_with_problems
    assert report.is_file() and report.suffix == ".html"
    page = load_report(chromium_endpoint, report)
    assert page.errors == []
    # The page itself and nothing else: no script, style, font or image from anywhere.
    assert page.requests == [report.as_uri()]
    assert page.sections == SECTIONS
    assert page.screenshot.is_file()
    assert page.screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_shows_the_artifacts_counts(penguins_with_problems, chromium_endpoint):
    root, report = penguins_with_problems
    page = load_report(chromium_endpoint, report)
    anomalies = _anomalies(root)
    anomalous = {name for split in anomalies.values() for name in split.anomaly_info}
    count = sum(
        len(a.anomaly_info) + bool(a.dataset_anomaly_info.reason) for a in anomalies.values()
    )
    # The planted rows broke the schema in the way planted, and the page says so.
    assert {"island", "body_mass_g"} <= anomalous
    assert page.counts["anomaly-count"] == str(count)
    assert page.anomalous == anomalous
    quarantined = _quarantined(root)
    assert len(quarantined) == len(BAD_ROWS)
    assert page.counts["quarantine-count"] == str(len(quarantined))
    by_reason = {}
    for record in quarantined:
        kind = record["reason"].split(":", 1)[0]
        by_reason[kind] = by_reason.get(kind, 0) + 1
    assert page.reasons == by_reason


def _sections(html: str) -> dict[str, str]:
    return dict(re.findall(r'<section id="([^"]+)">(.*?)</section>', html, re.S))


def test_kubeflows_reporter_task_writes_the_commands_page_from_the_artifacts_alone(
    penguins_with_problems, tmp_path
):
    """The Reporter's executor, given this run's artifacts as a KFP task is given them
    (no ML Metadata), writes the sections the report command wrote, byte for byte,
    except the components' table, which it points to KFP's run page for."""
    from tfrecord_pipelines.components.ui_artifacts import Html, Metrics
    from tfrecord_pipelines.local.run_record import PIPELINE_RUN_CONTEXT, open_store, read_run
    from tfrecord_pipelines.report.executor import Executor
    from tfrecord_pipelines.report.run_report import report_artifacts

    root, report = penguins_with_problems
    store = open_store(str(root.parents[1] / "metadata" / "penguins" / "metadata.db"))
    [run_id] = [
        c.name
        for c in store.get_contexts_by_type(PIPELINE_RUN_CONTEXT)
        if re.sub(r"[^A-Za-z0-9._-]", "-", c.name) == report.stem
    ]
    # What a KFP task is handed: one TFX artifact per input.
    inputs = {
        key: [artifact]
        for key, artifact in report_artifacts(store, read_run(store, "penguins", run_id)).items()
    }
    page = Html()
    page.uri = str(tmp_path / "penguins-run-1" / "Reporter" / "report")
    Path(page.uri).parent.mkdir(parents=True)
    training = Metrics()
    training.uri = str(tmp_path / "penguins-run-1" / "Reporter" / "training")
    Executor().Do(
        inputs,
        {"report": [page], "training": [training]},
        {"pipeline_name": "penguins", "images": 0},
    )

    written = _sections(Path(page.uri).read_text())
    by_command = _sections(report.read_text())
    assert list(written) == list(by_command) == SECTIONS
    for section in SECTIONS[1:]:
        assert written[section] == by_command[section], section
    assert 'id="components-elsewhere"' in written["components"]
    assert "run penguins-run-1</h1>" in Path(page.uri).read_text()
    # The Trainer's last epoch as rows of KFP's scalar table, the verdict among them.
    stall = json.loads((Path(inputs["model_run"][0].uri) / "input_stall.json").read_text())
    last = stall["epochs"][-1]
    assert training.get_string_custom_property("bound by") == last["verdict"]
    assert training.get_float_custom_property("steps a call") == stall["steps_per_call"] == 200
    assert training.get_float_custom_property("host stall (% of step time)") == pytest.approx(
        100 * last["host_stall"], abs=0.01
    )
    assert training.get_float_custom_property("input stall (% of step time)") == pytest.approx(
        100 * last["input_stall"], abs=0.01
    )


def test_report_lists_every_component_with_its_state(penguins_with_problems):
    root, report = penguins_with_problems
    html = report.read_text()
    for component in PIPELINE_COMPONENTS:
        assert re.search(rf"<td>{component}</td><td class=\"state-complete\">ran</td>", html)
    # What each data component's executor cost, and its records per second; Transform,
    # whose analysis came from the statistics, read none.
    for component in ("ShardedExampleGen", "Transform", "Trainer", "Evaluator"):
        row = re.search(rf'<tr id="component-{component}">.*?</tr>', html, re.S).group(0)
        assert re.search(r'class="num cpu">\d+\.\d s<', row), row
        rate = r"" if component == "Transform" else r"[\d,]+"
        assert re.search(rf'class="num rate" title="[a-z ()]+">{rate}<', row), row
    # What the model saw: 100 steps of the automatic batch (64 for ~250 rows).
    coverage = re.search(r'<p id="coverage" class="">(.*?)</p>', html, re.S).group(1)
    assert coverage.startswith("Trained on 6,400 examples (100 steps of 64): ")
    assert "epochs of the " in coverage and "never seen" not in coverage
    # The verdict on the input and what to do about it, with the stall chart.
    assert re.search(r'id="verdict"><b class="\w+">(Input|Host|Device)-bound</b>', html)
    assert re.search(
        r"% to waiting for the host between calls \(host-bound above 10%; 200 steps a call\)", html
    )
    assert 'data-metric="input_stall"' in html and 'data-metric="host_stall"' in html
    assert 'data-metric="loss"' in html
    # One bar per shard file in the shard-size chart.
    examples = _only(root / "ShardedExampleGen" / "examples")
    plan = json.loads((examples / "shard_plan.json").read_text())
    shards = sum(len(split["shards"]) for split in plan["splits"].values())
    assert len(re.findall(r'id="shard-(?:train|eval)-\d+"', html)) == shards > 0


def test_each_component_lasts_until_the_next_starts_not_until_the_run_ends(
    penguins_with_problems,
):
    _, report = penguins_with_problems
    rows = re.findall(
        r'<tr id="component-[^"]+"><td>([^<]+)</td><td class="state-complete">ran</td>'
        r'<td>([^<]+)</td><td class="num">([\d.]+) s</td>',
        report.read_text(),
    )
    assert len(rows) >= 6
    # LocalDagRunner runs one component at a time: each ends before the next starts.
    for (name, started, seconds), (_, next_started, _) in itertools.pairwise(rows):
        ended = datetime.datetime.fromisoformat(started).timestamp() + float(seconds)
        assert ended <= datetime.datetime.fromisoformat(next_started).timestamp() + 1, name


def test_metrics_have_intervals_rows_and_slices(penguins_with_problems):
    _, report = penguins_with_problems
    html = report.read_text()
    table = re.search(r'<table id="metrics">.*?</table>', html, re.S).group(0)
    eval_rows = int(
        re.search(r'<span id="eval-rows">([\d,]+)</span>', html).group(1).replace(",", "")
    )
    accuracy = re.search(
        r"<td>sparse_categorical_accuracy</td><td class=\"num\">([\d.]+)</td>"
        r'<td class="num interval">([\d.]+) – ([\d.]+)</td><td class="num">([\d,]+)</td>',
        table,
    )
    value, low, high, rows = accuracy.groups()
    # A perfect score is possible on penguins; its interval then ends at it.
    assert float(low) < float(value) <= float(high) <= 1
    assert int(rows.replace(",", "")) == eval_rows
    # Penguins have 3 classes: AUC, precision and recall per class (named by the
    # species) and macro-averaged.
    for metric in ("auc", "precision", "recall"):
        for which in ("Adelie", "Chinstrap", "Gentoo", "macro"):
            assert f"<td>{metric} ({which})</td>" in table, (metric, which)
    slices = re.search(r'<table id="slices">.*?</table>', html, re.S).group(0)
    islands = re.findall(r"<tr><td>island</td><td>(\w+)</td><td class=\"num\">(\d+)</td>", slices)
    # The planted rows add an island the schema does not know: a slice of its own.
    assert {name for name, _ in islands} >= {"Biscoe", "Dream", "Torgersen"}
    assert sum(int(rows) for _, rows in islands) == eval_rows


def test_a_second_model_is_shown_against_the_first(penguins_with_problems):
    root, first = penguins_with_problems
    output = root.parents[1]
    first_model = _only(root / "Trainer" / "model")
    # Another number of steps: a new model, evaluated against the blessed first one.
    result = run_cli(
        "run", "--data", str(output.parent / "penguins"), "--label", "species",
        "--output", str(output), "--train-steps", "120",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    second = _printed_report(result.stdout)
    assert second != first and first.is_file()
    html = second.read_text()
    assert f'against the last blessed model <span class="path">{first_model}</span>' in html
    assert "<th>baseline</th><th>change</th>" in html
    assert "not worse than the baseline beyond the noise (higher is better; paired test)" in html
    # The paired comparison on the same eval rows, as a failure or, passed, in words.
    assert re.search(r"accuracy [\d.]+ vs [\d.]+ on the same [\d,]+ rows", html)
    assert '<td class="state-cached">cached (reused an earlier run)</td>' in html


def test_load_report_catches_network_requests_and_console_errors(tmp_path, chromium_endpoint):
    # The checks above can fail: a page that reaches out, or logs an error, is caught.
    page = tmp_path / "bad.html"
    page.write_text(
        '<html><body><section id="x"></section><img src="http://127.0.0.1:9/x.png">'
        "<script>console.error('broken')</script></body></html>"
    )
    loaded = load_report(chromium_endpoint, page)
    assert "broken" in loaded.errors
    assert "http://127.0.0.1:9/x.png" in loaded.requests


def test_a_failed_run_gets_a_report_saying_what_failed(tmp_path):
    data = tmp_path / "penguins"
    data.mkdir()
    # Far more than the 1% of bad rows a conversion accepts: ShardedExampleGen fails.
    rows = (REPO_ROOT / "data" / "penguins" / "penguins.csv").read_text().splitlines()
    planted = rows[:1] + rows[1::3] + BAD_ROWS * 10
    data.joinpath("penguins.csv").write_text("\n".join(planted) + "\n")
    result = run_cli(
        "run", "--data", str(data), "--label", "species", "--output", str(tmp_path / "out")
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: 30 of 145 input records")
    found = re.search(r"^Report of the failed run: (\S+)$", result.stderr, re.MULTILINE)
    html = Path(found.group(1)).read_text()
    assert '<td>ImportSchemaGen</td><td class="state-complete">ran</td>' in html
    assert '<td>ShardedExampleGen</td><td class="state-failed">failed</td>' in html
    assert 'id="run-failed"' in html
    for component in ("ShardedExampleGen", "Trainer", "Evaluator"):
        assert f"not produced by this run: {component} did not finish" in html
