"""The cluster-like harness refuses what KFP's launcher refuses (issue 75), on tasks of the
component image whose commands do one thing each: a contract test of the launcher, run
through ``cluster_runs`` against moto (checking keys, as MinIO does).

Each rule's launcher line is in ``launcher_rules``. On a0fe6a3 the harness took every
case below: it skipped an input at a local path, uploaded anywhere, handed metadata on
verbatim, gave claims to the image's user, and dropped a failed command's logs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from cluster_jobs import run_job
from cluster_pods import new_claim
from cluster_runs import Cluster, run_as_cluster
from cluster_tasks import TaskFailed
from launcher_rules import BucketConfig, LauncherError, downloaded_path
from launcher_sessions import RELEASE_ENDPOINTS, root_session, s3_access, session_for
from launcher_stores import ObjectStores
from object_store_servers import authenticated_s3_server

from conftest import REPO_ROOT

pytestmark = pytest.mark.image

ROOT = "minio://mlpipeline/v2/artifacts"
MINIO_SECRET = "mlpipeline-minio-artifact"
CLAIM = "tfrecord-pipelines-serving"
MOUNT = "/pipeline/serving_model"
# The producer's command: writes a file at its output's local path, then the executor output
# that the test's settings ask for (the output's URI and metadata), or exits 1.
PRODUCER = """
import json, os, sys
executor_input = json.loads(sys.argv[1])
settings = json.loads(sys.argv[2])
[out] = executor_input["outputs"]["artifacts"]["out"]["artifacts"]
scheme, rest = out["uri"].split("://", 1)
local = "/" + {"gs": "gcs"}.get(scheme, scheme) + "/" + rest
os.makedirs(os.path.dirname(local), exist_ok=True)
if not settings.get("no_file"):
    open(local, "w").write(settings.get("data", "the data") + "\\n")
for name, parameter in executor_input["outputs"].get("parameters", {}).items():
    open(parameter["outputFile"], "w").write(settings["parameter"])
if settings.get("write_to"):
    open(settings["write_to"], "w").write("a model\\n")
print("producer ran")
if settings.get("fail"):
    sys.exit(1)
produced = {"metadata": settings.get("metadata", {})}
if "uri" in settings:
    produced["uri"] = settings["uri"]
output_file = executor_input["outputs"]["outputFile"]
os.makedirs(os.path.dirname(output_file), exist_ok=True)
json.dump({"artifacts": {"out": {"artifacts": [produced]}}}, open(output_file, "w"))
"""
# The consumer's command: prints its input artifact as the driver handed it over.
CONSUMER = """
import json, sys
[given] = json.loads(sys.argv[1])["inputs"]["artifacts"]["data"]["artifacts"]
print("GIVEN " + json.dumps(given))
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """moto with the pipeline root's bucket, taking only its user's keys."""
    buckets = tmp_path_factory.mktemp("s3")
    (buckets / "mlpipeline").mkdir()
    (buckets / "mlpipeline" / "README").write_text("KFP's artifacts\n")
    with authenticated_s3_server(buckets) as (url, keys):
        yield ObjectStores(s3_url=url, s3_keys=keys)


