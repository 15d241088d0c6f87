"""Container entry point for TFX executors on Kubeflow Pipelines v2 open source.

``python -m tfrecord_pipelines.kubeflow.kfp_executor`` takes the arguments of TFX's own entry
point (``tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor``):
``--executor_class_path``, ``--json_serialized_invocation_args`` (the
ExecutorInput JSON that KFP substitutes for ``{{$}}``),
``--json_serialized_inputs_spec_args`` and Beam flags. It repairs what the
open-source backend hands over differently from Vertex AI, then runs TFX's
entry point in the same process:

- Input artifacts arrive with an empty ``type.instanceSchema``: the KFP driver
  reads upstream outputs from ML Metadata without their schema (``Schema: ""``
  in ``GetOutputArtifactsByExecutionId``), and TFX fails parsing ``""`` for the
  artifact class. The type is taken from the component's inputs spec.
- Custom artifact types are titled by TYPE_NAME (``tfrecord_pipelines.Quarantine``),
  which TFX imports as if it were a class path. Titles of this project's
  types are rewritten to their class paths.
- The backend ignores ``lifecycle.preCacheCheck``, where TFX puts the
  file-based ExampleGen driver; ShardedExampleGen gets no such hook at all.
  For an ExampleGen executor with an ``input_base``, TFX's KFP v2 driver runs
  first, as on Vertex AI: it resolves ``{SPAN}``/``{VERSION}`` patterns and sets
  span, version and input fingerprint.
- The KFP launcher downloads input artifacts to, and uploads output artifacts
  from, local paths (``launcher_copies``): ``gs://b/k`` is ``/gcs/b/k``,
  ``s3://b/k`` is ``/s3/b/k`` and ``minio://b/k`` is ``/minio/b/k``. Their URIs
  are pointed at the local paths while the executor runs, and the executor
  output names the remote URIs again, as the launcher records them.
- The backend hands a task one artifact per input. SpanWindow's outputs
  (a window of spans, and an earlier run's statistics, model or analyzer
  cache, each of which may be none) stand for 0 or more artifacts
  (``keys.MEMBERS_PROPERTY``): the task that reads one gets those artifacts,
  which the launcher did not stage. They are read from their store: gs://
  directly, minio:// and s3:// as s3:// through the pipeline root's store's
  endpoint the pod is given (``compile --artifact-endpoint``, with
  ``--artifact-secret``'s keys, under names of the project's own so that the
  task's own s3:// data is read from its own store), s3:// without one with
  the pod's own role.
- In the compiled pipeline (``--examples_in_store``), a task writes the examples it
  makes into the pipeline root's store itself and hands on a reference to them
  (``examples_in_store``), so that no launcher copies them into a reader's pod;
  Beam is given the store's S3 endpoint as TensorFlow is.
- In the daily pipeline, ExampleGen's entry point gets the daily state
  (``--daily_state_dir``): a span whose files and settings an earlier run
  converted is handed on, not converted again (``conversion_reuse``).
- The ``input_fingerprint`` parameter (``input_fingerprints``) is a value of KFP's cache
  key alone, and is dropped before TFX reads the parameters.
- The ``executor-logs`` output that the driver adds for published logs is
  hidden from TFX, which cannot import its ``system.Artifact`` type.
- A TFJob's worker (``--tfjob_worker``: the Trainer's task, compiled with more than one
  trainer worker, runs its own command line in each, ``job_trainer``) has no launcher:
  it reads every input and writes every output in its store (``locate_in_stores``), and
  its executor output is nobody's (the task writes the task's).
"""

from __future__ import annotations

if __name__ == "__main__":
    # The pod's process (``python -m``): the package inits of TFX's components, KFP and
    # Kubernetes run only when used, before anything here imports them (deferred_inits).
    from tfrecord_pipelines.components import deferred_inits

    deferred_inits.defer_package_inits()

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence

import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.daily import conversion_reuse
from tfrecord_pipelines.components.storage import filesystem, launcher_copies, object_stores
from tfrecord_pipelines.definition.beam_args import without_tfx_package
from tfrecord_pipelines.kubeflow import examples_in_store, input_fingerprints, root_store
from tfrecord_pipelines.kubeflow.training_job import worker_template

