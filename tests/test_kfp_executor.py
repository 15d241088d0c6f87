"""What ``tfrecord_pipelines.kubeflow.kfp_executor`` repairs in KFP open source's ExecutorInput.

These are the cases kfp.local does not produce: an output the launcher adds
(``executor-logs``), a custom type's title, an input the inputs spec does not
type, and the launcher's s3:// and minio:// paths. The whole compiled DAG runs
through the entry point in ``test_kfp_local_dag.py``.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pytest
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from tfrecord_pipelines.kubeflow import kfp_executor

EXAMPLES_SCHEMA = "title: tfx.Examples\ntype: object\n"
QUARANTINE_TITLE = "tfrecord_pipelines.Quarantine"
QUARANTINE_CLASS = "tfrecord_pipelines.components.example_gen.component.Quarantine"


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


def test_launcher_local_paths_replace_gcs_s3_and_minio_uris_and_come_back():
    # Issue 75, finding 6: the launcher uploads a gs:// output from /gcs/... as it does a
    # minio:// one from /minio/... (launcher_v2.go:811-824, 1240-1241).
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
    assert executor_input.outputs.artifacts["schema"].artifacts[0].uri == "/gcs/bucket/run/schema"
    executor_output = pipeline_spec_pb2.ExecutorOutput()
    executor_output.artifacts["quarantine"].artifacts.add(uri="/s3/bucket/run/quarantine")
    executor_output.artifacts["schema"].artifacts.add(uri="/gcs/bucket/run/schema")
    kfp_executor.restore_remote_uris(executor_output, local_to_remote)
    assert executor_output.artifacts["quarantine"].artifacts[0].uri == "s3://bucket/run/quarantine"
    assert executor_output.artifacts["schema"].artifacts[0].uri == "gs://bucket/run/schema"


def test_tfx_parser_fails_on_the_driver_input_and_reads_the_repaired_one():
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils
    from tfx.types import standard_artifacts

    from tfrecord_pipelines.components.example_gen.component import Quarantine

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


def _with_parameters(**values: str) -> pipeline_spec_pb2.ExecutorInput:
    return _executor_input(
        {"inputs": {"parameterValues": values}, "outputs": {"outputFile": "/tmp/output.json"}}
    )


def test_the_span_a_run_asks_for_becomes_tfx_drivers_range_config():
    executor_input = _with_parameters(requested_span="2026-11-25", input_base="gs://b/events")
    kfp_executor.request_span_parameter(executor_input)
    values = executor_input.inputs.parameter_values
    day = (datetime.date(2026, 11, 25) - datetime.date(1970, 1, 1)).days
    assert json.loads(values["range_config"].string_value) == {
        "static_range": {"start_span_number": day, "end_span_number": day}
    }
    latest = _with_parameters(requested_span="latest", input_base="gs://b/events")
    kfp_executor.request_span_parameter(latest)
    assert "range_config" not in latest.inputs.parameter_values


def test_an_input_that_stands_for_others_is_replaced_by_them():
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils
    from tfx.types import standard_artifacts

    from tfrecord_pipelines.components.spans.artifacts import span_of

    members = []
    for span in (2, 3):
        examples = standard_artifacts.Examples()
        examples.uri = f"/root/day-{span}/examples"
        examples.set_int_custom_property("span", span)
        members.append(examples.to_json_dict())
    executor_input = _executor_input(
        {
            "inputs": {
                "artifacts": {
                    "examples": {
                        "artifacts": [
                            {
                                "name": "41",
                                "type": {"schemaTitle": "tfx.types.standard_artifacts.Examples"},
                                "uri": "/root/run/SpanWindow/window",
                                "metadata": {"members": json.dumps(members)},
                            }
                        ]
                    },
                    "base_model": {
                        "artifacts": [
                            {
                                "name": "42",
                                "type": {"schemaTitle": "tfx.types.standard_artifacts.Model"},
                                "uri": "/root/run/SpanWindow/base_model",
                                "metadata": {"members": "[]"},
                            }
                        ]
                    },
                }
            }
        }
    )
    kfp_executor.expand_members(executor_input)
    window = executor_input.inputs.artifacts["examples"].artifacts
    assert [a.uri for a in window] == ["/root/day-2/examples", "/root/day-3/examples"]
    assert {a.type.schema_title for a in window} == {"tfx.types.standard_artifacts.Examples"}
    # TFX's entry point reads them back as the artifacts they were.
    parsed = kubeflow_v2_entrypoint_utils.parse_raw_artifact_dict(executor_input.inputs.artifacts)
    assert [span_of(a) for a in parsed["examples"]] == [2, 3]
    # An earlier model that does not exist yet (a first day): no artifact at all.
    assert list(executor_input.inputs.artifacts["base_model"].artifacts) == []


def _example_gen_input(**parameters) -> pipeline_spec_pb2.ExecutorInput:
    return _executor_input(
        {"inputs": {"parameterValues": parameters}, "outputs": {"artifacts": {}}}
    )


def test_a_conversions_key_is_its_settings_not_its_span():
    from tfrecord_pipelines.components.daily.conversion_reuse import conversion_key

    settings = {"input_base": "gs://b/events", "compression": "gzip", "code_version": "abc"}
    today = conversion_key(_example_gen_input(**settings, requested_span="latest"))
    # The span as a run asked for it is not how it is converted.
    assert conversion_key(_example_gen_input(**settings, requested_span="2")) == today
    for changed in ({"compression": "none"}, {"code_version": "abd"}):
        assert conversion_key(_example_gen_input(**{**settings, **changed})) != today


def _window_in_minio() -> pipeline_spec_pb2.ExecutorInput:
    """Day 2's Trainer input as KFP's driver hands it over with the pipeline root in MinIO:
    SpanWindow's reference, standing for day 1's conversion (issue 63, finding 2)."""
    from tfx.types import standard_artifacts

    day_1 = standard_artifacts.Examples()
    day_1.uri = "minio://mlpipeline/v2/artifacts/events/run-day1/ShardedExampleGen/examples"
    day_1.set_int_custom_property("span", 1)
    reference = {
        "name": "41",
        "type": {"schemaTitle": "tfx.types.standard_artifacts.Examples"},
        "uri": "minio://mlpipeline/v2/artifacts/events/run-day2/SpanWindow/window",
        "metadata": {"members": json.dumps([day_1.to_json_dict()])},
    }
    return _executor_input({"inputs": {"artifacts": {"examples": {"artifacts": [reference]}}}})


def test_an_earlier_runs_artifact_in_minio_is_read_from_the_store_not_an_unstaged_copy():
    executor_input = _window_in_minio()
    kfp_executor.locate_inputs(executor_input, "http://minio-service.kubeflow:9000")
    [member] = executor_input.inputs.artifacts["examples"].artifacts
    # The launcher staged only .../run-day2/SpanWindow/window: /minio/.../run-day1/... is not
    # in the pod. MinIO speaks S3, which TensorFlow reads through the endpoint.
    assert member.uri == "s3://mlpipeline/v2/artifacts/events/run-day1/ShardedExampleGen/examples"


def test_an_earlier_runs_artifact_in_minio_without_an_endpoint_is_one_line():
    with pytest.raises(ValueError, match="--artifact-secret") as raised:
        kfp_executor.locate_inputs(_window_in_minio(), None)
    assert "\n" not in str(raised.value)
    assert "run-day1/ShardedExampleGen/examples" in str(raised.value)


def test_an_artifact_read_through_s3_is_named_as_kfp_names_it():
    from tfrecord_pipelines.components.storage.launcher_copies import remote_uri

    executor_input = _window_in_minio()
    kfp_executor.locate_inputs(executor_input, "http://minio-service.kubeflow:9000")
    [member] = executor_input.inputs.artifacts["examples"].artifacts
    # A record (the daily state) or a comparison (this run's span?) names the minio:// URI,
    # whichever path the task read it by: a re-run of a day records no second conversion.
    assert remote_uri(member.uri) == (
        "minio://mlpipeline/v2/artifacts/events/run-day1/ShardedExampleGen/examples"
    )
    assert remote_uri(f"{member.uri}/Split-train") == (
        "minio://mlpipeline/v2/artifacts/events/run-day1/ShardedExampleGen/examples/Split-train"
    )


def _rerun_of_day_2(tmp_path) -> tuple[pipeline_spec_pb2.ExecutorInput, str]:
    """ExampleGen's ExecutorInput on a re-run of day 2 with the pipeline root in MinIO, after
    TFX's driver (span, version, fingerprint), and a daily state that recorded day 2's
    conversion by the first run."""
    from tfx.types import standard_artifacts

    from tfrecord_pipelines.components.daily import conversion_reuse, daily_state

    task = "minio://mlpipeline/v2/artifacts/events/run-again/ShardedExampleGen/0f3a"
    outputs = {}
    for name, title in (
        ("examples", "tfx.Examples"),
        ("statistics", "tfx.ExampleStatistics"),
        ("quarantine", QUARANTINE_TITLE),
    ):
        metadata = {"span": 2, "version": 0, "input_fingerprint": "day-2 files"}
        artifact = {"uri": f"{task}/{name}", "type": {"schemaTitle": title}, "metadata": metadata}
        outputs[name] = {"artifacts": [artifact]}
    executor_input = _executor_input(
        {"outputs": {"artifacts": outputs, "outputFile": str(tmp_path / "output.json")}}
    )
    executor_input = kfp_executor.repair_executor_input(
        executor_input, None, kfp_executor.project_artifact_class_paths()
    )
    first = "minio://mlpipeline/v2/artifacts/events/run-first/ShardedExampleGen/91c2"
    examples = standard_artifacts.Examples()
    examples.uri = f"{first}/examples"
    examples.span, examples.version = 2, 0
    examples.set_string_custom_property("input_fingerprint", "day-2 files")
    examples.set_string_custom_property(
        "conversion_key", conversion_reuse.conversion_key(executor_input)
    )
    statistics = standard_artifacts.ExampleStatistics()
    statistics.uri = f"{first}/statistics"
    state = str(tmp_path / "state")
    daily_state.record_conversion(state, 2, 0, examples, statistics)
    return executor_input, state


def test_a_rerun_handing_on_a_conversion_names_its_outputs_by_their_uris(tmp_path):
    # Issue 75, finding 1: the launcher records the executor output's URIs; a local copy's
    # path (/minio/...) is no bucket, and every later task's launcher fails on it.
    executor_input, state = _rerun_of_day_2(tmp_path)
    given = {n: a.artifacts[0].uri for n, a in executor_input.outputs.artifacts.items()}
    local_to_remote = kfp_executor.localize_artifact_uris(executor_input)
    assert kfp_executor.hand_on_recorded_conversion(state, executor_input, local_to_remote)
    written = json_format.Parse(
        (tmp_path / "output.json").read_text(), pipeline_spec_pb2.ExecutorOutput()
    )
    handed = {n: a.artifacts[0].uri for n, a in written.artifacts.items()}
    assert handed == given
    [member] = json.loads(written.artifacts["examples"].artifacts[0].metadata["members"])
    assert member["artifact"]["uri"].startswith("minio://mlpipeline/v2/artifacts/events/run-first/")


def test_an_earlier_runs_artifact_in_s3_without_an_endpoint_is_read_with_the_pods_role():
    # Issue 75, finding 5: an s3:// root in AWS, reached with the pod's role (no Secret, no
    # endpoint), reads its earlier runs' artifacts as they are.
    executor_input = _window_in_minio()
    [reference] = executor_input.inputs.artifacts["examples"].artifacts
    members = json.loads(reference.metadata.fields["members"].string_value)
    members[0]["artifact"]["uri"] = "s3://pipelines/root/events/run-day1/ShardedExampleGen/examples"
    reference.metadata.fields["members"].string_value = json.dumps(members)
    kfp_executor.locate_inputs(executor_input, None)
    [member] = executor_input.inputs.artifacts["examples"].artifacts
    assert member.uri == "s3://pipelines/root/events/run-day1/ShardedExampleGen/examples"


def test_the_pipeline_roots_store_is_applied_only_to_its_artifacts(monkeypatch):
    from tfrecord_pipelines.components.storage import object_stores

    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "S3_ENDPOINT", "AWS_ACCESS_KEY_ID",
                 "AWS_SECRET_ACCESS_KEY"):  # fmt: skip
        # Set, then removed: monkeypatch restores each as it was, set by the test or not.
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setattr(object_stores, "_configure_s3", lambda: None)
    monkeypatch.setenv(object_stores.ARTIFACT_ENDPOINT, "http://seaweedfs.kubeflow:9000")
    monkeypatch.setenv(object_stores.ARTIFACT_KEYS[0], "minio-key")
    monkeypatch.setenv(object_stores.ARTIFACT_KEYS[1], "minio-secret")
    # Given to the pod, the store touches none of the AWS SDKs' settings until a task reads
    # an earlier run's artifact from it.
    object_stores.configure([])
    assert object_stores.s3_endpoint() is None
    executor_input = _window_in_minio()
    kfp_executor.locate_inputs(executor_input, object_stores.artifact_store_endpoint())
    assert object_stores.s3_endpoint() == "http://seaweedfs.kubeflow:9000"
    assert os.environ["AWS_ACCESS_KEY_ID"] == "minio-key"


def _pod_with_s3_of_its_own(monkeypatch):
    """A pod given the root's store (MinIO, its keys) and, by its namespace, another S3 store's
    endpoint, keys and session token, as a PodDefault gives them."""
    from tfrecord_pipelines.components.storage import object_stores

    for name in ("AWS_ENDPOINT_URL_S3", "S3_ENDPOINT"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setattr(object_stores, "_configure_s3", lambda: None)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://s3.eu-west-1.amazonaws.com")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "data-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "data-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "data-token")
    monkeypatch.setenv(object_stores.ARTIFACT_ENDPOINT, "http://seaweedfs.kubeflow:9000")
    monkeypatch.setenv(object_stores.ARTIFACT_KEYS[0], "minio-key")
    monkeypatch.setenv(object_stores.ARTIFACT_KEYS[1], "minio-secret")
    return object_stores


def test_a_task_naming_s3_paths_of_its_own_keeps_its_store_and_says_the_roots_is_out_of_reach(
    monkeypatch, capsys
):
    # SpanWindow lists the data's spans in the pod's own store and reads only the metadata
    # of the root's artifacts it is handed; a task that read one would fail on it, told why.
    object_stores = _pod_with_s3_of_its_own(monkeypatch)
    monkeypatch.setattr(object_stores, "_said_out_of_reach", False)
    kfp_executor.locate_inputs(
        _window_in_minio(), object_stores.artifact_store_endpoint(), ["s3://lake/day-{SPAN}"]
    )
    assert os.environ["AWS_ACCESS_KEY_ID"] == "data-key"
    assert os.environ["AWS_ENDPOINT_URL"] == "https://s3.eu-west-1.amazonaws.com"
    assert "S3_ENDPOINT" not in os.environ
    [said] = capsys.readouterr().out.splitlines()
    assert "s3://lake/day-{SPAN}" in said and "out of its reach" in said


def test_a_task_naming_no_s3_path_of_its_own_reads_s3_in_the_roots_store_alone(monkeypatch, capsys):
    # Issue 89: a namespace gives every pod its data store's S3 settings; a task that reads
    # only the root's artifacts (SpanWindow, Transform, the Trainer) sets them aside, for
    # TensorFlow (S3_ENDPOINT) and Beam (the AWS SDKs' endpoint) alike.
    object_stores = _pod_with_s3_of_its_own(monkeypatch)
    kfp_executor.locate_inputs(_window_in_minio(), object_stores.artifact_store_endpoint(), [])
    for name in ("S3_ENDPOINT", "AWS_ENDPOINT_URL"):
        assert os.environ[name] == "http://seaweedfs.kubeflow:9000", name
    assert (os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]) == (
        "minio-key", "minio-secret"
    )  # fmt: skip
    assert "AWS_SESSION_TOKEN" not in os.environ
    assert "--s3_endpoint_url=http://seaweedfs.kubeflow:9000" in kfp_executor.pod_beam_args([])
    [said] = capsys.readouterr().out.splitlines()
    assert "set aside" in said and "AWS_ACCESS_KEY_ID" in said


def test_a_tasks_own_s3_paths_are_its_parameters_and_state_folder_not_its_artifacts():
    executor_input = _window_in_minio()
    parameters = executor_input.inputs.parameter_values
    parameters["input_base"].string_value = "s3://lake/events/day-2/"
    parameters["push_destination"].string_value = json.dumps(
        {"filesystem": {"base_directory": "s3://models/serving"}}
    )
    parameters["train_steps"].number_value = 20
    assert kfp_executor.task_s3_paths(executor_input, "s3://models/state") == [
        "s3://lake/events/day-2/", "s3://models/serving", "s3://models/state"
    ]  # fmt: skip
    assert kfp_executor.task_s3_paths(_window_in_minio()) == []


def test_an_earlier_runs_model_is_copied_where_the_launcher_stages_models(monkeypatch):
    # TensorFlow's checkpoint reader dies on the modular GCS file system: the warm start's
    # base model, read whole, is copied to the pod's /gcs as the launcher copies models.
    from tfx.types import standard_artifacts

    from tfrecord_pipelines.components.storage import filesystem

    copied = []
    monkeypatch.setattr(filesystem, "copy_tree", lambda source, to: copied.append((source, to)))
    model = standard_artifacts.Model()
    model.uri = "gs://kfp/v2/artifacts/events/run-day1/Trainer/5e1/model"
    reference = {
        "name": "52",
        "type": {"schemaTitle": "tfx.types.standard_artifacts.Model"},
        "uri": "gs://kfp/v2/artifacts/events/run-day2/SpanWindow/8a0/base_model",
        "metadata": {"members": json.dumps([model.to_json_dict()])},
    }
    executor_input = _executor_input(
        {"inputs": {"artifacts": {"base_model": {"artifacts": [reference]}}}}
    )
    kfp_executor.locate_inputs(executor_input, None)
    [member] = executor_input.inputs.artifacts["base_model"].artifacts
    local = "/gcs/kfp/v2/artifacts/events/run-day1/Trainer/5e1/model"
    assert copied == [(model.uri, local)]
    assert member.uri == local


def _example_gen_outputs(task: str, tmp_path) -> pipeline_spec_pb2.ExecutorInput:
    """ExampleGen's outputs under a task root in a bucket, as the driver names them."""
    outputs = {
        name: {"artifacts": [{"uri": f"{task}/{name}", "type": {"schemaTitle": title}}]}
        for name, title in (("examples", "tfx.Examples"), ("statistics", "tfx.ExampleStatistics"))
    }
    executor_input = _executor_input(
        {"outputs": {"artifacts": outputs, "outputFile": str(tmp_path / "output.json")}}
    )
    return kfp_executor.repair_executor_input(
        executor_input, None, kfp_executor.project_artifact_class_paths()
    )