def _package(
    folder: Path, image: str, settings: dict, mount: bool = False, cache: bool = False
) -> Path:
    """A two-task pipeline: the producer, as ``settings`` ask, then its consumer; with
    ``cache``, both cached, and the producer's output parameter in the consumer's key."""
    spec = {
        "pipelineInfo": {"name": "contract"},
        "root": {"dag": {"tasks": {
            "producer": {"taskInfo": {"name": "producer"},
                         "componentRef": {"name": "comp-producer"}},
            "consumer": {"taskInfo": {"name": "consumer"},
                         "componentRef": {"name": "comp-consumer"},
                         "dependentTasks": ["producer"],
                         "inputs": {"artifacts": {"data": {"taskOutputArtifact": {
                             "producerTask": "producer", "outputArtifactKey": "out"}}}}},
        }}},
        "components": {
            "comp-producer": {"executorLabel": "exec-producer", "outputDefinitions": {
                "artifacts": {"out": {"artifactType": {"schemaTitle": "system.Dataset"}}}}},
            "comp-consumer": {"executorLabel": "exec-consumer", "inputDefinitions": {
                "artifacts": {"data": {"artifactType": {"schemaTitle": "system.Dataset"}}}}},
        },
        "deploymentSpec": {"executors": {
            "exec-producer": {"container": {"image": image, "command": ["python", "-c", PRODUCER],
                                            "args": ["{{$}}", json.dumps(settings)]}},
            "exec-consumer": {"container": {"image": image, "command": ["python", "-c", CONSUMER],
                                            "args": ["{{$}}"]}},
        }},
    }  # fmt: skip
    if cache:
        _cached(spec)
    documents = [spec]
    if mount:
        pvc = {"pvcNameParameter": {"runtimeValue": {"constant": CLAIM}}, "mountPath": MOUNT}
        documents.append({"platforms": {"kubernetes": {"deploymentSpec": {"executors": {
            "exec-producer": {"pvcMount": [pvc]}}}}}})  # fmt: skip
    package = folder / "contract.yaml"
    package.write_text(yaml.safe_dump_all(documents))
    return package


def _cluster(store: ObjectStores, claims=None) -> Cluster:
    """KFP's defaults: the launcher reaches the MinIO root at its release's Service, with KFP's
    Secret."""
    keys = store.s3_keys
    return Cluster(
        store, claims or {}, {MINIO_SECRET: {"accesskey": keys[0], "secretkey": keys[1]}},
        services={RELEASE_ENDPOINTS["2.16"]: store.s3_url},
    )  # fmt: skip


def _cached(spec: dict) -> None:
    """Both tasks cached; the producer has an output parameter, which the consumer takes."""
    tasks, components = spec["root"]["dag"]["tasks"], spec["components"]
    for task in tasks.values():
        task["cachingOptions"] = {"enableCache": True}
    components["comp-producer"]["outputDefinitions"]["parameters"] = {
        "version": {"parameterType": "STRING"}
    }
    components["comp-consumer"]["inputDefinitions"]["parameters"] = {
        "version": {"parameterType": "STRING"}
    }
    tasks["consumer"]["inputs"]["parameters"] = {
        "version": {
            "taskOutputParameter": {"producerTask": "producer", "outputParameterKey": "version"}
        }
    }


def _run(
    tmp_path, store, image, settings, claims=None, mount=False, cluster=None, cache=False,
    run_id=None, root=ROOT,
):  # fmt: skip
    tmp_path.mkdir(parents=True, exist_ok=True)
    cluster = cluster or _cluster(store, claims)
    package = _package(tmp_path, image, settings, mount, cache)
    return cluster, run_as_cluster(package, cluster, root, tmp_path, run_id=run_id)


def _given(records) -> dict:
    [line] = [x for x in records["consumer"].logs.splitlines() if x.startswith("GIVEN ")]
    return json.loads(line[len("GIVEN ") :])


def test_metadata_comes_back_as_ml_metadata_gives_it(tmp_path, store, component_image):
    # Finding 3: a bool comes back an integer, a list and a struct wrapped, the name an id.
    metadata = {"blessed": True, "splits": ["train", "eval"], "plan": {"shards": 2}, "n": 3}
    _, records = _run(tmp_path, store, component_image, {"metadata": metadata})
    given = _given(records)
    assert given["metadata"]["blessed"] == 1
    assert given["metadata"]["splits"] == {"list": ["train", "eval"]}
    assert given["metadata"]["plan"] == {"struct": {"shards": 2}}
    assert given["metadata"]["n"] == 3
    assert given["name"].isdigit() and given["type"] == {"instanceSchema": ""}
    assert given["metadata"]["display_name"] == "out"