# The output the KFP driver adds when it publishes logs (driver provisionOutputs);
# it is typed system.Artifact, which TFX cannot import.
_LAUNCHER_LOG_OUTPUT = "executor-logs"
# The flag naming the daily state to ExampleGen's entry point (``runner``).
DAILY_STATE_FLAG = "daily_state_dir"
# The custom property TFX's Kubeflow V2 runner gives every output artifact.
_TFX_VERSION = "tfx_version"
# An s3:// path in a parameter's JSON, up to the quote or escape that ends its string.
_S3_PATH = re.compile(r"s3://[^\s\"'\\]+")


def _type_title(type_schema: pipeline_spec_pb2.ArtifactTypeSchema) -> str:
    """The schema title of an artifact type; "" when it has none."""
    kind = type_schema.WhichOneof("kind")
    if kind == "schema_title":
        return type_schema.schema_title
    if kind == "instance_schema":
        data = yaml.safe_load(type_schema.instance_schema)
        return str(data.get("title", "")) if isinstance(data, dict) else ""
    return ""


def _artifacts(
    artifact_lists: Mapping[str, pipeline_spec_pb2.ArtifactList],
) -> Iterator[tuple[str, pipeline_spec_pb2.RuntimeArtifact]]:
    for name, artifact_list in artifact_lists.items():
        for artifact in artifact_list.artifacts:
            yield name, artifact


def repair_executor_input(
    executor_input: pipeline_spec_pb2.ExecutorInput,
    inputs_spec: pipeline_spec_pb2.ComponentInputsSpec | None,
    class_paths: Mapping[str, str],
) -> pipeline_spec_pb2.ExecutorInput:
    """Gives every artifact a type that TFX's entry point resolves to its class.

    Args:
      executor_input: the ExecutorInput as KFP's driver built it.
      inputs_spec: the component's inputs spec (its
        ``--json_serialized_inputs_spec_args``); it types untyped inputs.
      class_paths: schema title -> import path of the artifact class, for
        custom types whose title is not a class path.

    Returns:
      A repaired copy without the launcher's ``executor-logs`` output;
      executor_input is left unchanged.

    Raises:
      ValueError: if an artifact has no type and the inputs spec has none for it.
    """
    repaired = pipeline_spec_pb2.ExecutorInput()
    repaired.CopyFrom(executor_input)
    for name, artifact in _artifacts(repaired.inputs.artifacts):
        if _type_title(artifact.type):
            continue
        spec_type = (
            inputs_spec.artifacts[name].artifact_type
            if inputs_spec is not None and name in inputs_spec.artifacts
            else None
        )
        if spec_type is None or not _type_title(spec_type):
            raise ValueError(
                f"Input artifact {name!r} has no type and the component inputs spec gives "
                "none; compile the pipeline with this project so that the container args "
                "carry --json_serialized_inputs_spec_args."
            )
        artifact.type.CopyFrom(spec_type)
    if _LAUNCHER_LOG_OUTPUT in repaired.outputs.artifacts:
        # The launcher's own log file, not an output of the component.
        del repaired.outputs.artifacts[_LAUNCHER_LOG_OUTPUT]
    for name, artifact in _artifacts(repaired.outputs.artifacts):
        if not _type_title(artifact.type):
            raise ValueError(
                f"Output artifact {name!r} has no type; the driver copies it from the "
                "component's outputDefinitions, so recompile the pipeline."
            )
    for _, artifact in [
        *_artifacts(repaired.inputs.artifacts),
        *_artifacts(repaired.outputs.artifacts),
    ]:
        class_path = class_paths.get(_type_title(artifact.type))
        if class_path:
            # TFX imports a title it does not know as a class path.
            artifact.type.Clear()
            artifact.type.schema_title = class_path
    return repaired