def _run_executor(executor_input, tmp_path) -> None:
    """Writes the executor output TFX's entry point writes: each output at the URI it was
    given, with its metadata."""
    output = pipeline_spec_pb2.ExecutorOutput()
    for name, artifacts in executor_input.outputs.artifacts.items():
        written = output.artifacts[name].artifacts.add(uri=artifacts.artifacts[0].uri)
        written.metadata.update({"span": 3.0, "split_names": '["train", "eval"]'})
    (tmp_path / "output.json").write_text(json_format.MessageToJson(output))


def _handed_on(executor_input, local_to_remote, in_store, tmp_path):
    kfp_executor.finish_executor_output(executor_input, local_to_remote, set(), in_store)
    return json_format.Parse(
        (tmp_path / "output.json").read_text(), pipeline_spec_pb2.ExecutorOutput()
    )


def test_examples_are_written_in_the_store_and_handed_on_as_a_reference(tmp_path):
    # Issue 75, finding 7: the launcher copies every input whole into the pod; examples
    # written beside the task's outputs and handed on as a reference are copied by none.
    task = "gs://kfp/v2/artifacts/events/run-day3/ShardedExampleGen/0f3a"
    executor_input = _example_gen_outputs(task, tmp_path)
    local_to_remote = kfp_executor.locate_inputs(executor_input, None)
    in_store = kfp_executor.examples_in_store.redirect(executor_input, local_to_remote, None)
    outputs = {n: a.artifacts[0].uri for n, a in executor_input.outputs.artifacts.items()}
    # The executor writes the examples into the store; the statistics to the launcher's copy.
    assert outputs == {
        "examples": f"{task}/.data/examples",
        "statistics": f"/gcs{task[len('gs:/') :]}/statistics",
    }
    _run_executor(executor_input, tmp_path)
    written = _handed_on(executor_input, local_to_remote, in_store, tmp_path)
    handed = {n: a.artifacts[0].uri for n, a in written.artifacts.items()}
    assert handed == {"examples": f"{task}/examples", "statistics": f"{task}/statistics"}
    reference = written.artifacts["examples"].artifacts[0]
    assert reference.metadata["split_names"] == '["train", "eval"]'
    # The next task reads the examples where they were written, with their metadata.
    reference.name = "41"
    reference.type.schema_title = "tfx.Examples"
    downstream = pipeline_spec_pb2.ExecutorInput()
    downstream.inputs.artifacts["examples"].artifacts.append(reference)
    kfp_executor.locate_inputs(downstream, None)
    [member] = downstream.inputs.artifacts["examples"].artifacts
    assert member.uri == f"{task}/.data/examples"
    assert member.metadata["split_names"] == '["train", "eval"]'
    assert "members" not in member.metadata