def test_a_null_in_an_outputs_metadata_fails_the_task(tmp_path, store, component_image):
    with pytest.raises(TaskFailed, match="unable to produce MLMD artifact for output 'out'") as e:
        _run(tmp_path, store, component_image, {"metadata": {"base_model": None}})
    assert "unknown/unsupported value type *structpb.Value_NullValue" in str(e.value)
    assert e.value.task == "producer"


def test_an_output_recorded_at_a_local_path_fails_the_next_task(tmp_path, store, component_image):
    # Finding 1: the launcher uploads nothing from a URI it does not recognise and records
    # it; the next task's launcher cannot parse a bucket from it.
    local = "/minio/mlpipeline/v2/artifacts/contract/run/producer/out"
    with pytest.raises(TaskFailed, match="failed to fetch non default buckets") as e:
        _run(tmp_path, store, component_image, {"uri": local})
    assert e.value.task == "consumer"
    assert f"unrecognized uri format: {local!r}" in str(e.value)


def test_an_output_outside_the_roots_bucket_fails_the_task(tmp_path, store, component_image):
    # Finding 2: the launcher uploads only under the pipeline root's bucket and prefix.
    with pytest.raises(TaskFailed, match="failed to upload output artifact 'out'") as e:
        _run(tmp_path, store, component_image, {"uri": "minio://other/out"})
    assert "does not have expected bucket prefix 'minio://mlpipeline/v2/artifacts/contract/" in (
        str(e.value)
    )


def test_an_output_in_another_runs_folder_fails_the_task(tmp_path, store, component_image):
    # Issue 89, finding 2: the launcher's default bucket is the run's own folder,
    # {root}/{pipeline}/{run} (launcher_v2.go:256-257, metadata/client.go:420): under the
    # pipeline root but in another run's folder is refused too.
    with pytest.raises(TaskFailed, match="failed to upload output artifact 'out'") as e:
        _run(tmp_path, store, component_image, {"uri": f"{ROOT}/contract/another-run/out"})
    [prefix] = re.findall(r"expected bucket prefix '([^']+)'", str(e.value))
    assert prefix.startswith(f"{ROOT}/contract/") and prefix != f"{ROOT}/contract/another-run"


def test_a_store_that_refuses_fails_the_task_naming_the_uri_and_its_answer(
    tmp_path, store, component_image
):
    # Issue 89, finding 6: a missing bucket is the launcher's one line, not a client's traceback.
    root = "minio://no-such-bucket/v2/artifacts"
    with pytest.raises(TaskFailed, match="failed to upload output artifact '") as e:
        _run(tmp_path, store, component_image, {}, root=root)
    [line] = [x for x in str(e.value).splitlines() if "failed to upload" in x]
    assert f"to remote storage URI '{root}/contract/" in line
    assert "NoSuchBucket: The specified bucket does not exist" in line
    assert "Traceback" not in str(e.value)


def test_after_a_failed_command_only_the_executor_logs_are_uploaded(
    tmp_path, store, component_image
):
    # Issue 89, finding 7: launcher_v2.go:786-790 uploads and records executor-logs alone
    # after a failed command, though the producer wrote its output's file first.
    with pytest.raises(TaskFailed) as e:
        _run(tmp_path, store, component_image, {"fail": True})
    task_root = e.value.log_uri.rsplit("/", 1)[0]
    assert store.names(task_root) == ["executor-logs"]


def test_an_output_whose_local_path_is_missing_is_recorded_not_uploaded(
    tmp_path, store, component_image
):
    # Issue 89, finding 7: UploadBlob's os.ErrNotExist is skipped (launcher_v2.go:824-834)
    # and the output is recorded: the next task is handed it, with nothing under its key.
    _, records = _run(tmp_path, store, component_image, {"no_file": True})
    given = _given(records)
    out_uri, _ = records["producer"].outputs["out"]
    assert given["uri"] == out_uri
    assert store.names(out_uri) == [] and not records["consumer"].staged


