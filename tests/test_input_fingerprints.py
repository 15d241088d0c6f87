"""InputFingerprints (issue 89, finding 1): the compiled pipeline hands each cached task that
reads files by path a fingerprint of those files, as a parameter in KFP's cache key, and the
fingerprint changes exactly when the files do. The cluster runs are test_cluster_cache's."""

from __future__ import annotations

import json
import os
import shutil

import pytest
import yaml

from conftest import REPO_ROOT, run_cli
from tfrecord_pipelines.kubeflow import input_fingerprints
from tfrecord_pipelines.kubeflow.fingerprint_task import fingerprints

FINGERPRINTED = ("ImportSchemaGen", "ShardedExampleGen")


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    package = tmp_path_factory.mktemp("compiled") / "penguins.yaml"
    compiled = run_cli("compile", "--output", str(package))
    assert compiled.returncode == 0, compiled.stderr[-2000:]
    return next(yaml.safe_load_all(package.read_text()))


def test_the_fingerprint_task_is_never_cached_and_gets_each_tasks_paths(spec):
    tasks = spec["root"]["dag"]["tasks"]
    task = tasks[input_fingerprints.TASK]
    assert not task["cachingOptions"].get("enableCache")
    given = task["inputs"]["parameters"]
    assert (
        given["ShardedExampleGen__input_base"]
        == (tasks["ShardedExampleGen"]["inputs"]["parameters"]["input_base"])
    )
    assert (
        given["ImportSchemaGen__schema_file"]
        == (tasks["ImportSchemaGen"]["inputs"]["parameters"]["schema_file"])
    )
    component = spec["components"][input_fingerprints.TASK]
    assert sorted(component["outputDefinitions"]["parameters"]) == list(FINGERPRINTED)


def test_each_task_reading_by_path_takes_its_fingerprint_into_its_cache_key(spec):
    tasks = spec["root"]["dag"]["tasks"]
    for name in FINGERPRINTED:
        task = tasks[name]
        assert task["cachingOptions"] == {"enableCache": True}, name
        assert task["inputs"]["parameters"][input_fingerprints.FINGERPRINT] == {
            "taskOutputParameter": {
                "producerTask": input_fingerprints.TASK, "outputParameterKey": name,
            }
        }  # fmt: skip
        assert input_fingerprints.TASK in task["dependentTasks"], name
        component = spec["components"][task["componentRef"]["name"]]
        assert input_fingerprints.FINGERPRINT in component["inputDefinitions"]["parameters"]
    readers = {n for n, t in tasks.items() if input_fingerprints.FINGERPRINT in
               t.get("inputs", {}).get("parameters", {})}  # fmt: skip
    assert readers == set(FINGERPRINTED)


def test_no_cache_compiles_no_fingerprint_task(tmp_path):
    package = tmp_path / "penguins.yaml"
    compiled = run_cli("compile", "--no-cache", "--output", str(package))
    assert compiled.returncode == 0, compiled.stderr[-2000:]
    spec = next(yaml.safe_load_all(package.read_text()))
    assert input_fingerprints.TASK not in spec["root"]["dag"]["tasks"]


def _parameters(data: str, schema: str) -> dict[str, str]:
    return {
        "ShardedExampleGen__input_base": data,
        "ShardedExampleGen__input_config": json.dumps(
            {"splits": [{"name": "single_split", "pattern": "*.csv"}]}
        ),
        "ShardedExampleGen__requested_span": "",
        "ImportSchemaGen__schema_file": schema,
    }


def test_a_fingerprint_changes_when_the_files_do_and_only_then(tmp_path):
    data, schema = tmp_path / "data", tmp_path / "schema.pbtxt"
    data.mkdir()
    shutil.copy(REPO_ROOT / "data" / "penguins" / "penguins.csv", data / "penguins.csv")
    shutil.copy(REPO_ROOT / "schemas" / "penguins" / "schema.pbtxt", schema)
    parameters = _parameters(str(data), str(schema))
    first = fingerprints(parameters)
    assert sorted(first) == list(FINGERPRINTED)
    assert first["ShardedExampleGen"].startswith("span:0,version:None,")
    assert first == fingerprints(parameters)
    # The CSV rewritten at the same path, to the same bytes: TFX's fingerprint is of the
    # files' sizes and modification times, so a new write is a new key.
    csv = data / "penguins.csv"
    csv.write_bytes(csv.read_bytes())
    os.utime(csv, ns=(csv.stat().st_atime_ns, csv.stat().st_mtime_ns + 10**9))
    second = fingerprints(parameters)
    assert second["ShardedExampleGen"] != first["ShardedExampleGen"]
    assert second["ImportSchemaGen"] == first["ImportSchemaGen"]
    # The schema by its bytes: a touch is no change, an edit is.
    os.utime(schema, ns=(schema.stat().st_atime_ns, schema.stat().st_mtime_ns + 10**9))
    assert fingerprints(parameters)["ImportSchemaGen"] == first["ImportSchemaGen"]
    schema.write_text(schema.read_text() + "\n# edited\n")
    assert fingerprints(parameters)["ImportSchemaGen"] != first["ImportSchemaGen"]


def test_a_missing_file_or_span_is_one_line_naming_it(tmp_path):
    (tmp_path / "data").mkdir()
    with pytest.raises(ValueError, match="nothing matches .*data/\\*.csv"):
        parameters = _parameters(str(tmp_path / "data"), "")
        fingerprints({k: v for k, v in parameters.items() if k.startswith("ShardedExampleGen")})
    with pytest.raises(ValueError, match="schema.pbtxt does not exist: nothing to fingerprint"):
        fingerprints({"ImportSchemaGen__schema_file": str(tmp_path / "schema.pbtxt")})