def expand_members(
    executor_input: pipeline_spec_pb2.ExecutorInput,
    s3_endpoint: str | None = None,
    own_paths: Sequence[str] = (),
) -> None:
    """Puts in place of each input artifact that stands for others those artifacts, in place.

    The launcher staged the reference, not the artifacts it stands for: each is read
    from its store (``launcher_copies.unstaged_uri``), minio:// and s3:// through
    ``s3_endpoint``. A model (the base model, the baseline) is copied whole to where the
    launcher would have staged it (``/gcs/...``, ``/minio/...``), as the launcher copies
    the run's own model: it is read whole and is small beside the data, and TensorFlow's
    checkpoint reader dies of a segmentation fault on the modular GCS file system.

    Raises:
      ValueError: a member in minio:// and no ``s3_endpoint``, in one line.
    """
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils
    from tfx.types import standard_artifacts
    from tfx.types.artifact import Artifact

    models, expanded_lists = [], {}
    for name, artifact_list in executor_input.inputs.artifacts.items():
        references = [
            a for a in artifact_list.artifacts if keys.MEMBERS_PROPERTY in a.metadata.fields
        ]
        if not references:
            continue
        expanded = expanded_lists[name] = []
        for reference in references:
            for member_json in json.loads(
                reference.metadata.fields[keys.MEMBERS_PROPERTY].string_value
            ):
                member = Artifact.from_json_dict(member_json)
                runtime = kubeflow_v2_entrypoint_utils.to_runtime_artifact(
                    member, {member.id: f"{reference.name}/{len(expanded)}"}
                )
                runtime.type.CopyFrom(reference.type)
                stored = runtime.uri
                runtime.uri = launcher_copies.unstaged_uri(stored, s3_endpoint)
                expanded.append(runtime)
                if member.type_name == standard_artifacts.Model.TYPE_NAME:
                    models.append((runtime, launcher_copies.local_copy(stored)))
    members = [a for expanded in expanded_lists.values() for a in expanded]
    if s3_endpoint and any(a.uri.startswith("s3://") for a in members):
        object_stores.read_artifact_store(own_paths)
    for runtime, local in models:
        if local is not None:
            filesystem.copy_tree(runtime.uri, local)
            runtime.uri = local
    for name, expanded in expanded_lists.items():
        # extend copies the messages: after their URIs are final.
        del executor_input.inputs.artifacts[name].artifacts[:]
        executor_input.inputs.artifacts[name].artifacts.extend(expanded)


def localize_artifact_uris(executor_input: pipeline_spec_pb2.ExecutorInput) -> dict[str, str]:
    """Points gs://, s3:// and minio:// artifact URIs at the launcher's local copies, in place.

    Args:
      executor_input: the ExecutorInput to rewrite.

    Returns:
      Local path -> the remote URI it replaced.
    """
    local_to_remote = {}
    for _, artifact in [
        *_artifacts(executor_input.inputs.artifacts),
        *_artifacts(executor_input.outputs.artifacts),
    ]:
        local = launcher_copies.local_copy(artifact.uri)
        if local:
            local_to_remote[local] = artifact.uri
            artifact.uri = local
    return local_to_remote


def locate_inputs(
    executor_input: pipeline_spec_pb2.ExecutorInput,
    s3_endpoint: str | None,
    own_paths: Sequence[str] = (),
) -> dict[str, str]:
    """Points each artifact at where this pod reads or writes it, in place: the launcher's
    local copies of the staged ones (``localize_artifact_uris``), then, for each reference,
    the artifacts it stands for in their stores (``expand_members``).

    Returns:
      Local path -> the remote URI it replaced.
    """
    local_to_remote = localize_artifact_uris(executor_input)
    expand_members(executor_input, s3_endpoint, own_paths)
    return local_to_remote


def locate_in_stores(
    executor_input: pipeline_spec_pb2.ExecutorInput,
    s3_endpoint: str | None,
    own_paths: Sequence[str] = (),
) -> None:
    """Points each artifact at its store, in place, for a process no launcher staged anything
    for (a TFJob's worker): gs:// as it is, minio:// and s3:// as s3:// through the pipeline
    root's store (``launcher_copies.unstaged_uri``); then each reference's members
    (``expand_members``).

    Raises:
      ValueError: a minio:// URI and no S3 endpoint, in one line.
    """
    artifacts = [
        *_artifacts(executor_input.inputs.artifacts),
        *_artifacts(executor_input.outputs.artifacts),
    ]
    for _, artifact in artifacts:
        artifact.uri = launcher_copies.unstaged_uri(artifact.uri, s3_endpoint)
    if s3_endpoint and any(a.uri.startswith("s3://") for _, a in artifacts):
        object_stores.read_artifact_store(own_paths)
    expand_members(executor_input, s3_endpoint, own_paths)