def test_examples_in_minio_are_written_through_the_roots_store_and_named_as_kfp_names_them(
    monkeypatch, tmp_path
):
    from tfrecord_pipelines.components.storage import object_stores

    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "S3_ENDPOINT", "AWS_ACCESS_KEY_ID",
                 "AWS_SECRET_ACCESS_KEY"):  # fmt: skip
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setattr(object_stores, "_configure_s3", lambda: None)
    task = "minio://mlpipeline/v2/artifacts/events/run-day3/ShardedExampleGen/0f3a"
    executor_input = _example_gen_outputs(task, tmp_path)
    endpoint = "http://seaweedfs.kubeflow:9000"
    monkeypatch.setenv(object_stores.ARTIFACT_ENDPOINT, endpoint)
    local_to_remote = kfp_executor.locate_inputs(executor_input, endpoint)
    in_store = kfp_executor.examples_in_store.redirect(executor_input, local_to_remote, endpoint)
    [examples] = executor_input.outputs.artifacts["examples"].artifacts
    assert examples.uri == "s3://" + task[len("minio://") :] + "/.data/examples"
    # Beam reaches s3:// through boto3: it is given the same store.
    assert object_stores.with_beam_s3_endpoint(["--runner=DirectRunner"]) == [
        "--runner=DirectRunner",
        f"--s3_endpoint_url={endpoint}",
    ]
    _run_executor(executor_input, tmp_path)
    written = _handed_on(executor_input, local_to_remote, in_store, tmp_path)
    reference = written.artifacts["examples"].artifacts[0]
    assert reference.uri == f"{task}/examples"
    [member] = json.loads(reference.metadata["members"])
    assert member["artifact"]["uri"] == f"{task}/.data/examples"


