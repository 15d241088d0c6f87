"""The cluster-like harness refuses what KFP's launcher refuses (issue 75), on tasks of the
component image whose commands do one thing each: a contract test of the launcher, run
through ``cluster_runs`` against moto (checking keys, as MinIO does).

Each rule's launcher line is in ``launcher_rules``. On a0fe6a3 the harness took every
case below: it skipped an input at a local path, uploaded anywhere, handed metadata on
verbatim, gave claims to the image's user, and dropped a failed command's logs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cluster_jobs import run_job
from cluster_runs import Cluster, TaskFailed, new_claim, run_as_cluster
from launcher_rules import BucketConfig, LauncherError, downloaded_path
from launcher_stores import ObjectStores
from object_store_servers import authenticated_s3_server

from conftest import REPO_ROOT

pytestmark = pytest.mark.image

ROOT = "minio://mlpipeline/v2/artifacts"
CLAIM = "tfrecord-pipelines-serving"
MOUNT = "/pipeline/serving_model"
# The producer's command: writes a file at its output's local path, then the executor output
# that the test's settings ask for (the output's URI and metadata), or exits 1.
PRODUCER = """
import json, os, sys
executor_input = json.loads(sys.argv[1])
settings = json.loads(sys.argv[2])
[out] = executor_input["outputs"]["artifacts"]["out"]["artifacts"]
local = "/minio/" + out["uri"][len("minio://"):]
os.makedirs(os.path.dirname(local), exist_ok=True)
open(local, "w").write("the data\\n")
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


def _package(folder: Path, image: str, settings: dict, mount: bool = False) -> Path:
    """A two-task pipeline: the producer, as ``settings`` ask, then its consumer."""
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
    documents = [spec]
    if mount:
        pvc = {"pvcNameParameter": {"runtimeValue": {"constant": CLAIM}}, "mountPath": MOUNT}
        documents.append({"platforms": {"kubernetes": {"deploymentSpec": {"executors": {
            "exec-producer": {"pvcMount": [pvc]}}}}}})  # fmt: skip
    package = folder / "contract.yaml"
    package.write_text(yaml.safe_dump_all(documents))
    return package


def _run(tmp_path, store, image, settings, claims=None, mount=False):
    tmp_path.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(store, claims or {})
    package = _package(tmp_path, image, settings, mount)
    return cluster, run_as_cluster(package, cluster, ROOT, tmp_path)


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
    assert "does not have expected bucket prefix 'minio://mlpipeline/v2/artifacts'" in str(e.value)


def test_an_input_object_whose_key_climbs_out_fails_the_download(tmp_path, store, component_image):
    # DownloadBlob refuses a listed key with a '..' component before writing anything
    # (objectstore/object_store.go:146-148); the launcher fails the consumer's download.
    out = f"{ROOT}/contract/dots/out"
    planted = tmp_path / "planted.txt"
    planted.write_text("outside the input's folder\n")
    store.upload(planted, f"{out}/../evil")
    with pytest.raises(TaskFailed, match="failed to download input artifact 'data'") as e:
        _run(tmp_path / "run", store, component_image, {"uri": out})
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