def restore_remote_uris(
    executor_output: pipeline_spec_pb2.ExecutorOutput, local_to_remote: Mapping[str, str]
) -> None:
    """Puts the remote URIs back into the executor output, in place.

    The launcher copies output URIs from this file into ML Metadata and uploads
    from the local path of the URI it ends up with, so it must see the remote one.
    """
    for _, artifact in _artifacts(executor_output.artifacts):
        artifact.uri = local_to_remote.get(artifact.uri, artifact.uri)


def class_path(kind: type) -> str:
    """The import path of a class, as TFX's entry point reads a schema title it does not know."""
    return f"{kind.__module__}.{kind.__qualname__}"


def project_artifact_class_paths() -> dict[str, str]:
    """Schema title -> class path of this project's custom artifact types."""
    from tfrecord_pipelines.components import ui_artifacts
    from tfrecord_pipelines.components.example_gen.component import Quarantine

    return {kind.TYPE_NAME: class_path(kind) for kind in (Quarantine, *ui_artifacts.UI_TYPES)}


def drop_tfx_version_from_ui_outputs(
    executor_output: pipeline_spec_pb2.ExecutorOutput, ui_output_names: set[str]
) -> None:
    """Removes TFX's ``tfx_version`` from the metadata of outputs that KFP's UI draws, in place:
    the UI shows every custom property of a system.Metrics as a metric."""
    for name in ui_output_names:
        for artifact in executor_output.artifacts[name].artifacts:
            if _TFX_VERSION in artifact.metadata.fields:
                del artifact.metadata.fields[_TFX_VERSION]


def _make_local_output_dirs(executor_input: pipeline_spec_pb2.ExecutorInput) -> None:
    """Creates local output artifact folders, as TFX's own launchers do before Do."""
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils
    from tfx.orchestration.portable import outputs_utils

    outputs = kubeflow_v2_entrypoint_utils.parse_raw_artifact_dict(executor_input.outputs.artifacts)
    local = {
        name: [a for a in artifacts if "://" not in a.uri] for name, artifacts in outputs.items()
    }
    outputs_utils.make_output_dirs(local)


def request_span_parameter(executor_input: pipeline_spec_pb2.ExecutorInput) -> dict:
    """Turns ShardedExampleGen's ``requested_span`` parameter (a run's span, which a
    schedule may fill) into the ``range_config`` TFX's driver reads; returns the
    parameters as exec properties."""
    from tfrecord_pipelines.components.spans.driver import request_span

    values = executor_input.inputs.parameter_values
    parameters = {
        name: value.string_value
        for name, value in values.items()
        if value.WhichOneof("kind") == "string_value"
    }
    asked = request_span(parameters)
    for name, value in asked.items():
        if parameters.get(name) != value:
            values[name].string_value = value
    return asked


def _run_example_gen_driver(
    executor_input: pipeline_spec_pb2.ExecutorInput, inputs_spec_json: str | None
) -> None:
    """Runs TFX's file-based ExampleGen driver, as Vertex AI's preCacheCheck would.

    The driver writes span, version, input fingerprint and the resolved
    input_config into the executor output file, which TFX's entry point reads
    as exec properties; its Examples metadata is copied into executor_input.
    """
    from tfx.orchestration.kubeflow.v2.file_based_example_gen import driver

    from tfrecord_pipelines.components.spans.driver import (
        is_missing_span,
        missing_span_error,
    )

    parameters = request_span_parameter(executor_input)
    try:
        driver.main(
            argparse.Namespace(
                json_serialized_invocation_args=json_format.MessageToJson(executor_input),
                json_serialized_inputs_spec_args=inputs_spec_json,
            )
        )
    except ValueError as e:
        if not is_missing_span(e):
            raise
        raise missing_span_error(parameters) from None
    driver_output = pipeline_spec_pb2.ExecutorOutput()
    with filesystem.open_file(executor_input.outputs.output_file, "r") as f:
        json_format.Parse(f.read(), driver_output, ignore_unknown_fields=True)
    for name, artifact_list in driver_output.artifacts.items():
        for source, target in zip(
            artifact_list.artifacts, executor_input.outputs.artifacts[name].artifacts, strict=True
        ):
            target.metadata.MergeFrom(source.metadata)