def test_examples_beside_a_data_store_of_the_pods_own_are_uploaded_with_the_roots_keys(
    monkeypatch, tmp_path, capsys
):
    # Issue 89: ExampleGen reads its s3:// data with the pod's own S3 settings (another
    # store, its own keys), so TensorFlow cannot reach the root's store; the examples are
    # written on the pod's disk and uploaded with the root's keys, not the launcher's copy.
    import boto3
    from object_store_servers import authenticated_s3_server

    from tfrecord_pipelines.components.storage import launcher_copies, object_stores

    monkeypatch.setattr(object_stores, "_configure_s3", lambda: None)
    monkeypatch.setitem(launcher_copies.LOCAL_PREFIXES, "minio://", f"{tmp_path}/minio/")
    (tmp_path / "root" / "mlpipeline").mkdir(parents=True)
    (tmp_path / "data" / "lake").mkdir(parents=True)
    with authenticated_s3_server(tmp_path / "root") as (root_url, root_keys), \
            authenticated_s3_server(tmp_path / "data") as (data_url, data_keys):  # fmt: skip
        for name, value in (("AWS_ENDPOINT_URL", data_url), ("AWS_ACCESS_KEY_ID", data_keys[0]),
                            ("AWS_SECRET_ACCESS_KEY", data_keys[1]),
                            (object_stores.ARTIFACT_ENDPOINT, root_url),
                            (object_stores.ARTIFACT_KEYS[0], root_keys[0]),
                            (object_stores.ARTIFACT_KEYS[1], root_keys[1])):  # fmt: skip
            monkeypatch.setenv(name, value)
        task = "minio://mlpipeline/v2/artifacts/events/run-day3/ShardedExampleGen/0f3a"
        executor_input = _example_gen_outputs(task, tmp_path)
        local_to_remote = kfp_executor.locate_inputs(executor_input, root_url, ["s3://lake/d/"])
        in_store = kfp_executor.examples_in_store.redirect(
            executor_input, local_to_remote, root_url, ["s3://lake/d/"]
        )
        [examples] = executor_input.outputs.artifacts["examples"].artifacts
        local = f"{tmp_path}/minio{task[len('minio:/') :]}/examples"
        assert examples.uri == local
        # The pod's own store stays TensorFlow's, for the data.
        assert os.environ["AWS_ACCESS_KEY_ID"] == data_keys[0]
        (Path(local) / "Split-train").mkdir(parents=True)
        (Path(local) / "Split-train" / "data-00000-of-00001.gz").write_bytes(b"shard")
        _run_executor(executor_input, tmp_path)
        written = _handed_on(executor_input, local_to_remote, in_store, tmp_path)
        stored = "mlpipeline/v2/artifacts/events/run-day3/ShardedExampleGen/0f3a/.data/examples"
        clients = {
            keys: boto3.client("s3", endpoint_url=url, aws_access_key_id=keys[0],
                               aws_secret_access_key=keys[1], region_name="us-east-1")
            for url, keys in ((root_url, root_keys), (data_url, data_keys))
        }  # fmt: skip
        key = f"{stored.split('/', 1)[1]}/Split-train/data-00000-of-00001.gz"
        assert clients[root_keys].get_object(Bucket="mlpipeline", Key=key)["Body"].read() == (
            b"shard"
        )
        assert not Path(local).exists()  # The launcher uploads nothing of it.
    reference = written.artifacts["examples"].artifacts[0]
    assert reference.uri == f"{task}/examples"
    [member] = json.loads(reference.metadata["members"])
    assert member["artifact"]["uri"] == f"minio://{stored}"
    printed = capsys.readouterr().out
    assert "written on this pod's disk, then uploaded" in printed
    assert "Uploaded 1 files" in printed


