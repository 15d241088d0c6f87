"""The compiled one-shot pipeline run three times as a cluster runs it, with KFP's cache
(issue 89, finding 1): a cache that follows the data.

KFP open source keys a task's cache on its input artifacts' ids, its parameters, image,
command and arguments (``kfp_cache``, a contract test of cache.go), not on the files a
path names. ShardedExampleGen's and ImportSchemaGen's inputs are paths; the compiled
pipeline's InputFingerprints task, never cached, hands each its fingerprint of the files
(``input_fingerprints``). On KFP's defaults (the pipeline root in MinIO, moto standing in,
checking keys, served as KFP 2.16's ``seaweedfs.kubeflow:9000``, an endpoint the compiled
pipeline does not name: each task finds it as the launcher does, ``root_store``), with the
data and its schema in GCS (fake-gcs-server):

1. the first run runs every task;
2. the same pipeline again, unchanged: every cached task is a hit, handed the first run's
   artifacts, and only InputFingerprints runs;
3. after the CSV at the data's path is rewritten with more rows: ShardedExampleGen and
   every task after it run again, and its examples hold the new rows; ImportSchemaGen,
   whose file did not change, is still a hit.
"""

from __future__ import annotations

import json
import shutil

import pytest
from cluster_runs import Cluster, run_as_cluster
from launcher_sessions import RELEASE_ENDPOINTS
from launcher_stores import ObjectStores
from object_store_servers import authenticated_s3_server, gcs_server

from conftest import REPO_ROOT, run_cli
from tfrecord_pipelines.kubeflow import input_fingerprints

pytestmark = [pytest.mark.e2e, pytest.mark.image]

ROOT = "minio://mlpipeline/v2/artifacts"
SECRET = "mlpipeline-minio-artifact"
DATA = "gs://tables/penguins"
SCHEMA = "gs://tables/schemas/penguins.pbtxt"
CSV = REPO_ROOT / "data" / "penguins" / "penguins.csv"
# What InputFingerprints hands on, and what only a change of the data runs again.
FINGERPRINTED = ("ImportSchemaGen", "ShardedExampleGen")


def _records(run: dict, split: str) -> int:
    _, metadata = run["ShardedExampleGen"].outputs["examples"]
    return json.loads(metadata["shard_plan"])["splits"][split]["records"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, component_image, docker_api):
    """The three runs' task records, by run: "first", "unchanged", "rewritten"."""
    buckets = tmp_path_factory.mktemp("gcs")
    (buckets / "tables" / "penguins").mkdir(parents=True)
    (buckets / "tables" / "schemas").mkdir()
    shutil.copy(CSV, buckets / "tables" / "penguins" / "penguins.csv")
    shutil.copy(REPO_ROOT / "schemas" / "penguins" / "schema.pbtxt",
                buckets / "tables" / "schemas" / "penguins.pbtxt")  # fmt: skip
    (buckets / "models").mkdir()
    (buckets / "models" / "README").write_text("serving folders\n")
    s3 = tmp_path_factory.mktemp("s3")
    (s3 / "mlpipeline").mkdir()
    (s3 / "mlpipeline" / "README").write_text("KFP's artifacts\n")
    folder = tmp_path_factory.mktemp("runs")
    package = folder / "penguins.yaml"
    # KFP 2.16's store: its Service's name and port, which the compiled pipeline does not name.
    service = RELEASE_ENDPOINTS["2.16"]
    with gcs_server(buckets) as gcs_url, authenticated_s3_server(s3, service) as (s3_url, keys):
        compiled = run_cli(
            "compile", "--data", DATA, "--schema", SCHEMA, "--label", "species",
            "--train-steps", "20", "--min-accuracy", "0", "--serving-dir", "gs://models/serving",
            "--image", component_image, "--gpus", "0", "--output", str(package),
            env={"STORAGE_EMULATOR_HOST": gcs_url},
        )  # fmt: skip
        assert compiled.returncode == 0, compiled.stderr[-3000:]
        assert "TFRECORD_PIPELINES_ARTIFACT_ENDPOINT" not in package.read_text()
        stores = ObjectStores(gcs_url, s3_url, keys)
        secrets = {SECRET: {"accesskey": keys[0], "secretkey": keys[1]}}
        cluster = Cluster(
            stores, {}, secrets, {"STORAGE_EMULATOR_HOST": gcs_url}, services={service: s3_url}
        )
        found = {}
        for name in ("first", "unchanged"):
            found[name] = run_as_cluster(package, cluster, ROOT, folder / name)
        # The same path, new bytes: every row once more, as a day's late rows would come.
        rows = CSV.read_text().splitlines()
        rewritten = folder / "penguins.csv"
        rewritten.write_text("\n".join(rows + rows[1:]) + "\n")
        stores.upload(rewritten, f"{DATA}/penguins.csv")
        found["rewritten"] = run_as_cluster(package, cluster, ROOT, folder / "rewritten")
    return found


def test_the_first_run_runs_every_task(runs):
    assert not [task for task, record in runs["first"].items() if record.cached]


def test_an_unchanged_rerun_hits_the_cache_for_every_cached_task(runs):
    first, again = runs["first"], runs["unchanged"]
    ran = sorted(task for task, record in again.items() if not record.cached)
    assert ran == [input_fingerprints.TASK]
    for task in FINGERPRINTED:
        fingerprint = again[input_fingerprints.TASK].parameters[task].string_value
        assert fingerprint == first[input_fingerprints.TASK].parameters[task].string_value
    for task, record in again.items():
        if record.cached:
            assert record.output_ids == first[task].output_ids, task


def test_a_rewritten_csv_runs_example_gen_and_every_task_after_it(runs):
    first, rewritten = runs["first"], runs["rewritten"]
    ran = {task for task, record in rewritten.items() if not record.cached}
    assert ran == set(rewritten) - {"ImportSchemaGen"}
    for split in ("train", "eval"):
        assert _records(rewritten, split) > _records(first, split), split
    assert _records(rewritten, "train") + _records(rewritten, "eval") == 2 * (
        _records(first, "train") + _records(first, "eval")
    )
    # The Trainer read the new examples: the artifact the new ExampleGen wrote.
    examples = rewritten["ShardedExampleGen"].output_ids["examples"]
    assert rewritten["Trainer"].executor_input.inputs.artifacts["examples"].artifacts[
        0
    ].name == str(examples)


def test_with_no_endpoint_compiled_each_task_reaches_the_store_the_launcher_reaches(runs):
    # Issue 89, finding 4: ExampleGen, with no input, found KFP 2.16's Service; the Trainer
    # took the launcher's own record on its inputs; both read and wrote the store themselves.
    first = runs["first"]
    example_gen = first["ShardedExampleGen"]
    assert "as the launcher reaches it: http://seaweedfs.kubeflow:9000" in example_gen.logs
    assert "launcher's copy" not in example_gen.logs
    assert not [p for p, _ in first["Trainer"].staged if "Split-train" in p]
    assert "as the launcher reaches it: http://seaweedfs.kubeflow:9000" in first["Trainer"].logs
