"""The compiled Kubeflow tasks run from their container commands, as KFP open source runs them.

The spec is compiled once; the first tasks of its DAG (ImportSchemaGen,
ShardedExampleGen, StatisticsGen, ExampleValidator) then run one by one from
the command and args in ``deploymentSpec.executors``, given the ExecutorInput
that KFP's driver builds (upstream artifacts with an empty instanceSchema,
local URIs), and their artifacts are checked and chained into the next task.
The repair functions of ``pipelines.kfp_executor`` are tested directly.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from google.protobuf import json_format, text_format
from kfp.pipeline_spec import pipeline_spec_pb2
from kfp_executor_input import KfpTaskRunner, TaskRun, count_tfrecords
from tensorflow_metadata.proto.v0 import anomalies_pb2, schema_pb2, statistics_pb2

from conftest import REPO_ROOT, run_cli
from pipelines import kfp_executor

ENTRY_POINT = ["python", "-m", "pipelines.kfp_executor"]
EXAMPLES_SCHEMA = "title: tfx.Examples\ntype: object\n"
QUARANTINE_TITLE = "tfrecord_pipelines.Quarantine"
QUARANTINE_CLASS = "components.example_gen.component.Quarantine"


def _executor_input(as_json: dict) -> pipeline_spec_pb2.ExecutorInput:
    return json_format.ParseDict(as_json, pipeline_spec_pb2.ExecutorInput())


def _untyped_examples_input(uri: str = "/data/examples") -> pipeline_spec_pb2.ExecutorInput:
    """An ExecutorInput as KFP's driver builds it: the upstream input has no schema."""
    return _executor_input(
        {
            "inputs": {
                "artifacts": {
                    "examples": {
                        "artifacts": [
                            {
                                "name": "7",
                                "type": {"instanceSchema": ""},
                                "uri": uri,
                                "metadata": {"split_names": '["train", "eval"]'},
                            }
                        ]
                    }
                }
            },
            "outputs": {
                "artifacts": {
                    "quarantine": {
                        "artifacts": [
                            {
                                "uri": "/root/quarantine",
                                "type": {"instanceSchema": f"title: {QUARANTINE_TITLE}\n"},
                            }
                        ]
                    },
                    "executor-logs": {
                        "artifacts": [
                            {"uri": "/root/logs", "type": {"schemaTitle": "system.Artifact"}}
                        ]
                    },
                },
                "outputFile": "/tmp/kfp_outputs/output_metadata.json",
            },
        }
    )


def _inputs_spec() -> pipeline_spec_pb2.ComponentInputsSpec:
    return json_format.ParseDict(
        {"artifacts": {"examples": {"artifactType": {"instanceSchema": EXAMPLES_SCHEMA}}}},
        pipeline_spec_pb2.ComponentInputsSpec(),
    )


def test_repair_types_an_untyped_input_from_the_inputs_spec():
    original = _untyped_examples_input()

    repaired = kfp_executor.repair_executor_input(original, _inputs_spec(), {})

    examples = repaired.inputs.artifacts["examples"].artifacts[0]
    assert examples.type.instance_schema == EXAMPLES_SCHEMA
    assert examples.uri == "/data/examples"
    assert examples.metadata["split_names"] == '["train", "eval"]'
    assert original.inputs.artifacts["examples"].artifacts[0].type.instance_schema == ""


def test_repair_points_custom_type_titles_at_their_classes():
    repaired = kfp_executor.repair_executor_input(
        _untyped_examples_input(), _inputs_spec(), kfp_executor.project_artifact_class_paths()
    )

    quarantine = repaired.outputs.artifacts["quarantine"].artifacts[0]
    assert quarantine.type.WhichOneof("kind") == "schema_title"
    assert quarantine.type.schema_title == QUARANTINE_CLASS
    assert "executor-logs" not in repaired.outputs.artifacts


def test_repair_rejects_an_untyped_input_the_spec_does_not_type():
    with pytest.raises(ValueError, match=r"Input artifact 'examples' has no type.*inputs_spec"):
        kfp_executor.repair_executor_input(_untyped_examples_input(), None, {})


