"""Three days of the compiled daily pipeline (``compile --window 2``) in the component image,
against a GCS server, and the same three days run locally.

fake-gcs-server (``object_store_servers``) on 127.0.0.1 holds the data
(``gs://events/day-{SPAN}/``), the daily state (``gs://models/state``) and the
serving folders; ``STORAGE_EMULATOR_HOST`` alone points everything at it.
kfp.local's DockerRunner runs each day's DAG in the image
(``kfp_local_runs``), as a recurring run would, one after the other, into one
local pipeline root (kfp.local mounts the pipeline root; it has no object
store of its own). The window and its statistics, the drift check's previous
span, the warm start's model and the analyzer cache come from the daily state, which
SpanWindow and RecordRun keep in place of TFX's Resolvers. The local runs of
the same days, reading the same bucket, pick them from ML Metadata; both must
agree.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from kfp_local_runs import TaskRecord, run_compiled_pipeline
from object_store_servers import gcs_server
from tfx.types.artifact import Artifact

from component_image import chown_for_the_image
from conftest import run_cli, run_summary
from daily_spans import SHIFTED_DAY, page_window_and_drift, write_day
from tfrecord_pipelines.components.spans.artifacts import span_of

pytestmark = [pytest.mark.e2e, pytest.mark.image]

DAYS = (1, 2, 3)
# After the three days, day 2 again: kfp's key for the re-run.
RERUN = "day 2 again"
WINDOW = 2
# Rows per day: enough for day 3's drift to be measured as on 2,000 rows (test_span_window).
ROWS = 2_000
_SETTINGS = ("--data", "gs://events/day-{SPAN}/", "--label", "label", "--window", str(WINDOW))
_SETTINGS += ("--train-steps", "20", "--min-accuracy", "0")


def _objects(url: str, bucket: str, prefix: str) -> list[str]:
    """The names of the bucket's objects under ``prefix``, from the server's JSON API."""
    query = urllib.parse.urlencode({"prefix": prefix})
    with urllib.request.urlopen(f"{url}/storage/v1/b/{bucket}/o?{query}") as response:
        return sorted(item["name"] for item in json.load(response).get("items", []))


def _members(record: TaskRecord, name: str) -> list[dict]:
    """The artifacts an input of the task stood for (SpanWindow's outputs), as recorded."""
    [reference] = record.executor_input.inputs.artifacts[name].artifacts
    return json.loads(reference.metadata.fields["members"].string_value)


def _span_of(member: dict) -> int:
    return span_of(Artifact.from_json_dict(member))


def _output_metadata(record: TaskRecord, name: str) -> tuple[str, dict]:
    output = json.loads(record.executor_output_text)
    [artifact] = output["artifacts"][name]["artifacts"]
    return artifact["uri"], artifact.get("metadata", {})


@pytest.fixture(scope="module")
def days(tmp_path_factory, component_image, docker_api):
    """The three days run locally into one output folder, then compiled and run by kfp.local
    into one pipeline root, all against one GCS server; returns each day's local printout
    and summary, each day's KFP task records and the server's URL."""
    buckets = tmp_path_factory.mktemp("buckets")
    for day in DAYS:
        write_day(buckets / "events" / f"day-{day}", seed=day, rows=ROWS)
    (buckets / "models").mkdir()
    (buckets / "models" / "README").write_text("serving folders and the daily state\n")
    root = tmp_path_factory.mktemp("kfp_daily") / "pipeline_root"
    root.mkdir()
    chown_for_the_image(root)
    with gcs_server(buckets) as url:
        server = {"STORAGE_EMULATOR_HOST": url}
        local_output = root.parent / "local"
        local = {}
        for day in DAYS:
            ran = run_cli(
                "run", *_SETTINGS, "--span", str(day), "--output", str(local_output), env=server,
            )  # fmt: skip
            assert ran.returncode == 0, ran.stderr[-3000:]
            local[day] = (ran.stdout, run_summary(local_output, "events", ran.stdout))
        package = root.parent / "daily.yaml"
        compiled = run_cli(
            "compile", *_SETTINGS,
            "--serving-dir", "gs://models/serving", "--state-dir", "gs://models/state",
            "--image", component_image, "--gpus", "0", "--output", str(package), env=server,
        )  # fmt: skip
        assert compiled.returncode == 0, compiled.stderr[-3000:]
        kfp = {
            day: run_compiled_pipeline(package, root, {"span": str(day)}, environment=server)
            for day in DAYS
        }
        kfp[RERUN] = run_compiled_pipeline(package, root, {"span": "2"}, environment=server)
        yield local, kfp, url


def test_each_day_converts_its_own_span_and_reads_a_window_of_two(days):
    local, kfp, _ = days
    for day in DAYS:
        _, metadata = _output_metadata(kfp[day]["ShardedExampleGen"], "examples")
        plan = json.loads(metadata["shard_plan"])
        assert plan["input_pattern"] == f"day-{day}/*.csv", day
        window = [_span_of(m) for m in _members(kfp[day]["Trainer"], "examples")]
        assert window == [s.span for s in local[day][1].window.spans], day
        assert window == list(range(max(1, day - WINDOW + 1), day + 1)), day


def _day_of(model_path: str | None, models: dict[int, str]) -> int | None:
    """Which day's model ``model_path`` is (or is inside), or None."""
    if model_path is None:
        return None
    return next(day for day, folder in models.items() if model_path.startswith(folder))


def _kfp_blessed(kfp: dict) -> dict:
    """Whether each KFP run's Evaluator blessed its model, by day."""
    return {
        day: _output_metadata(records["Evaluator"], "blessing")[1].get("blessed") == 1
        for day, records in kfp.items()
    }


def _newest_blessed_before(blessed: dict, day: int) -> int | None:
    return max((d for d in DAYS if d < day and blessed[d]), default=None)


def test_each_day_warm_starts_from_the_model_a_local_run_picks(days):
    local, kfp, _ = days
    kfp_models = {day: _output_metadata(kfp[day]["Trainer"], "model")[0] for day in DAYS}
    local_models = {day: local[day][1].model for day in DAYS}
    kfp_blessed = _kfp_blessed(kfp)
    local_blessed = {day: local[day][1].blessed for day in DAYS}
    bases = {}
    for day in DAYS:
        kfp_base = [m["artifact"]["uri"] for m in _members(kfp[day]["Trainer"], "base_model")]
        warm_start = local[day][1].warm_start or {}
        local_base = warm_start.get("base_model") if warm_start.get("warm_started") else None
        bases[day] = (
            _day_of(kfp_base[0] if kfp_base else None, kfp_models),
            _day_of(local_base, local_models),
        )
        # One rule on both sides: the newest model of an earlier day its Evaluator blessed.
        # Whether a model did at least as well as the last blessed one is each side's own
        # Evaluator's call, on models trained apart, so the two may differ on a close call.
        assert bases[day] == (
            _newest_blessed_before(kfp_blessed, day),
            _newest_blessed_before(local_blessed, day),
        ), (day, kfp_blessed, local_blessed)
    # Day 1's model is blessed on both (no baseline yet, no accuracy floor): day 2 starts
    # from it on both, and day 1 from scratch.
    assert bases[1] == (None, None) and bases[2] == (1, 1)
    for day, base in ((1, None), (2, 1)):
        model_run, _ = _output_metadata(kfp[day]["Trainer"], "model_run")
        report = json.loads((Path(model_run) / "warm_start.json").read_text())
        assert report["warm_started"] == (base is not None), report
        assert _day_of(report["base_model"], kfp_models) == base, report


def test_day_3s_drift_is_flagged_and_its_model_not_pushed_as_locally(days):
    local, kfp, _ = days
    kfp_blessed = _kfp_blessed(kfp)
    for day in DAYS:
        _, drift = _output_metadata(kfp[day]["DriftCheck"], "anomalies")
        previous = _members(kfp[day]["DriftCheck"], "previous_statistics")
        assert [_span_of(m) for m in previous] == ([day - 1] if day > 1 else []), day
        local_drift = local[day][1].drift
        local_drifted = (
            sorted(n for n, r in local_drift[1].items() if r["drifted"]) if local_drift else []
        )
        assert sorted(filter(None, drift.get("drifted", "").split(","))) == local_drifted, day
        drifted = day == SHIFTED_DAY
        assert bool(local[day][1].pushed_model) == (local[day][1].blessed and not drifted), day
        _, pushed = _output_metadata(kfp[day]["Pusher"], "pushed_model")
        assert pushed.get("pushed") == int(kfp_blessed[day] and not drifted), (day, pushed)
    _, drift = _output_metadata(kfp[SHIFTED_DAY]["DriftCheck"], "anomalies")
    assert drift["drifted"], drift


def test_the_bucket_holds_the_daily_state_and_the_pushed_models(days):
    _, kfp, url = days
    state = _objects(url, "models", "state/")
    conversions = [name for name in state if name.startswith("state/conversions/")]
    assert [name.split("/")[2] for name in conversions] == [f"span-{d:08d}" for d in DAYS]
    # A run each: the three days and day 2's re-run, whose model is a new one.
    assert len([name for name in state if name.startswith("state/runs/")]) == len(DAYS) + 1
    # A version per push (day 3 drifted: never pushed), and no staged copy left behind.
    pushes = sum(
        _output_metadata(records["Pusher"], "pushed_model")[1].get("pushed") == 1
        for records in kfp.values()
    )
    assert pushes >= 1
    versions = {name.split("/")[1] for name in _objects(url, "models", "serving/")}
    assert len(versions) == pushes, versions
    assert all(version.isdigit() for version in versions), versions


def test_the_reporters_page_shows_the_window_and_the_drift(days):
    _, kfp, _ = days
    page, _ = _output_metadata(kfp[SHIFTED_DAY]["Reporter"], "report")
    report = Path(page).read_text()
    rows, drifted = page_window_and_drift(report)
    assert [span for span, _ in rows] == ["2", "3"]
    # Transform's analysis from SpanWindow's statistics of each span: no record read.
    assert "an earlier run" in rows[0][1] and "statistics" in rows[0][1]
    assert "this run" in rows[1][1] and "statistics" in rows[1][1]
    assert sorted(drifted) == ["colour", "x"]
    assert "held back, the span drifted (colour,x)" in report


def test_a_rerun_of_a_day_reuses_its_conversion_and_starts_from_the_same_model(days):
    _, kfp, _ = days
    first, again = kfp[2], kfp[RERUN]
    day_2_examples, _ = _output_metadata(first["ShardedExampleGen"], "examples")
    _, reused = _output_metadata(again["ShardedExampleGen"], "examples")
    assert [m["artifact"]["uri"] for m in json.loads(reused["members"])] == [day_2_examples]
    assert "converted by an earlier run: reusing" in again["ShardedExampleGen"].logs
    window = [m["artifact"]["uri"] for m in _members(again["Trainer"], "examples")]
    assert window == [m["artifact"]["uri"] for m in _members(first["Trainer"], "examples")]
    # Its base model is day 1's, as on day 2's first run: not day 2's own, which is newer.
    base = [m["artifact"]["uri"] for m in _members(again["Trainer"], "base_model")]
    assert base == [m["artifact"]["uri"] for m in _members(first["Trainer"], "base_model")]
