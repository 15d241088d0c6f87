"""Contract test of ``python -m tfrecord_pipelines submit`` against a fake KFP API server.

The fake (fake_kfp_api.py) answers kfp.Client's v2beta1 REST calls the way the
real API server does and records both what the client sent and what the server
would have rejected. No cluster is needed; the one slow step is the module
fixture's compile.
"""

from __future__ import annotations

import dataclasses
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import run_cli
from fake_kfp_api import API, FakeKfpApi, FakeKfpServer
from tfrecord_pipelines.kubeflow import input_fingerprints, package, submit

ROOT = "gs://bucket/root"


@dataclasses.dataclass
class _CliSubmission:
    api: FakeKfpApi
    url: str
    package: Path
    stdout: str
    stderr: str
    returncode: int


@pytest.fixture(scope="module")
def compiled_submission(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_CliSubmission]:
    """Compiles the bundled pipeline and submits it through the CLI, once."""
    api = FakeKfpApi()
    server = FakeKfpServer(api)
    url = server.start()
    package = tmp_path_factory.mktemp("submit") / "penguins.yaml"
    result = run_cli(
        *("submit", f"--host={url}", f"--pipeline-root={ROOT}", "--experiment=penguins-exp"),
        *(f"--output={package}", "--image=example.com/tfrecord-pipelines:test"),
    )
    yield _CliSubmission(api, url, package, result.stdout, result.stderr, result.returncode)
    server.stop()


def _cli_submit(package: Path, url: str, *args: str) -> Any:
    """Runs ``python -m tfrecord_pipelines submit --package PACKAGE --host URL ARGS``."""
    return run_cli("submit", f"--package={package}", f"--host={url}", *args)


def _load_docs(package: Path) -> list[dict]:
    with open(package) as f:
        return list(yaml.safe_load_all(f))


def test_cli_compiles_and_creates_run(compiled_submission: _CliSubmission) -> None:
    s = compiled_submission
    assert s.returncode == 0, s.stderr
    api = s.api
    assert api.rejections == []
    assert api.routes() == [
        f"GET {API}/healthz",
        f"GET {API}/experiments",
        f"POST {API}/experiments",
        f"POST {API}/runs",
    ]
    (experiment,) = api.experiments.values()
    assert experiment["display_name"] == "penguins-exp"
    (run,) = api.runs
    assert run["experiment_id"] == experiment["experiment_id"]
    assert run["runtime_config"] == {"parameters": {}, "pipeline_root": ROOT}
    assert run["service_account"] == submit.DEFAULT_SERVICE_ACCOUNT
    assert run["display_name"].startswith("penguins ") and run["display_name"].endswith(" UTC")
    # The server received exactly the compiled file: spec and PlatformSpec.
    docs = _load_docs(s.package)
    ((spec, platform),) = api.received_specs
    assert spec == json.loads(json.dumps(docs[0]))
    assert platform == (docs[1] if len(docs) > 1 else {})
    assert f"run id:      {run['run_id']}" in s.stdout
    assert f"{s.url}/#/runs/details/{run['run_id']}" in s.stdout
    assert f"penguins-exp ({s.url}/#/experiments/details/{experiment['experiment_id']})" in s.stdout