def _is_file_based_example_gen(
    executor_class_path: str, executor_input: pipeline_spec_pb2.ExecutorInput
) -> bool:
    from tfx.components.example_gen.base_example_gen_executor import BaseExampleGenExecutor
    from tfx.utils import import_utils

    executor_class = import_utils.import_class_by_path(executor_class_path)
    return issubclass(executor_class, BaseExampleGenExecutor) and (
        keys.INPUT_BASE_KEY in executor_input.inputs.parameter_values
    )


def _parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """Parses TFX's entry point flags; the rest are Beam flags. argv[0] is the program."""
    from absl.flags import argparse_flags

    parser = argparse_flags.ArgumentParser(
        prog="python -m tfrecord_pipelines.kubeflow.kfp_executor"
    )
    parser.add_argument("--executor_class_path", required=True)
    parser.add_argument("--json_serialized_invocation_args", required=True)
    parser.add_argument("--json_serialized_inputs_spec_args")
    # The daily pipeline's ExampleGen: where a re-run of a day finds the day's conversion.
    parser.add_argument(f"--{DAILY_STATE_FLAG}")
    # The compiled pipeline's tasks: examples written into the store, handed on as references.
    parser.add_argument(f"--{examples_in_store.FLAG}", action="store_true")
    # A TFJob's worker, started by the Trainer's task with the task's own command line.
    parser.add_argument(f"--{worker_template.WORKER_FLAG}", action="store_true")
    return parser.parse_known_args(list(argv[1:]))


def task_s3_paths(
    executor_input: pipeline_spec_pb2.ExecutorInput, state_dir: str | None = None
) -> list[str]:
    """The ``s3://`` paths a task names of its own: in its parameters (its data, a serving
    folder, a module file) and its daily state folder, not its artifacts' (the pipeline
    root's), which ``object_stores.read_artifact_store`` weighs against the root's store."""
    parameters = executor_input.inputs.parameter_values.values()
    texts = [json_format.MessageToJson(value) for value in parameters] + [state_dir or ""]
    return sorted({path for text in texts for path in _S3_PATH.findall(text)})


def pod_beam_args(beam_args: Sequence[str]) -> list[str]:
    """The task's Beam flags as its executor gets them: Beam's S3 given the root's store
    (``object_stores.with_beam_s3_endpoint``), and on the DirectRunner TFX kept from packaging
    itself for workers that do not exist (``beam_args.without_tfx_package``)."""
    return without_tfx_package(object_stores.with_beam_s3_endpoint(beam_args))