def test_launcher_local_paths_replace_s3_and_minio_uris_and_come_back():
    executor_input = _untyped_examples_input(uri="minio://mlpipeline/v2/artifacts/run/gen/examples")
    executor_input.outputs.artifacts["quarantine"].artifacts[0].uri = "s3://bucket/run/quarantine"
    executor_input.outputs.artifacts["schema"].artifacts.add(uri="gs://bucket/run/schema")

    local_to_remote = kfp_executor.localize_artifact_uris(executor_input)

    assert executor_input.inputs.artifacts["examples"].artifacts[0].uri == (
        "/minio/mlpipeline/v2/artifacts/run/gen/examples"
    )
    assert executor_input.outputs.artifacts["quarantine"].artifacts[0].uri == (
        "/s3/bucket/run/quarantine"
    )
    assert executor_input.outputs.artifacts["schema"].artifacts[0].uri == "gs://bucket/run/schema"
    executor_output = pipeline_spec_pb2.ExecutorOutput()
    executor_output.artifacts["quarantine"].artifacts.add(uri="/s3/bucket/run/quarantine")
    executor_output.artifacts["schema"].artifacts.add(uri="gs://bucket/run/schema")
    kfp_executor.restore_remote_uris(executor_output, local_to_remote)
    assert executor_output.artifacts["quarantine"].artifacts[0].uri == "s3://bucket/run/quarantine"
    assert executor_output.artifacts["schema"].artifacts[0].uri == "gs://bucket/run/schema"


def test_tfx_parser_fails_on_the_driver_input_and_reads_the_repaired_one():
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils
    from tfx.types import standard_artifacts

    from components.example_gen.component import Quarantine

    driver_input = _untyped_examples_input()
    with pytest.raises(AttributeError, match="NoneType"):
        kubeflow_v2_entrypoint_utils.parse_raw_artifact_dict(driver_input.inputs.artifacts)
    with pytest.raises(ImportError, match="tfrecord_pipelines.Quarantine"):
        kubeflow_v2_entrypoint_utils.parse_raw_artifact_dict(
            {"quarantine": driver_input.outputs.artifacts["quarantine"]}
        )

    repaired = kfp_executor.repair_executor_input(
        driver_input, _inputs_spec(), kfp_executor.project_artifact_class_paths()
    )

    [examples] = kubeflow_v2_entrypoint_utils.parse_raw_artifact_dict(repaired.inputs.artifacts)[
        "examples"
    ]
    assert isinstance(examples, standard_artifacts.Examples)
    assert examples.split_names == '["train", "eval"]'
    [quarantine] = kubeflow_v2_entrypoint_utils.parse_raw_artifact_dict(repaired.outputs.artifacts)[
        "quarantine"
    ]
    assert isinstance(quarantine, Quarantine)


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> KfpTaskRunner:
    """The compiled spec's task runner. Data and schema are copies outside the
    repository, so compile keeps their local paths (it points the bundled ones
    at their place in the image)."""
    folder = tmp_path_factory.mktemp("kfp_tasks")
    data = shutil.copytree(REPO_ROOT / "data" / "penguins", folder / "data" / "penguins")
    schema = shutil.copy(REPO_ROOT / "schemas" / "penguins" / "schema.pbtxt", folder)
    compiled = run_cli(
        "compile",
        *("--data", str(data), "--label", "species", "--schema", str(schema)),
        *("--output", str(folder / "p.yaml")),
    )
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    runner = KfpTaskRunner(folder / "p.yaml", folder / "pipeline_root", cwd=REPO_ROOT)
    input_base = runner.task_spec("ShardedExampleGen")["inputs"]["parameters"]["input_base"]
    assert input_base["runtimeValue"]["constant"] == str(data)
    return runner


def _succeeded(runner: KfpTaskRunner, task: str) -> TaskRun:
    """Runs TASK (once per module) and checks what KFP's launcher checks."""
    run = runner.run(task)
    assert run.process.returncode == 0, run.process.stderr[-5000:]
    assert run.executor_output is not None
    outputs = runner.component(task)["outputDefinitions"]["artifacts"]
    assert set(run.executor_output.artifacts) == set(outputs)
    for name in outputs:
        [reported] = run.executor_output.artifacts[name].artifacts
        assert reported.uri == run.output_uri(name)
        assert Path(reported.uri).is_dir()
    return run