def test_a_rerun_hits_kfps_cache_until_an_upstream_parameter_changes(
    tmp_path, store, component_image
):
    # Issue 89, finding 1: KFP's cache keyed as cache.go keys it. Unchanged, both tasks are
    # hits, handed the first run's artifact ids and output parameter; the producer's
    # arguments changed, it runs, and the consumer, given a new artifact id and parameter.
    cluster = _cluster(store)
    settings = {"parameter": "v1"}
    _, first = _run(tmp_path / "1", store, component_image, settings, cluster=cluster, cache=True)
    _, again = _run(tmp_path / "2", store, component_image, settings, cluster=cluster, cache=True)
    assert [first[t].cached for t in ("producer", "consumer")] == [False, False]
    assert [again[t].cached for t in ("producer", "consumer")] == [True, True]
    assert again["producer"].output_ids == first["producer"].output_ids
    assert again["consumer"].executor_input.inputs.parameter_values["version"].string_value == "v1"
    changed = {"parameter": "v2", "data": "other data"}
    _, third = _run(tmp_path / "3", store, component_image, changed, cluster=cluster, cache=True)
    assert [third[t].cached for t in ("producer", "consumer")] == [False, False]
    assert third["consumer"].executor_input.inputs.parameter_values["version"].string_value == "v2"
    assert "other data" in store.read_text(third["producer"].outputs["out"][0])


def test_an_input_object_whose_key_climbs_out_fails_the_download(tmp_path, store, component_image):
    # DownloadBlob refuses a listed key with a '..' component before writing anything
    # (objectstore/object_store.go:146-148); the launcher fails the consumer's download.
    out = f"{ROOT}/contract/dots/out"
    planted = tmp_path / "planted.txt"
    planted.write_text("outside the input's folder\n")
    store.upload(planted, f"{out}/../evil")
    with pytest.raises(TaskFailed, match="failed to download input artifact 'data'") as e:
        _run(tmp_path / "run", store, component_image, {"uri": out}, run_id="dots")
    assert e.value.task == "consumer"
    assert "contains '..' component" in str(e.value)


def test_a_failed_commands_logs_are_uploaded(tmp_path, store, component_image):
    # Finding 2: the launcher uploads executor-logs after a failed command.
    with pytest.raises(TaskFailed) as e:
        _run(tmp_path, store, component_image, {"fail": True})
    assert e.value.task == "producer"
    # {root}/{pipeline}/{run}/{task}/{uuid}/executor-logs (driver/driver.go:767-778).
    assert e.value.log_uri.startswith(f"{ROOT}/contract/"), e.value.log_uri
    assert "/producer/" in e.value.log_uri and e.value.log_uri.endswith("/executor-logs")
    assert "producer ran" in store.read_text(e.value.log_uri)


def test_a_new_claim_is_roots_until_k8s_job_gives_it_to_the_image(tmp_path, store, component_image):
    # Finding 4: KFP sets no fsGroup; a new volume is root's, mode 0755.
    claim = new_claim(tmp_path / "claim")
    settings = {"write_to": f"{MOUNT}/model.txt"}
    with pytest.raises(TaskFailed, match="Permission denied"):
        _run(tmp_path / "before", store, component_image, settings, {CLAIM: claim}, mount=True)
    run_job(REPO_ROOT / "k8s" / "base" / "serving-pvc-owner.yaml", {CLAIM: claim}, component_image)
    assert (claim.stat().st_uid, claim.stat().st_gid, oct(claim.stat().st_mode & 0o7777)) == (
        1000, 0, "0o2775",
    )  # fmt: skip
    _run(tmp_path / "after", store, component_image, settings, {CLAIM: claim}, mount=True)
    assert (claim / "model.txt").read_text() == "a model\n"


