"""Contract test of ``submit --schedule`` against the fake KFP API server's recurring-run checks.

The fake (fake_kfp_api.py) checks a recurring run as KFP's API server does:
its name, a max concurrency of 1 to 10, a cron that robfig/cron v1 parses,
the pipeline (inline or an uploaded version) and its parameters.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from fake_kfp_api import API, FakeKfpApi, parse_robfig_cron
from tfrecord_pipelines.components.spans import parse_span, span_of_date
from tfrecord_pipelines.kubeflow import submit
from tfrecord_pipelines.kubeflow.schedule import SCHEDULED_DAY, check_cron

ROOT = "gs://bucket/root"


def _compile(root: Path, folder: str, names: list[str]) -> Path:
    for name in names:
        (root / "events" / name).mkdir(parents=True)
        (root / "events" / name / "rows.csv").write_text("x,label\n1,0\n2,1\n")
    package = root / "events.yaml"
    result = run_cli(
        "compile", "--data", f"{root}/events/{folder}/", "--label", "label",
        "--output", str(package), "--serving-dir", "gs://bucket/serving",
        "--volume", f"events:{root}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return package


@pytest.fixture(scope="module")
def dated_package(tmp_path_factory) -> Path:
    return _compile(tmp_path_factory.mktemp("dated"), "{YYYY}-{MM}-{DD}", ["2026-11-25"])


def test_a_schedule_creates_a_recurring_run_whose_runs_convert_the_day_before(dated_package, serve):
    api = FakeKfpApi()
    url = serve(api)
    result = run_cli(
        "submit", f"--package={dated_package}", f"--host={url}", f"--pipeline-root={ROOT}",
        "--schedule", "0 30 1 * * *",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert api.rejections == []
    assert api.routes()[-1] == f"POST {API}/recurringruns"
    (recurring,) = api.recurring_runs
    assert recurring["trigger"]["cron_schedule"]["cron"] == "0 30 1 * * *"
    assert recurring["runtime_config"] == {
        "parameters": {"span": f"{SCHEDULED_DAY}-1d"},
        "pipeline_root": ROOT,
    }
    assert recurring["display_name"] == "events on 0 30 1 * * *"
    assert int(recurring["max_concurrency"]) == 1 and recurring["mode"] == "ENABLE"
    assert f"{url}/#/recurringrun/details/{recurring['recurring_run_id']}" in result.stdout
    assert f"each run gets: span={SCHEDULED_DAY}-1d" in result.stdout


def test_the_scheduled_value_names_the_day_that_ended_before_the_run():
    # KFP's scheduler formats [[ScheduledTime.2006-01-02]] with the run's scheduled time.
    scheduled = datetime.datetime(2026, 11, 26, 1, 30)
    value = f"{SCHEDULED_DAY}-1d".replace(SCHEDULED_DAY, f"{scheduled:%Y-%m-%d}")
    assert parse_span(value) == span_of_date(datetime.date(2026, 11, 25))


def test_an_uploaded_version_is_scheduled_by_reference(dated_package, serve):
    api = FakeKfpApi()
    url = serve(api)
    scheduled = submit.schedule_runs(
        str(dated_package),
        connection=submit.KfpConnection(host=url),
        schedule="@daily",
        pipeline_root=ROOT,
        upload=True,
    )
    assert api.rejections == []
    (recurring,) = api.recurring_runs
    (version,) = api.versions.values()
    assert (
        recurring["pipeline_version_reference"]["pipeline_version_id"]
        == (version["pipeline_version_id"])
    )
    assert scheduled.schedule == "@daily" and scheduled.pipeline_version_url


def test_a_five_field_cron_is_refused_before_anything_is_compiled(serve, tmp_path):
    api = FakeKfpApi()
    url = serve(api)
    result = run_cli(
        "submit", f"--host={url}", "--data", f"{tmp_path}/never-read/day-{{SPAN}}/",
        "--label", "label", "--schedule", "0 2 * * *",
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: Schedule '0 2 * * *' has 5 fields; KFP's cron has 6, seconds first, and would "
        "read this one as seconds to months: write '0 0 2 * * *' for the standard cron's meaning."
    )
    assert api.calls == []


def test_the_server_refuses_a_cron_robfig_cannot_parse(dated_package, serve):
    api = FakeKfpApi()
    url = serve(api)
    with pytest.raises(submit.SubmitError) as refused:
        submit.schedule_runs(
            str(dated_package), connection=submit.KfpConnection(host=url), schedule="0 30 25 * * *"
        )
    assert str(refused.value) == (
        f"creating recurring run 'events on 0 30 25 * * *' failed at {url}: HTTP 400 Bad "
        "Request: Schedule cron is not a supported format(https://godoc.org/github.com/robfig/"
        "cron). Error: End of range (25) above maximum (23): 25"
    )
    assert api.recurring_runs == []


@pytest.mark.parametrize(
    "cron, error",
    [
        ("0 30 1 * * *", None),
        ("0 2 * * *", None),  # accepted: seconds to months
        ("@daily", None),
        ("@every 6h30m", None),
        ("0 0 9 * * mon-fri", None),
        ("0 61 * * * *", "End of range (61) above maximum (59): 61"),
        ("0 0 * * *  * *", "Expected 5 to 6 fields, found 7: 0 0 * * *  * *"),
        ("@sometimes", "Unrecognized descriptor: @sometimes"),
        ("0 */0 * * * *", "Step of range should be a positive number: */0"),
    ],
)
def test_the_fake_parses_cron_as_robfig_v1_does(cron, error):
    if error is None:
        parse_robfig_cron(cron)
    else:
        with pytest.raises(ValueError) as refused:
            parse_robfig_cron(cron)
        assert str(refused.value) == error


def test_the_schedule_check_says_how_to_write_kfps_cron():
    assert check_cron(" 0  30 1 * * * ") == "0 30 1 * * *"
    with pytest.raises(ValueError, match="has 4 fields; KFP's cron has 6"):
        check_cron("0 1 * *")
    with pytest.raises(ValueError, match="'@every DURATION'"):
        check_cron("@often")


def test_the_daily_pipeline_is_scheduled_with_its_window_and_state(tmp_path, serve):
    for day in ("2026-11-24", "2026-11-25"):
        (tmp_path / "events" / day).mkdir(parents=True)
        (tmp_path / "events" / day / "rows.csv").write_text("x,label\n1,0\n2,1\n")
    api = FakeKfpApi()
    url = serve(api)
    result = run_cli(
        "submit", "--data", f"{tmp_path}/events/{{YYYY}}-{{MM}}-{{DD}}/", "--label", "label",
        "--window", "7", "--serving-dir", "gs://bucket/serving", "--state-dir", "gs://bucket/state",
        f"--host={url}", f"--pipeline-root={ROOT}", "--schedule", "0 30 1 * * *",
        "--output", str(tmp_path / "daily.yaml"), "--volume", f"events:{tmp_path}",
    )  # fmt: skip
    # The server's own checks of the spec (its Argo compiler's: no Resolver executor, task
    # names, component references) pass, and each run gets its day.
    assert result.returncode == 0, result.stderr
    assert api.rejections == []
    (recurring,) = api.recurring_runs
    assert recurring["runtime_config"]["parameters"] == {"span": f"{SCHEDULED_DAY}-1d"}
    spec = next(yaml.safe_load_all((tmp_path / "daily.yaml").read_text()))
    tasks = spec["root"]["dag"]["tasks"]
    assert {"SpanWindow", "RecordRun", "DriftCheck"} <= set(tasks)
    window = tasks["SpanWindow"]["inputs"]["parameters"]
    assert window["state_dir"]["runtimeValue"]["constant"] == "gs://bucket/state"
    assert window["num_spans"]["runtimeValue"]["constant"] == 7
