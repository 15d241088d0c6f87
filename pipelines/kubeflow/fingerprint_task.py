"""The pod of ``InputFingerprints`` (``input_fingerprints``): each task's fingerprint of the
files it reads by path, as KFP output parameters.

``python -m tfrecord_pipelines.kubeflow.fingerprint_task EXECUTOR_INPUT_JSON``. For
ExampleGen, the fingerprint TFX's file-based driver computes before a cache look-up
(``FileBasedInputProcessor``: the span and version it resolves, with the requested
span as ShardedExampleGen's driver asks for it, then each split's matching files'
count, total bytes and modification times); for any other file, its bytes' SHA-256.
A path that holds nothing fails the task in one line naming it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping, Sequence

from tfrecord_pipelines.kubeflow.input_fingerprints import (
    EXAMPLE_GEN_PARAMETERS,
    split_parameter_name,
)


def _file_fingerprint(path: str) -> str:
    """The SHA-256 of a file's bytes."""
    from tfrecord_pipelines.components.storage import filesystem

    if not filesystem.exists(path):
        raise ValueError(f"{path} does not exist: nothing to fingerprint.")
    digest = hashlib.sha256()
    with filesystem.open_binary(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def fingerprints(parameters: Mapping[str, str]) -> dict[str, str]:
    """Each task's fingerprint, from the fingerprint task's parameters (``task__parameter``).

    Returns:
      Task name -> its fingerprint: ExampleGen's parameters together, then each file's.
    """
    by_task: dict[str, dict[str, str]] = {}
    for name, value in parameters.items():
        task, parameter = split_parameter_name(name)
        by_task.setdefault(task, {})[parameter] = value
    found = {}
    for task, given in sorted(by_task.items()):
        parts = []
        if any(p in given for p in EXAMPLE_GEN_PARAMETERS):
            from tfrecord_pipelines.components.spans.driver import input_fingerprint

            parts.append(input_fingerprint(dict(given)))
        parts += [
            f"{p}={_file_fingerprint(v)}"
            for p, v in sorted(given.items())
            if p not in EXAMPLE_GEN_PARAMETERS and v
        ]
        found[task] = ";".join(parts)
    return found


def run(argv: Sequence[str]) -> int:
    """Writes each task's fingerprint into the executor output; prints one line a task."""
    from google.protobuf import json_format
    from kfp.pipeline_spec import pipeline_spec_pb2

    from tfrecord_pipelines.components.storage import filesystem

    if len(argv) != 2:
        print("usage: python -m tfrecord_pipelines.kubeflow.fingerprint_task EXECUTOR_INPUT_JSON",
              file=sys.stderr)  # fmt: skip
        return 2
    executor_input = pipeline_spec_pb2.ExecutorInput()
    json_format.Parse(argv[1], executor_input, ignore_unknown_fields=True)
    parameters = {
        name: value.string_value for name, value in executor_input.inputs.parameter_values.items()
    }
    try:
        found = fingerprints(parameters)
    except ValueError as e:
        print(f"InputFingerprints: {e}", file=sys.stderr)
        return 1
    output = pipeline_spec_pb2.ExecutorOutput()
    for task, fingerprint in found.items():
        output.parameter_values[task].string_value = fingerprint
        print(f"{task}: {fingerprint}")
    output_file = executor_input.outputs.output_file
    filesystem.make_folder(output_file.rsplit("/", 1)[0])
    with filesystem.open_file(output_file, "w") as f:
        f.write(json.dumps(json_format.MessageToDict(output)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The pod's entry: object stores set up as every entry point sets them."""
    from tfrecord_pipelines.components.storage import object_stores

    argv = list(argv if argv is not None else sys.argv)
    return object_stores.run_entry_point(argv, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