def test_examples_go_through_the_launchers_copy_when_the_store_is_out_of_reach(tmp_path, capsys):
    # A minio:// root compiled with --artifact-secret none: the pod has no endpoint for it.
    task = "minio://mlpipeline/v2/artifacts/events/run-day3/ShardedExampleGen/0f3a"
    executor_input = _example_gen_outputs(task, tmp_path)
    local_to_remote = kfp_executor.locate_inputs(executor_input, None)
    assert kfp_executor.examples_in_store.redirect(executor_input, local_to_remote, None) == {}
    [examples] = executor_input.outputs.artifacts["examples"].artifacts
    assert examples.uri == "/minio" + task[len("minio:/") :] + "/examples"
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 1 and "launcher's copy" in printed[0], printed


def test_a_pods_direct_runner_keeps_tfx_from_packaging_itself(monkeypatch, tmp_path):
    import tempfile

    from tfx.utils import dependency_utils

    from tfrecord_pipelines.components.storage import object_stores

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(object_stores, "s3_endpoint", lambda: "http://seaweedfs.kubeflow:9000")
    # A MinIO root's task: Beam gets the endpoint, and TFX, as its Beam executors call it,
    # adds nothing and builds nothing (before: a copy of TFX and an sdist in every such pod).
    args = kfp_executor.pod_beam_args([])
    assert "--s3_endpoint_url=http://seaweedfs.kubeflow:9000" in args
    assert dependency_utils.make_beam_dependency_flags(args) == args
    assert list(tmp_path.iterdir()) == []
    # Another runner's workers need the package: left to TFX.
    flink = kfp_executor.pod_beam_args(["--runner=FlinkRunner"])
    assert flink == ["--runner=FlinkRunner", "--s3_endpoint_url=http://seaweedfs.kubeflow:9000"]