@pytest.mark.parametrize(
    "root, uri, key",
    [
        (ROOT, f"{ROOT}/p/run/task/out", "p/run/task/out"),
        ("gs://kfp-artifacts/v2/artifacts/", "gs://kfp-artifacts/v2/artifacts/p/x", "p/x"),
    ],
)
def test_a_key_is_taken_under_the_roots_prefix(root, uri, key):
    assert BucketConfig.of_pipeline_root(root).key_from_uri(uri) == key


@pytest.mark.parametrize(
    "key, placed",
    [
        ("v2/p/out", "."),
        ("v2/p/out/Split-train/a.gz", "Split-train/a.gz"),
        ("v2/p/out_other/a.gz", None),
        ("v2/p/.data/out/a.gz", None),
    ],
)
def test_a_listed_object_is_placed_under_the_inputs_folder_or_skipped(key, placed):
    assert downloaded_path("v2/p/out", key) == placed


def test_a_listed_key_with_a_dot_dot_component_is_refused_only_under_the_prefix():
    with pytest.raises(LauncherError, match="path traversal detected: blob key 'v2/p/out/../x'"):
        downloaded_path("v2/p/out", "v2/p/out/../x")
    assert downloaded_path("v2/p/out", "v2/p/other/../x") is None


def test_an_unsupported_root_is_refused():
    with pytest.raises(LauncherError, match="unsupported Cloud bucket"):
        BucketConfig.of_pipeline_root("file:///tmp/root")


# k8s/'s kfp-launcher ConfigMap: an s3:// root in AWS, reached with its own Secret.
SHIPPED_LAUNCHER = REPO_ROOT / "k8s" / "base" / "kfp-launcher.yaml"
SHIPPED_SECRET = "tfrecord-pipelines-s3-credentials"


@pytest.fixture(scope="module")
def two_stores(tmp_path_factory):
    """Two S3 stores, each taking only its own keys: the shipped root's bucket in the first
    (AWS, for the launcher's config), a data bucket in the second (the pod's own)."""
    root_buckets, data_buckets = tmp_path_factory.mktemp("aws"), tmp_path_factory.mktemp("data")
    (root_buckets / "tfrecord-pipelines").mkdir()
    (root_buckets / "tfrecord-pipelines" / "README").write_text("the pipeline root\n")
    (data_buckets / "lake").mkdir()
    (data_buckets / "lake" / "README").write_text("the data\n")
    with authenticated_s3_server(root_buckets) as aws, authenticated_s3_server(data_buckets) as own:
        yield aws, own


def _shipped_cluster(aws, own, secret_keys) -> Cluster:
    """The shipped ConfigMap, its Secret holding ``secret_keys``, AWS's endpoint routed to the
    first store; every pod's own S3 settings the second store's."""
    config = yaml.safe_load(SHIPPED_LAUNCHER.read_text())
    secrets = {}
    if secret_keys:
        secrets[SHIPPED_SECRET] = {
            "AWS_ACCESS_KEY_ID": secret_keys[0], "AWS_SECRET_ACCESS_KEY": secret_keys[1]
        }  # fmt: skip
    pods = {"AWS_ENDPOINT_URL": own[0], "AWS_ACCESS_KEY_ID": own[1][0],
            "AWS_SECRET_ACCESS_KEY": own[1][1]}  # fmt: skip
    return Cluster(
        ObjectStores(s3_url=aws[0], s3_keys=aws[1]), {}, secrets, pods,
        launcher_config=config["data"], services={"s3.amazonaws.com": aws[0]},
    )  # fmt: skip