def test_cli_submits_package_into_existing_experiment(
    compiled_submission: _CliSubmission, serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(submit.PIPELINE_ROOT_ENV, raising=False)
    api = FakeKfpApi()
    experiment_id = api.add_experiment("penguins-exp")
    url = serve(api)
    result = _cli_submit(
        compiled_submission.package,
        url + "/",
        *("--experiment=penguins-exp", "--run-name=nightly", "--service-account="),
        "--existing-token=secret-token",
    )
    assert result.returncode == 0, result.stderr
    assert "Wrote Kubeflow" not in result.stdout  # --package skips compiling
    assert api.rejections == []
    assert f"POST {API}/experiments" not in api.routes()
    assert {c.authorization for c in api.calls} == {"Bearer secret-token"}
    (run,) = api.runs
    assert run["experiment_id"] == experiment_id
    assert run["display_name"] == "nightly"
    assert "service_account" not in run  # the server's default
    assert run["runtime_config"] == {"parameters": {}}  # the namespace's default root
    assert "root:        the namespace's default" in result.stdout
    assert f"{url}/#/runs/details/{run['run_id']}" in result.stdout


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(
    ("failing", "expected"),
    [
        (True, r"^error: creating run 'nightly' failed at {url}: HTTP 500 .*database is locked$"),
        (False, r"^error: checking the server's health failed: cannot reach {url}: .*refused"),
    ],
    ids=["server-error", "connection-refused"],
)
def test_cli_server_failure_is_one_line(
    compiled_submission: _CliSubmission, serve: Any, failing: bool, expected: str
) -> None:
    if failing:
        api = FakeKfpApi(failures={f"POST {API}/runs": 500})
        url = serve(api)
    else:
        url = _closed_port_url()
    result = _cli_submit(
        compiled_submission.package, url, f"--pipeline-root={ROOT}", "--run-name=nightly"
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert re.search(expected.format(url=re.escape(url)), lines[0]), lines[0]


def test_cli_local_pipeline_root_is_usage_error(
    compiled_submission: _CliSubmission, serve: Any
) -> None:
    api = FakeKfpApi()
    url = serve(api)
    result = _cli_submit(compiled_submission.package, url, "--pipeline-root=/pipeline/root")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: Pipeline root '/pipeline/root' must be an object store URI that KFP's launcher "
        "opens: gs://BUCKET/root, s3://BUCKET/root or minio://BUCKET/root."
    ]
    assert api.calls == []


def test_cli_refuses_a_platform_spec_the_server_would_ignore(
    compiled_submission: _CliSubmission, serve: Any, tmp_path: Path
) -> None:
    spec, platform = _load_docs(compiled_submission.package)
    # A hand edit: the server would drop this document without a word, and the
    # Trainer would run without its GPU node selector and tolerations.
    platform["platforms"]["kubernetes"]["deploymentSpecs"] = platform["platforms"][
        "kubernetes"
    ].pop("deploymentSpec")
    package = tmp_path / "edited.yaml"
    package.write_text(yaml.safe_dump_all([spec, platform]))
    api = FakeKfpApi()
    url = serve(api)
    result = _cli_submit(package, url, f"--pipeline-root={ROOT}")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {package}: The PlatformSpec document does not parse")
    assert api.calls == []


def _submit(package: Path, url: str, **kwargs: Any) -> submit.SubmittedRun:
    namespace = kwargs.pop("namespace", None)
    return submit.submit_run(
        str(package),
        connection=submit.KfpConnection(host=url, namespace=namespace),
        pipeline_root=ROOT,
        **kwargs,
    )


def test_multi_user_needs_and_uses_namespace(
    compiled_submission: _CliSubmission, serve: Any
) -> None:
    api = FakeKfpApi(multi_user=True)
    url = serve(api)
    with pytest.raises(
        submit.SubmitError, match=rf"^{re.escape(url)} is a multi-user .*--namespace"
    ):
        _submit(compiled_submission.package, url)
    assert f"POST {API}/runs" not in api.routes()

    run = _submit(compiled_submission.package, url, namespace="team-a")
    assert api.rejections == []
    (experiment,) = api.experiments.values()
    assert (experiment["display_name"], experiment["namespace"]) == ("penguins", "team-a")
    assert run.experiment == "penguins"
    assert run.experiment_id == experiment["experiment_id"]
    assert api.runs[0]["experiment_id"] == experiment["experiment_id"]


def test_upload_creates_pipeline_then_versions(
    compiled_submission: _CliSubmission, serve: Any
) -> None:
    api = FakeKfpApi()
    url = serve(api)
    first = _submit(compiled_submission.package, url, upload=True, run_name="first")
    second = _submit(compiled_submission.package, url, upload=True, run_name="second")
    assert api.rejections == []
    (pipeline,) = api.pipelines.values()
    assert pipeline["display_name"] == "penguins"
    assert [v["display_name"] for v in api.versions.values()] == ["penguins", "second"]
    references = [run["pipeline_version_reference"] for run in api.runs]
    assert references == [
        {"pipeline_id": pipeline["pipeline_id"], "pipeline_version_id": version_id}
        for version_id in api.versions
    ]
    assert all("pipeline_spec" not in run for run in api.runs)
    assert first.pipeline_version_url == (
        f"{url}/#/pipelines/details/{pipeline['pipeline_id']}/version/{next(iter(api.versions))}"
    )
    assert second.url == f"{url}/#/runs/details/{api.runs[1]['run_id']}"
    assert f"POST {API}/pipelines/upload_version" in api.routes()


@pytest.mark.parametrize(
    ("api", "message"),
    [
        (
            FakeKfpApi(failures={f"GET {API}/healthz": 503}),
            r"^checking the server's health failed at {url}: HTTP 503 .*database is locked$",
        ),
        (FakeKfpApi(login_page=True), r"^{url} answered without experiment_id: .*login page"),
    ],
    ids=["unhealthy", "login-page"],
)
def test_server_failures_raise_submit_error(
    compiled_submission: _CliSubmission, serve: Any, api: FakeKfpApi, message: str
) -> None:
    url = serve(api)
    with pytest.raises(submit.SubmitError, match=message.format(url=re.escape(url))):
        _submit(compiled_submission.package, url)
    assert f"POST {API}/runs" not in api.routes()


@pytest.mark.parametrize("root", ["/pipeline/root", "file:///tmp/root", "hdfs://nn/root", "s3://"])
def test_pipeline_root_must_be_object_store(root: str) -> None:
    with pytest.raises(ValueError, match=rf"^Pipeline root {re.escape(repr(root))} must be an"):
        package.check_pipeline_root(root)


@pytest.mark.parametrize("root", ["gs://b/root", "s3://b/root", "minio://mlpipeline/v2/artifacts"])
def test_object_store_pipeline_roots_are_accepted(root: str) -> None:
    package.check_pipeline_root(root)  # raises on a root the launcher cannot open


def test_host_must_be_a_url() -> None:
    with pytest.raises(ValueError, match=r"'localhost:8080' must be a URL starting with http"):
        submit.KfpConnection(host="localhost:8080")


def test_package_must_be_a_compiled_pipeline(tmp_path: Path) -> None:
    not_a_pipeline = tmp_path / "values.yaml"
    not_a_pipeline.write_text("replicas: 2\n")
    with pytest.raises(ValueError, match=r"not a compiled KFP v2 pipeline"):
        package.pipeline_name(str(not_a_pipeline))
    with pytest.raises(ValueError, match=r"Cannot read pipeline package .*missing.yaml"):
        package.pipeline_name(str(tmp_path / "missing.yaml"))


def test_cli_no_cache_with_a_package_runs_it_uncached(
    compiled_submission: _CliSubmission, serve: Any
) -> None:
    api = FakeKfpApi()
    url = serve(api)
    result = _cli_submit(compiled_submission.package, url, f"--pipeline-root={ROOT}", "--no-cache")
    assert result.returncode == 0, result.stderr
    ((spec, _),) = api.received_specs
    tasks = spec["root"]["dag"]["tasks"]
    assert tasks and not any(t.get("cachingOptions", {}).get("enableCache") for t in tasks.values())
    # The package itself still caches, but the fingerprint task (input_fingerprints), which
    # never does; only this run does not.
    (package_spec, *_) = _load_docs(compiled_submission.package)
    assert {
        name
        for name, t in package_spec["root"]["dag"]["tasks"].items()
        if not t["cachingOptions"].get("enableCache")
    } == {input_fingerprints.TASK}


def test_cli_no_cache_with_a_package_to_upload_is_a_usage_error(
    compiled_submission: _CliSubmission,
) -> None:
    result = _cli_submit(
        compiled_submission.package, "http://127.0.0.1:9", "--upload", "--no-cache"
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --no-cache with --package and --upload: an uploaded version keeps the package's "
        "caching; compile the package with --no-cache instead."
    ]