def _curated_schema(runner: KfpTaskRunner) -> schema_pb2.Schema:
    path = runner.task_spec("ImportSchemaGen")["inputs"]["parameters"]["schema_file"]
    return text_format.Parse(
        Path(path["runtimeValue"]["constant"]).read_text(), schema_pb2.Schema()
    )


def _feature_names(schema: schema_pb2.Schema) -> set[str]:
    return {feature.name for feature in schema.feature}


def _split_records(examples_uri: str, split: str) -> int:
    shards = sorted(Path(examples_uri, f"Split-{split}").glob("data_tfrecord-*"))
    assert shards, f"no shards in Split-{split}"
    return sum(count_tfrecords(shard) for shard in shards)


def test_every_executor_runs_this_entry_point(runner):
    for task in ("ImportSchemaGen", "ShardedExampleGen", "StatisticsGen", "Trainer", "Pusher"):
        container = runner.container(task)
        assert container["command"] == ENTRY_POINT
        assert "{{$}}" in container["args"]
        assert "--json_serialized_inputs_spec_args" in container["args"]


def test_import_schema_gen_task_writes_the_curated_schema(runner):
    run = _succeeded(runner, "ImportSchemaGen")

    schema = text_format.Parse(
        Path(run.output_uri("schema"), "schema.pbtxt").read_text(), schema_pb2.Schema()
    )
    assert _feature_names(schema) == _feature_names(_curated_schema(runner))
    assert "species" in _feature_names(schema)


def test_example_gen_task_writes_split_shards_from_the_data_folder(runner):
    run = _succeeded(runner, "ShardedExampleGen")

    examples = run.output_metadata("examples")
    split_names = json.loads(examples["split_names"])
    assert split_names == ["train", "eval"]
    counts = {split: _split_records(run.output_uri("examples"), split) for split in split_names}
    assert all(count > 0 for count in counts.values()), counts
    assert sum(counts.values()) == examples["records_written"]
    csv = Path(run.executor_input["inputs"]["parameterValues"]["input_base"], "penguins.csv")
    data_rows = len(csv.read_text().splitlines()) - 1
    assert examples["records_written"] + examples["quarantined_count"] == data_rows
    # Set by TFX's file-based ExampleGen driver, which KFP open source does not run.
    assert examples["input_fingerprint"].startswith("split:single_split,num_files:1,")
    assert run.output_metadata("quarantine")["count"] == examples["quarantined_count"]


def test_statistics_gen_task_reads_the_upstream_examples(runner):
    examples_run = _succeeded(runner, "ShardedExampleGen")
    run = _succeeded(runner, "StatisticsGen")

    [examples_input] = run.executor_input["inputs"]["artifacts"]["examples"]["artifacts"]
    assert examples_input["type"] == {"instanceSchema": ""}
    assert examples_input["uri"] == examples_run.output_uri("examples")
    for split in ("train", "eval"):
        stats = statistics_pb2.DatasetFeatureStatisticsList.FromString(
            Path(run.output_uri("statistics"), f"Split-{split}", "FeatureStats.pb").read_bytes()
        )
        [dataset] = stats.datasets
        assert dataset.num_examples == _split_records(examples_run.output_uri("examples"), split)
        names = {".".join(feature.path.step) for feature in dataset.features}
        assert names == _feature_names(_curated_schema(runner))


def test_example_validator_task_finds_no_anomalies(runner):
    _succeeded(runner, "ImportSchemaGen")
    _succeeded(runner, "StatisticsGen")
    run = _succeeded(runner, "ExampleValidator")

    assert run.output_metadata("anomalies")["blessed"] == {"train": 1, "eval": 1}
    for split in ("train", "eval"):
        anomalies = anomalies_pb2.Anomalies.FromString(
            Path(run.output_uri("anomalies"), f"Split-{split}", "SchemaDiff.pb").read_bytes()
        )
        assert dict(anomalies.anomaly_info) == {}
        assert _feature_names(anomalies.baseline) == _feature_names(_curated_schema(runner))