def test_the_shipped_launcher_config_opens_the_root_with_its_secret_not_the_pods(
    tmp_path, two_stores, component_image
):
    # Issue 89, finding 3: the ConfigMap's provider session goes to the root's bucket alone
    # (config/env.go:118-160, launcher_v2.go:1026-1038); the pods' own keys are another
    # store's, which the root's store refuses.
    aws, own = two_stores
    cluster = _shipped_cluster(aws, own, aws[1])
    root = yaml.safe_load(SHIPPED_LAUNCHER.read_text())["data"]["defaultPipelineRoot"]
    package = _package(tmp_path, component_image, {})
    records = run_as_cluster(package, cluster, root, tmp_path)
    out_uri, metadata = records["producer"].outputs["out"]
    assert out_uri.startswith(f"{root}/contract/")
    assert "the data" in cluster.stores.read_text(out_uri)
    session = json.loads(metadata["store_session_info"])
    assert session["Provider"] == "s3"
    assert session["Params"]["secretName"] == SHIPPED_SECRET
    assert session["Params"]["endpoint"] == "s3.amazonaws.com"


@pytest.mark.parametrize("keys, refusal", [
    (None, "failed to get Bucket credentials from secret name='tfrecord-pipelines-s3-credentials'"),
    ("the pod's", "InvalidAccessKeyId"),
])  # fmt: skip
def test_the_roots_session_with_a_missing_secret_or_another_stores_keys_fails(
    tmp_path, two_stores, component_image, keys, refusal
):
    aws, own = two_stores
    cluster = _shipped_cluster(aws, own, own[1] if keys else None)
    root = yaml.safe_load(SHIPPED_LAUNCHER.read_text())["data"]["defaultPipelineRoot"]
    with pytest.raises(TaskFailed, match="failed to upload output artifact") as e:
        run_as_cluster(_package(tmp_path, component_image, {}), cluster, root, tmp_path)
    assert refusal in str(e.value)


def test_each_bucket_gets_the_session_the_launcher_gives_it():
    # launcher_v2.go:1026-1038: the root's scheme and bucket, any prefix, get its session.
    root = BucketConfig.of_pipeline_root("minio://mlpipeline/v2/artifacts/p/run")
    session = root_session("minio://mlpipeline/v2/artifacts", None, "2.16")
    assert session_for("minio://mlpipeline/other-run/x", root, session) is session
    assert session_for("s3://mlpipeline/x", root, session) is None
    assert session_for("minio://another/x", root, session) is None


@pytest.mark.parametrize("release, endpoint", [
    ("2.14", "minio-service.kubeflow:9000"), ("2.15", "minio-service.kubeflow:9000"),
    ("2.16", "seaweedfs.kubeflow:9000"),
])  # fmt: skip
def test_a_minio_root_without_a_provider_gets_its_releases_endpoint(release, endpoint):
    # config/env.go:177-193 and objectstore/config.go at each release's tag.
    params = root_session("minio://mlpipeline/v2/artifacts", {}, release)["Params"]
    assert (params["endpoint"], params["secretName"]) == (endpoint, "mlpipeline-minio-artifact")
    assert root_session("s3://b/root", {}, release)["Params"] == {"fromEnv": "true"}


def test_a_store_the_clusters_network_cannot_resolve_fails_as_dns_fails():
    session = root_session("minio://mlpipeline/v2/artifacts", None, "2.15")
    with pytest.raises(LauncherError, match="lookup minio-service.kubeflow: no such host"):
        s3_access(session, {"mlpipeline-minio-artifact": {"accesskey": "a", "secretkey": "b"}},
                  {}, {"seaweedfs.kubeflow:9000": "http://127.0.0.1:1"})  # fmt: skip


def test_a_provider_with_overrides_and_no_default_is_refused_as_s3_go_refuses_it():
    # config/s3.go ProvideSessionInfo: a provider with Overrides needs the default's credentials.
    config = {"providers": yaml.safe_dump({"s3": {"Overrides": [{"bucketName": "b"}]}})}
    with pytest.raises(LauncherError, match="invalid provider config: missing default credentials"):
        root_session("s3://b/root", config, "2.16")
    assert root_session("s3://b/root", {"providers": "s3: {}"}, "2.16")["Params"] == {
        "fromEnv": "true"
    }
