"""Container entry point of the KFP components (``definitions``): one TFX executor per task.

``python -m tfrecord_pipelines.kubeflow.reusable.entry NAME EXECUTOR_INPUT`` builds
the TFX component NAME runs (``adapters``) from the task's parameters, retypes
the task's KFP artifacts (``system.Dataset``, ``system.Model``, ...) as that
component's TFX types, hands its exec properties over as parameters, and runs
the executor through the same entry point as the compiled TFX pipeline's tasks
(``kubeflow.kfp_executor``: launcher paths, ExampleGen's driver, TFX's
Kubeflow V2 executor runner). TFX writes the executor output; its artifacts'
metadata (split names, shard plan, metrics) is what the launcher records.

Examples (or statistics) written by someone else need no metadata: their split
names are read from their ``Split-<name>`` folders.
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
import sys
from collections.abc import Sequence

from google.protobuf import json_format, struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2

from tfrecord_pipelines.components.keys import SPLIT_FOLDER_PREFIX
from tfrecord_pipelines.components.storage import filesystem, object_stores

_SPLIT_NAMES = "split_names"


def _parse_args(argv: Sequence[str]) -> argparse.Namespace:
    from tfrecord_pipelines.kubeflow.reusable.definitions import COMPONENTS

    parser = argparse.ArgumentParser(prog="python -m tfrecord_pipelines.kubeflow.reusable.entry")
    parser.add_argument("component", choices=sorted(COMPONENTS))
    parser.add_argument("executor_input", help="the task's ExecutorInput as JSON (KFP's {{$}})")
    return parser.parse_args(argv)


def _local_path(uri: str) -> str:
    from tfrecord_pipelines.components.storage.launcher_copies import local_copy

    return local_copy(uri) or uri


def _split_names(uri: str) -> str:
    """TFX's split_names property of examples laid out in ``Split-<name>`` folders."""

    path = _local_path(uri)
    names = sorted(
        entry.rstrip("/")[len(SPLIT_FOLDER_PREFIX) :]
        for entry in (filesystem.listdir(path) if filesystem.isdir(path) else [])
        if entry.startswith(SPLIT_FOLDER_PREFIX)
    )
    if not names:
        raise ValueError(
            f"{uri} holds no Split-<name> folder: examples are TFRecord shards in "
            "Split-train/ and Split-eval/ (TFX's layout)."
        )
    return json.dumps(names)


def _parameter(value) -> tuple[struct_pb2.Value, int]:
    """An exec property as a parameter value, and its KFP parameter type."""
    types = pipeline_spec_pb2.ParameterType
    if isinstance(value, bool):
        return struct_pb2.Value(bool_value=value), types.BOOLEAN
    if isinstance(value, int):
        return struct_pb2.Value(number_value=value), types.NUMBER_INTEGER
    if isinstance(value, float):
        return struct_pb2.Value(number_value=value), types.NUMBER_DOUBLE
    return struct_pb2.Value(string_value=str(value)), types.STRING


def tfx_executor_input(
    component, executor_input: pipeline_spec_pb2.ExecutorInput
) -> tuple[pipeline_spec_pb2.ExecutorInput, pipeline_spec_pb2.ComponentInputsSpec]:
    """The ExecutorInput TFX's Kubeflow V2 runner expects for ``component``, and its inputs spec.

    Artifacts keep their names, URIs and metadata and get the TFX component's
    types; the parameters become its exec properties. An input that holds another
    kind of artifact than its type's is refused (``artifact_kinds``).
    """
    from tfrecord_pipelines.kubeflow.kfp_executor import class_path
    from tfrecord_pipelines.kubeflow.reusable import artifact_kinds

    translated = pipeline_spec_pb2.ExecutorInput()
    translated.CopyFrom(executor_input)
    inputs_spec = pipeline_spec_pb2.ComponentInputsSpec()
    translated.inputs.ClearField("parameter_values")
    for name, value in component.exec_properties.items():
        if value is None:
            continue
        parameter, parameter_type = _parameter(value)
        translated.inputs.parameter_values[name].CopyFrom(parameter)
        inputs_spec.parameters[name].parameter_type = parameter_type
    for folder, channels in (
        (translated.inputs.artifacts, component.spec.INPUTS),
        (translated.outputs.artifacts, component.spec.OUTPUTS),
    ):
        for name, artifact_list in folder.items():
            artifact_type = channels[name].type
            for artifact in artifact_list.artifacts:
                if folder is translated.inputs.artifacts:
                    artifact_kinds.check_input(
                        name, artifact_type.__name__, artifact.uri, _local_path(artifact.uri)
                    )
                artifact.type.Clear()
                artifact.type.schema_title = class_path(artifact_type)
                if (
                    folder is translated.inputs.artifacts
                    and _SPLIT_NAMES in (artifact_type.PROPERTIES or {})
                    and _SPLIT_NAMES not in artifact.metadata.fields
                ):
                    artifact.metadata[_SPLIT_NAMES] = _split_names(artifact.uri)
            inputs_spec.artifacts[name].artifact_type.schema_title = class_path(artifact_type)
    return translated, inputs_spec


def _parameters(executor_input: pipeline_spec_pb2.ExecutorInput) -> dict:
    return {
        name: getattr(value, value.WhichOneof("kind"))
        for name, value in executor_input.inputs.parameter_values.items()
    }


def run(component_name: str, executor_input_json: str) -> None:
    """Runs the TFX executor behind KFP component ``component_name`` on the task's input."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # TFX 1.16 needs Keras 2.
    from tfrecord_pipelines.kubeflow import kfp_executor
    from tfrecord_pipelines.kubeflow.kfp_executor import class_path
    from tfrecord_pipelines.kubeflow.reusable import recorded_task
    from tfrecord_pipelines.kubeflow.reusable.adapters import BUILDERS

    executor_input = json_format.Parse(
        executor_input_json, pipeline_spec_pb2.ExecutorInput(), ignore_unknown_fields=True
    )
    try:
        parameters = _parameters(executor_input)
        if component_name in recorded_task.READ_FROM_EXAMPLES:
            parameters = recorded_task.task_parameters(parameters, executor_input)
        component = BUILDERS[component_name](parameters, set(executor_input.inputs.artifacts))
        translated, inputs_spec = tfx_executor_input(component, executor_input)
    except ValueError as wrong_input:
        # What the pipeline wired in, said in one line in the task's log.
        sys.exit(f"error: {wrong_input}")
    executor_class = component.executor_spec.executor_class
    args = argparse.Namespace(
        executor_class_path=class_path(executor_class),
        json_serialized_invocation_args=json_format.MessageToJson(translated),
        json_serialized_inputs_spec_args=json_format.MessageToJson(inputs_spec),
    )
    kfp_executor.run((args, []))


def main(argv: Sequence[str] | None = None) -> None:
    """Checks the arguments, then runs the component (``python -m`` passes sys.argv)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parse_args(argv)
    object_stores.run_entry_point(argv, lambda: run(args.component, args.executor_input))


if __name__ == "__main__":
    main()