def run(parsed: tuple[argparse.Namespace, list[str]]) -> None:
    """Repairs the ExecutorInput and runs the executor through TFX's entry point.

    Args:
      parsed: the flags from ``_parse_args`` and the Beam flags.
    """
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # TFX 1.16 needs Keras 2.
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_run_executor

    args, beam_args = parsed
    executor_input = pipeline_spec_pb2.ExecutorInput()
    json_format.Parse(
        args.json_serialized_invocation_args, executor_input, ignore_unknown_fields=True
    )
    inputs_spec = None
    if args.json_serialized_inputs_spec_args:
        inputs_spec = pipeline_spec_pb2.ComponentInputsSpec()
        json_format.Parse(
            args.json_serialized_inputs_spec_args, inputs_spec, ignore_unknown_fields=True
        )
    executor_input = repair_executor_input(
        executor_input, inputs_spec, project_artifact_class_paths()
    )
    # A value of KFP's cache key alone (input_fingerprints), which no TFX executor takes.
    executor_input.inputs.parameter_values.pop(input_fingerprints.FINGERPRINT, None)
    endpoint = object_stores.artifact_store_endpoint()
    state_dir = getattr(args, DAILY_STATE_FLAG, None)
    own_paths = task_s3_paths(executor_input, state_dir)
    worker = getattr(args, worker_template.WORKER_FLAG, False)
    if worker:
        locate_in_stores(executor_input, endpoint, own_paths)
        local_to_remote, in_store = {}, {}
    else:
        local_to_remote = locate_inputs(executor_input, endpoint, own_paths)
        in_store = (
            examples_in_store.redirect(executor_input, local_to_remote, endpoint, own_paths)
            if getattr(args, examples_in_store.FLAG, False)
            else {}
        )
    _make_local_output_dirs(executor_input)
    if _is_file_based_example_gen(args.executor_class_path, executor_input):
        _run_example_gen_driver(executor_input, args.json_serialized_inputs_spec_args)
        # Only the daily pipeline's ExampleGen has it (not the KFP components' entry point).
        if state_dir and hand_on_recorded_conversion(
            state_dir, executor_input, local_to_remote, in_store
        ):
            return

    repaired_args = argparse.Namespace(
        **{
            **vars(args),
            "json_serialized_invocation_args": json_format.MessageToJson(executor_input),
        }
    )
    kubeflow_v2_run_executor.main((repaired_args, pod_beam_args(beam_args)))
    if worker:
        return

    from tfrecord_pipelines.components import ui_artifacts

    ui_class_paths = {class_path(kind) for kind in ui_artifacts.UI_TYPES}
    ui_outputs = {
        name
        for name, artifact in _artifacts(executor_input.outputs.artifacts)
        if _type_title(artifact.type) in ui_class_paths
    }
    if local_to_remote or ui_outputs:
        finish_executor_output(executor_input, local_to_remote, ui_outputs, in_store)


def hand_on_recorded_conversion(
    state_dir: str,
    executor_input: pipeline_spec_pb2.ExecutorInput,
    local_to_remote: Mapping[str, str],
    in_store: Mapping[str, str] | None = None,
) -> bool:
    """Hands on the daily state's conversion of this span, files and settings, if it holds
    one (``conversion_reuse.reused``), with the remote URIs in the executor output: the
    launcher records the URIs it finds there, and fails every later task on a local path
    (``/minio/...``) it cannot parse into a bucket. Returns whether it did.
    """
    if not conversion_reuse.reused(state_dir, executor_input):
        return False
    finish_executor_output(executor_input, local_to_remote, set(), in_store or {})
    return True


def finish_executor_output(
    executor_input: pipeline_spec_pb2.ExecutorInput,
    local_to_remote: Mapping[str, str],
    ui_outputs: set[str],
    in_store: Mapping[str, str],
) -> None:
    """Puts the remote URIs back, hands the examples written in the store on as references
    (``examples_in_store``) and drops TFX's version from the UI's outputs, in the executor
    output file."""
    output_file = executor_input.outputs.output_file
    executor_output = pipeline_spec_pb2.ExecutorOutput()
    with filesystem.open_file(output_file, "r") as f:
        json_format.Parse(f.read(), executor_output, ignore_unknown_fields=True)
    examples_in_store.upload_to_store(executor_output, local_to_remote, in_store)
    restore_remote_uris(executor_output, local_to_remote)
    examples_in_store.hand_as_references(executor_output, executor_input, in_store)
    drop_tfx_version_from_ui_outputs(executor_output, ui_outputs)
    with filesystem.open_file(output_file, "w") as f:
        f.write(json_format.MessageToJson(executor_output))


def main(argv: Sequence[str] | None = None) -> None:
    """Runs the entry point on argv (default: sys.argv), as ``python -m`` does."""
    from absl import app

    argv = list(argv if argv is not None else sys.argv)
    # Before the stores are configured: the root's store as the launcher reaches it.
    root_store.apply(argv)
    object_stores.run_entry_point(argv, lambda: app.run(run, argv=argv, flags_parser=_parse_args))


if __name__ == "__main__":
    main()
