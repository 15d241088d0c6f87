"""Three days of the compiled daily pipeline (``compile --window 2``) as a cluster runs it, and
the same three days run locally.

``cluster_runs`` runs each task in its own container of the image with only what
KFP's driver and launcher give its pod: its PlatformSpec's volumes and secrets,
its own input artifacts staged from the pipeline root, its outputs uploaded
after (a contract test of the launcher's staging rules; the rules and their
lines are in that module). Two clusters:

- KFP's defaults: the pipeline root in MinIO (``minio://mlpipeline/v2/artifacts``,
  moto's S3 server standing in, checking every request's key as MinIO does), the
  serving folder and the daily state on the serving PVC (``/pipeline/serving_model``),
  a new volume owned by root until k8s/'s Job gives it to the image's user, the tasks
  given KFP's ``mlpipeline-minio-artifact`` Secret. The data in another S3 store
  (``s3://events/day-{SPAN}/``, a second moto taking only its own keys), which every
  pod is given by its namespace's AWS SDK variables: each store refuses the other's
  keys.
- No volume: the pipeline root, the serving folder and the daily state in GCS
  (fake-gcs-server), handled as the launcher handles a ``gs://`` root: each task's
  artifacts copied to and from ``/gcs/...``.

Each cluster runs three days, then day 3 again: the re-run hands on day 3's
conversion, and its later tasks read it.

The first cluster's pipeline is compiled with ``--trainer-workers 2``: its Trainer's task
creates a TFJob through the API server (``fake_k8s_api``, the pod's in-cluster
configuration), and the Training Operator's stand-in (``fake_tf_operator``) runs the
job's two workers as containers of one podman pod.

The data is in ``gs://events/day-{SPAN}/`` for the second cluster and the local runs. The
window and its statistics, the drift check's previous span, the warm start's
model and the analyzer cache come from the daily state, which SpanWindow and
RecordRun keep in place of TFX's Resolvers; the local runs pick them from ML
Metadata; all must agree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cluster_jobs import run_job
from cluster_pods import InClusterApi, new_claim
from cluster_runs import Cluster, run_as_cluster
from cluster_tasks import TaskRecord
from launcher_sessions import RELEASE_ENDPOINTS
from launcher_stores import ObjectStores
from object_store_servers import authenticated_s3_server, gcs_server
from tfx.types.artifact import Artifact

from conftest import REPO_ROOT, run_cli, run_summary
from daily_spans import SHIFTED_DAY, page_window_and_drift, write_day
from fake_k8s_api import (
    KUBEFLOW_EDIT_RULES,
    FakeK8sApi,
    FakeK8sServer,
    role_rules,
    write_service_account,
)
from fake_tf_operator import FakeTFOperator
from tfrecord_pipelines.components.spans.artifacts import span_of
from tfrecord_pipelines.kubeflow import examples_in_store
from tfrecord_pipelines.kubeflow.training_job import job_api, tf_job

pytestmark = [pytest.mark.e2e, pytest.mark.image]

DAYS = (1, 2, 3)
# After the three days, day 3 again: the key of the re-run.
RERUN = "day 3 again"
WINDOW = 2
# Rows per day: enough for day 3's drift to be measured as on 2,000 rows (test_span_window).
ROWS = 2_000
GCS_DATA, S3_DATA = "gs://events/day-{SPAN}/", "s3://events/day-{SPAN}/"
_SETTINGS = ("--label", "label", "--window", str(WINDOW))
_SETTINGS += ("--train-steps", "20", "--min-accuracy", "0")
# KFP's defaults: the pipeline root, the Secret its launcher reads it with, the serving PVC.
MINIO_ROOT = "minio://mlpipeline/v2/artifacts"
GCS_ROOT = "gs://kfp-artifacts/v2/artifacts"
SERVING_PVC = "tfrecord-pipelines-serving"
MINIO_SECRET = "mlpipeline-minio-artifact"
# The Job that makes the serving claim's new volume writable by the image's user.
CLAIM_OWNER_JOB = REPO_ROOT / "k8s" / "base" / "serving-pvc-owner.yaml"
CLUSTERS = ("KFP defaults: MinIO root, PVC", "gs:// root, state and models in GCS")
# The tasks that keep the daily state (ExampleGen hands on a day converted before).
STATE_TASKS = {"ShardedExampleGen", "SpanWindow", "RecordRun"}
NAMESPACE = "kubeflow-user-example-com"
TRAINER_WORKERS = 2
# The registry credentials the namespace's pods pull the image with.
PULL_SECRETS = ("registry-credentials",)


class Days:
    """One cluster's runs: each day's task records, and where its state and models are."""

    def __init__(self, stores, runs, state, serving, on_pvc: bool, operator=None) -> None:
        self.stores, self.runs, self.on_pvc = stores, runs, on_pvc
        # The Training Operator's stand-in, when the Trainer trained in TFJobs.
        self.operator = operator
        # Lists the daily state's and the serving folder's files, relative to each.
        self.state_files, self.serving_files = state, serving

    def read(self, uri: str) -> str:
        return self.stores.read_text(uri)


@pytest.fixture(scope="module")
def servers(tmp_path_factory, component_image, docker_api):
    """fake-gcs-server with the days' data, a bucket for the state and models and one for a
    gs:// pipeline root; moto, taking only its user's keys, with KFP's ``mlpipeline``
    bucket, the MinIO pipeline root's; another moto with the same days' data, taking only
    its own user's keys. Yields the two URLs, the first moto's keys, and the data store's
    variables as a pod is given them."""
    buckets, data = tmp_path_factory.mktemp("gcs"), tmp_path_factory.mktemp("data")
    for day in DAYS:
        for store in (buckets, data):
            write_day(store / "events" / f"day-{day}", seed=day, rows=ROWS)
    for bucket, readme in (("models", "serving folders and the daily state"),
                           ("kfp-artifacts", "KFP's artifacts")):  # fmt: skip
        (buckets / bucket).mkdir()
        (buckets / bucket / "README").write_text(f"{readme}\n")
    s3_buckets = tmp_path_factory.mktemp("s3")
    (s3_buckets / "mlpipeline").mkdir()
    (s3_buckets / "mlpipeline" / "README").write_text("KFP's artifacts\n")
    with gcs_server(buckets) as gcs_url, authenticated_s3_server(s3_buckets) as (s3_url, keys):
        with authenticated_s3_server(data) as (data_url, data_keys):
            data_store = {"AWS_ENDPOINT_URL": data_url, "AWS_ACCESS_KEY_ID": data_keys[0],
                          "AWS_SECRET_ACCESS_KEY": data_keys[1]}  # fmt: skip
            yield gcs_url, s3_url, keys, data_store


def _compile(package: Path, network: dict, image: str, *settings: str) -> None:
    compiled = run_cli(
        "compile", *_SETTINGS, *settings, "--image", image, "--gpus", "0",
        "--output", str(package), env=network,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr[-3000:]


@pytest.fixture(scope="module")
def local(servers, tmp_path_factory):
    """The three days run locally, reading the same bucket: each day's printout and summary."""
    gcs_url = servers[0]
    output = tmp_path_factory.mktemp("local")
    days = {}
    for day in DAYS:
        ran = run_cli(
            "run", *_SETTINGS, "--data", GCS_DATA, "--span", str(day), "--output", str(output),
            env={"STORAGE_EMULATOR_HOST": gcs_url},
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr[-3000:]
        days[day] = (ran.stdout, run_summary(output, "events", ran.stdout))
    return days


def _days(package: Path, cluster: Cluster, root: str, folder: Path) -> dict:
    """Each day's run, then day 3's again, by day (the re-run by RERUN)."""
    runs = {day: run_as_cluster(package, cluster, root, folder, {"span": str(day)})
            for day in DAYS}  # fmt: skip
    runs[RERUN] = run_as_cluster(package, cluster, root, folder, {"span": str(DAYS[-1])})
    return runs


@pytest.fixture(scope="module")
def clusters(servers, tmp_path_factory, component_image) -> dict[str, Days]:
    gcs_url, s3_url, keys, data_store = servers
    stores = ObjectStores(gcs_url, s3_url, keys)
    # Every pod reaches GCS through the emulator, as a cluster's network reaches GCS.
    network = {"STORAGE_EMULATOR_HOST": gcs_url}
    # And, on KFP's defaults, the data's store, as its namespace's PodDefault gives it.
    with_data_store = {**network, **data_store}
    secrets = {MINIO_SECRET: {"accesskey": keys[0], "secretkey": keys[1]}}
    found = {}
    folder = tmp_path_factory.mktemp("defaults")
    # A new volume, root's; k8s/'s Job gives it to the image's user, as on a cluster.
    claim = new_claim(folder / "claim")
    run_job(CLAIM_OWNER_JOB, {SERVING_PVC: claim}, component_image)
    package = folder / "daily.yaml"
    _compile(
        package, with_data_store, component_image, "--data", S3_DATA,
        "--artifact-endpoint", s3_url, "--trainer-workers", str(TRAINER_WORKERS),
    )  # fmt: skip
    api = FakeK8sApi()
    # The profile's pods run as default-editor, with what kubeflow-edit allows it.
    api.grant(f"system:serviceaccount:{NAMESPACE}:default-editor", role_rules(KUBEFLOW_EDIT_RULES))
    account = write_service_account(folder / "serviceaccount", NAMESPACE)
    server = FakeK8sServer(api, in_cluster=account)
    # A Kubeflow profile's namespace: labelled for Istio's sidecar injection.
    operator = FakeTFOperator(
        api, folder, {SERVING_PVC: claim}, secrets, with_data_store, istio_namespaces=(NAMESPACE,)
    )
    kubernetes = InClusterApi(server.port, account.folder, api=api, pull_secrets=PULL_SECRETS)
    cluster = Cluster(
        stores, {SERVING_PVC: claim}, secrets, with_data_store, kubernetes=kubernetes,
        services={RELEASE_ENDPOINTS["2.16"]: s3_url},
    )  # fmt: skip
    try:
        runs = _days(package, cluster, MINIO_ROOT, folder)
    finally:
        operator.close()
        server.close()

    def files(relative):
        return lambda: sorted(
            p.relative_to(claim / relative).as_posix()
            for p in (claim / relative).rglob("*")
            if p.is_file()
        )

    found[CLUSTERS[0]] = Days(
        stores, runs, files("daily-state/events"), files("events"), on_pvc=True,
        operator=operator,
    )  # fmt: skip
    folder = tmp_path_factory.mktemp("buckets")
    package = folder / "daily.yaml"
    _compile(
        package, network, component_image, "--data", GCS_DATA, "--artifact-secret", "none",
        "--serving-dir", "gs://models/serving", "--state-dir", "gs://models/state",
    )  # fmt: skip
    cluster = Cluster(stores, {}, {}, network)
    runs = _days(package, cluster, GCS_ROOT, folder)
    found[CLUSTERS[1]] = Days(
        stores,
        runs,
        lambda: stores.names("gs://models/state"),
        lambda: stores.names("gs://models/serving"),
        on_pvc=False,
    )
    return found


@pytest.fixture(params=CLUSTERS)
def days(request, clusters) -> Days:
    return clusters[request.param]


def _members(record: TaskRecord, name: str) -> list[dict]:
    """The artifacts an input of the task stood for (SpanWindow's outputs), as handed over."""
    [reference] = record.executor_input.inputs.artifacts[name].artifacts
    return json.loads(reference.metadata.fields["members"].string_value)


def _span_of(member: dict) -> int:
    return span_of(Artifact.from_json_dict(member))


def _uri(member: dict) -> str:
    return member["artifact"]["uri"]


def test_each_day_converts_its_own_span_and_reads_a_window_of_two(days, local):
    for day in DAYS:
        _, metadata = days.runs[day]["ShardedExampleGen"].outputs["examples"]
        plan = json.loads(metadata["shard_plan"])
        assert plan["input_pattern"] == f"day-{day}/*.csv", day
        window = [_span_of(m) for m in _members(days.runs[day]["Trainer"], "examples")]
        assert window == [s.span for s in local[day][1].window.spans], day
        assert window == list(range(max(1, day - WINDOW + 1), day + 1)), day


_SHARE = re.compile(r"Trainer worker (\d) of (\d)[^:]*: (\d+) of the (\d+) train shards")


def test_the_trainer_trains_in_a_tfjob_whose_workers_read_their_own_shards(clusters):
    """Each day's Trainer task (KFP defaults, ``--trainer-workers 2``) created one TFJob named
    after its pod, owned by it, which the operator's stand-in ran as two containers with the
    operator's TF_CONFIG: each worker read its own shards, together every train shard once;
    the chief wrote the model at the task's output, which the Evaluator read; the job was
    deleted after."""
    days = clusters[CLUSTERS[0]]
    operator, jobs = days.operator, days.operator.jobs
    api = operator.api
    trainers = [records["Trainer"] for records in days.runs.values()]
    assert len(jobs) == len(trainers)
    for job, trainer in zip(jobs, trainers, strict=True):
        name = job["metadata"]["name"]
        [owner] = job["metadata"]["ownerReferences"]
        max_name = tf_job.API.max_name(TRAINER_WORKERS)
        assert (owner["kind"], name) == ("Pod", job_api.job_name(owner["name"], max_name))
        assert job["metadata"]["namespace"] == NAMESPACE
        worker = job["spec"]["tfReplicaSpecs"]["Worker"]
        assert worker["replicas"] == TRAINER_WORKERS
        # Issue 90: the task's identity (its pod's account, as the API holds it) and no proxy
        # (the namespace is Istio's; a proxied worker would never end).
        task_pod = api.task_pods[(NAMESPACE, owner["name"])]["spec"]
        assert worker["template"]["spec"]["serviceAccountName"] == task_pod["serviceAccountName"]
        assert worker["template"]["spec"]["imagePullSecrets"] == task_pod["imagePullSecrets"]
        assert worker["template"]["metadata"]["annotations"] == job_api.NO_SIDECAR
        assert name in operator.api.deleted
        shares = {}
        for index in range(TRAINER_WORKERS):
            pod = f"{name}-worker-{index}"
            config = operator.tf_configs[pod]
            assert config["task"] == {"type": "worker", "index": index}
            assert [a.split(":")[0] for a in config["cluster"]["worker"]] == [
                f"{name}-worker-{i}.{NAMESPACE}.svc" for i in range(TRAINER_WORKERS)
            ]
            [log] = [p.log for p in operator.api.pods if p.name == pod]
            [(worker, count, own, total)] = _SHARE.findall(log)
            assert (int(worker), int(count)) == (index, TRAINER_WORKERS)
            shares[index] = (int(own), int(total))
        [total] = {total for _, total in shares.values()}
        assert all(own >= 1 for own, _ in shares.values())
        assert sum(own for own, _ in shares.values()) == total
        assert "the chief's log (worker 0)" in trainer.logs
        model_uri, _ = trainer.outputs["model"]
        assert "Format-Serving/saved_model.pb" in days.stores.names(model_uri)


def test_the_daily_state_is_kept_where_every_day_finds_it(days):
    # Issue 63, finding 1: on KFP's defaults each task that keeps the state mounts the PVC
    # it is on; a folder of its pod's own disk would be gone with the pod.
    state = days.state_files()
    conversions = sorted({name.split("/")[1] for name in state if name.startswith("conversions/")})
    assert conversions == [f"span-{d:08d}" for d in DAYS]
    # A run each: the three days and day 3's re-run (a new model).
    assert len([name for name in state if name.startswith("runs/")]) == len(days.runs)
    mounting = {name for name, record in days.runs[DAYS[-1]].items() if record.mounts}
    assert mounting == (STATE_TASKS | {"Pusher"} if days.on_pvc else set())


def test_each_day_warm_starts_from_the_model_a_local_run_picks(days, local):
    models = {day: days.runs[day]["Trainer"].outputs["model"][0] for day in DAYS}
    local_models = {day: local[day][1].model for day in DAYS}
    blessed = _blessed(days)
    local_blessed = {day: local[day][1].blessed for day in DAYS}
    bases = {}
    for day in DAYS:
        base = [_uri(m) for m in _members(days.runs[day]["Trainer"], "base_model")]
        warm_start = local[day][1].warm_start or {}
        local_base = warm_start.get("base_model") if warm_start.get("warm_started") else None
        bases[day] = (_day_of(base[0] if base else None, models), _day_of(local_base, local_models))
        # One rule on both sides: the newest model of an earlier day its Evaluator blessed.
        # Whether a model did at least as well as the last blessed one is each side's own
        # Evaluator's call, on models trained apart, so the two may differ on a close call.
        assert bases[day] == (
            _newest_blessed_before(blessed, day),
            _newest_blessed_before(local_blessed, day),
        ), (day, blessed, local_blessed)
    # Day 1's model is blessed on both (no baseline yet, no accuracy floor): day 2 starts
    # from it on both, and day 1 from scratch.
    assert bases[1] == (None, None) and bases[2] == (1, 1)
    for day, base in ((1, None), (2, 1)):
        model_run, _ = days.runs[day]["Trainer"].outputs["model_run"]
        report = json.loads(days.read(f"{model_run}/warm_start.json"))
        assert report["warm_started"] == (base is not None), report
        assert _day_of(_as_uri(report["base_model"]), models) == base, report


def _as_uri(path: str | None) -> str | None:
    """A path the Trainer read as the URI it stands for (the launcher's copy or S3's form)."""
    from tfrecord_pipelines.components.storage.launcher_copies import remote_uri

    if path is None:
        return None
    uri = remote_uri(path)
    return "minio://" + uri[len("s3://") :] if uri.startswith("s3://mlpipeline/") else uri


def _day_of(model_uri: str | None, models: dict[int, str]) -> int | None:
    """Which day's model ``model_uri`` is (or is inside), or None."""
    if model_uri is None:
        return None
    uri = _as_uri(model_uri)
    return next(day for day, folder in models.items() if uri.startswith(folder))


def _blessed(days: Days) -> dict:
    """Whether each run's Evaluator blessed its model, by day."""
    return {
        day: records["Evaluator"].outputs["blessing"][1].get("blessed") == 1
        for day, records in days.runs.items()
    }


def _newest_blessed_before(blessed: dict, day: int) -> int | None:
    return max((d for d in DAYS if d < day and blessed[d]), default=None)


def test_day_3s_drift_is_flagged_and_its_model_not_pushed_as_locally(days, local):
    blessed = _blessed(days)
    for day in DAYS:
        _, drift = days.runs[day]["DriftCheck"].outputs["anomalies"]
        previous = _members(days.runs[day]["DriftCheck"], "previous_statistics")
        assert [_span_of(m) for m in previous] == ([day - 1] if day > 1 else []), day
        local_drift = local[day][1].drift
        local_drifted = (
            sorted(n for n, r in local_drift[1].items() if r["drifted"]) if local_drift else []
        )
        assert sorted(filter(None, drift.get("drifted", "").split(","))) == local_drifted, day
        drifted = day == SHIFTED_DAY
        assert bool(local[day][1].pushed_model) == (local[day][1].blessed and not drifted), day
        _, pushed = days.runs[day]["Pusher"].outputs["pushed_model"]
        assert pushed.get("pushed") == int(blessed[day] and not drifted), (day, pushed)
    _, drift = days.runs[SHIFTED_DAY]["DriftCheck"].outputs["anomalies"]
    assert drift["drifted"], drift


def test_no_pod_packages_tfx_for_beam_workers_that_do_not_exist(days):
    # TFX's Beam executors copy TFX and build an sdist of it for a remote runner's workers
    # unless told not to (definition/beam_args.py): 1.6 CPU-s a Beam task on the DirectRunner.
    for day, records in days.runs.items():
        for task, record in records.items():
            assert "infer TFX Python dependency" not in record.logs, (day, task)


def test_the_serving_folder_holds_a_version_per_push(days):
    pushes = sum(
        records["Pusher"].outputs["pushed_model"][1].get("pushed") == 1
        for records in days.runs.values()
    )
    assert pushes >= 1
    versions = {name.split("/")[0] for name in days.serving_files()}
    # A version per push (day 3 drifted: never pushed), and no staged copy left behind.
    assert len(versions) == pushes, versions
    assert all(version.isdigit() for version in versions), versions


def test_the_reporters_page_shows_the_window_and_the_drift(days):
    page, _ = days.runs[SHIFTED_DAY]["Reporter"].outputs["report"]
    rows, drifted = page_window_and_drift(days.read(page))
    assert [span for span, _ in rows] == ["2", "3"]
    # Transform's analysis from SpanWindow's statistics of each span: no record read.
    assert "an earlier run" in rows[0][1] and "statistics" in rows[0][1]
    assert "this run" in rows[1][1] and "statistics" in rows[1][1]
    assert sorted(drifted) == ["colour", "x"]
    assert "held back, the span drifted (colour,x)" in days.read(page)


def test_a_rerun_of_a_day_reuses_its_conversion_and_starts_from_the_same_model(days):
    first, again = days.runs[DAYS[-1]], days.runs[RERUN]
    [day_3_examples] = _written_examples(first)
    reused_uri, reused = again["ShardedExampleGen"].outputs["examples"]
    assert [_uri(m) for m in json.loads(reused["members"])] == [day_3_examples]
    assert "converted by an earlier run: reusing" in again["ShardedExampleGen"].logs
    # Issue 75, finding 1: the re-run's outputs are recorded by their URIs under the pipeline
    # root (a local copy's path would fail every later task's launcher), and the later
    # tasks read the conversion it hands on.
    assert reused_uri.startswith(("minio://", "gs://")), reused_uri
    for task in ("SpanWindow", "DriftCheck", "ExampleValidator"):
        assert again[task].executor_input.inputs.artifacts, task
    window = [_uri(m) for m in _members(again["Trainer"], "examples")]
    assert window == [_uri(m) for m in _members(first["Trainer"], "examples")]
    assert window[-1] == day_3_examples
    # Its base model is the first run's: not day 3's own model, which is newer.
    base = [_uri(m) for m in _members(again["Trainer"], "base_model")]
    assert base == [_uri(m) for m in _members(first["Trainer"], "base_model")]


def _written_examples(records: dict[str, TaskRecord]) -> list[str]:
    """Where the run's ExampleGen wrote its examples: the members of its output."""
    _, metadata = records["ShardedExampleGen"].outputs["examples"]
    return [_uri(m) for m in json.loads(metadata["members"])]


def test_what_each_pod_receives_from_the_launcher(clusters):
    """Issue 75, finding 7: the launcher copies every input artifact whole into the pod.
    ExampleGen writes its examples into the pipeline root's store beside its outputs, and its
    output is a reference to them: no task's pod receives a shard (the copies' sizes at two
    data sizes are benchmarks/launcher_copies.py's)."""
    for name, days in clusters.items():
        records = days.runs[DAYS[-1]]
        [written] = _written_examples(records)
        reference, metadata = records["ShardedExampleGen"].outputs["examples"]
        assert written == examples_in_store.data_uri(reference), (name, written)
        plan = json.loads(metadata["shard_plan"])
        shards = [
            f"{written}/Split-{split}/{shard['file']}"
            for split, outcome in plan["splits"].items()
            for shard in outcome["shards"]
        ]
        assert len(shards) >= 2, plan
        # The shards are in the store, where the reference says.
        assert all(days.stores.names(shard.rsplit("/", 1)[0]) for shard in shards), shards
        shard_names = {shard.rsplit("/", 1)[1] for shard in shards}
        for task, record in records.items():
            staged = {Path(path).name for path, _ in record.staged}
            assert not staged & shard_names, (name, task, staged & shard_names)
        # On KFP's defaults the pods' own S3 is the data's store: ExampleGen reads the data with
        # it and uploads the shards with the root's keys; SpanWindow lists the spans in it;
        # the others read only the root's store and set it aside. Either store refuses the
        # other's keys.
        if days.on_pvc:
            assert f"then uploaded to {written.replace('minio://', 's3://')}" in (
                records["ShardedExampleGen"].logs
            )
            assert "out of its reach" in records["SpanWindow"].logs
            for task in ("Transform", "Trainer", "Evaluator"):
                assert "own S3 settings (AWS_ACCESS_KEY_ID" in records[task].logs, task
        # The tasks given ExampleGen's output read the examples where the reference says.
        for task in ("SpanWindow", "Evaluator"):
            assert [_uri(m) for m in _members(records[task], "examples")] == [written], task
        assert _members(records["Trainer"], "examples")[-1]["artifact"]["uri"] == written
