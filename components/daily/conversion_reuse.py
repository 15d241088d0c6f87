"""A day's conversion reused from the daily state: ExampleGen on Kubeflow, in the daily
pipeline (``compile --window``).

KFP keys its cache on a task's parameters' text, which for ExampleGen is the
span as the run asked for it (``latest``, a number, a day less one day): a
re-run of a day seldom has the first run's text, and a pipeline whose span
defaults to ``latest`` never caches ExampleGen (``runner``). The daily state
knows better: SpanWindow records each conversion with TFX's input fingerprint
of the span's files (names, sizes, times) and this module's digest of
ExampleGen's settings and schema. When a run's span, version, fingerprint and
settings match a recorded conversion, the entry point hands that conversion
on instead of converting again: each output stands for the recorded artifact
(``keys.MEMBERS_PROPERTY``) and the summary page says where it is.
"""

from __future__ import annotations

import hashlib
import json

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.storage import filesystem

# ExampleGen's parameters that name the span rather than how it is converted.
_SPAN_PARAMETERS = {keys.REQUESTED_SPAN_KEY, "range_config"}
_FINGERPRINT = "input_fingerprint"
# The conversion's outputs a record holds, by ExampleGen's output key.
RECORDED_OUTPUTS = (keys.EXAMPLES_KEY, keys.STATISTICS_KEY, keys.QUARANTINE_KEY)


def _schema_digest(executor_input: pipeline_spec_pb2.ExecutorInput) -> str:
    """A digest of the curated schema's files, or "" without one."""
    schemas = executor_input.inputs.artifacts.get(keys.SCHEMA_KEY)
    digest = hashlib.sha256()
    for artifact in schemas.artifacts if schemas else []:
        for path in filesystem.walk_files(artifact.uri):
            with filesystem.open_binary(path) as f:
                digest.update(f.read())
    return digest.hexdigest() if schemas else ""


def conversion_key(executor_input: pipeline_spec_pb2.ExecutorInput) -> str:
    """A digest of how ExampleGen converts: its parameters but the span's, and its schema."""
    parameters = {
        name: json_format.MessageToDict(value)
        for name, value in executor_input.inputs.parameter_values.items()
        if name not in _SPAN_PARAMETERS
    }
    text = json.dumps(parameters, sort_keys=True) + _schema_digest(executor_input)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _examples_output(executor_input: pipeline_spec_pb2.ExecutorInput):
    return executor_input.outputs.artifacts[keys.EXAMPLES_KEY].artifacts[0]


def reused(state_dir: str, executor_input: pipeline_spec_pb2.ExecutorInput) -> bool:
    """Marks the examples output with its conversion key; hands on a recorded conversion of
    the same span, files and settings if the daily state holds one. Returns whether it did
    (then the executor output is written and nothing is to be converted)."""
    _mark(executor_input)
    record = _find(state_dir, executor_input)
    if record is None:
        return False
    _reuse(record, executor_input)
    print(
        "This span's files and settings were converted by an earlier run: reusing "
        f"{record[keys.EXAMPLES_KEY]['artifact']['uri']}"
    )
    return True


def _mark(executor_input: pipeline_spec_pb2.ExecutorInput) -> str:
    """Puts the conversion key on the examples output, in place; returns it."""
    key = conversion_key(executor_input)
    _examples_output(executor_input).metadata.fields[
        keys.CONVERSION_KEY_PROPERTY
    ].string_value = key
    return key


def _find(state_dir: str, executor_input: pipeline_spec_pb2.ExecutorInput) -> dict | None:
    """The newest recorded conversion of the same span, version, files and settings as the
    one ``executor_input`` asks for (after TFX's driver and ``_mark``), or None."""
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils
    from tfx.types.artifact import Artifact

    from tfrecord_pipelines.components.daily import daily_state
    from tfrecord_pipelines.components.spans.artifacts import span_of

    outputs = kubeflow_v2_entrypoint_utils.parse_raw_artifact_dict(
        {keys.EXAMPLES_KEY: executor_input.outputs.artifacts[keys.EXAMPLES_KEY]}
    )
    wanted = outputs[keys.EXAMPLES_KEY][0]
    same = [
        c
        for c in daily_state.conversions(state_dir, [span_of(wanted)])
        if _same_conversion(Artifact.from_json_dict(c.item[keys.EXAMPLES_KEY]), wanted)
    ]
    return max(same, key=lambda c: c.order).item if same else None


def _same_conversion(recorded, wanted) -> bool:
    from tfrecord_pipelines.components.spans.artifacts import span_of, version_of

    return (
        span_of(recorded) == span_of(wanted)
        and version_of(recorded) == version_of(wanted)
        and all(
            recorded.get_string_custom_property(name) == wanted.get_string_custom_property(name)
            for name in (_FINGERPRINT, keys.CONVERSION_KEY_PROPERTY)
        )
    )


def _reuse(record: dict, executor_input: pipeline_spec_pb2.ExecutorInput) -> None:
    """Writes the executor output that hands on ``record``'s conversion instead of a new one."""

    output = pipeline_spec_pb2.ExecutorOutput()
    examples_uri = record[keys.EXAMPLES_KEY]["artifact"]["uri"]
    for name, artifacts in executor_input.outputs.artifacts.items():
        [given] = artifacts.artifacts
        written = output.artifacts[name].artifacts.add()
        written.CopyFrom(given)
        if name in RECORDED_OUTPUTS:
            member = record.get(name)
            written.metadata.fields[keys.MEMBERS_PROPERTY].string_value = json.dumps(
                [member] if member else []
            )
        elif name == keys.EXAMPLES_SUMMARY_KEY:
            with filesystem.open_file(given.uri, "w") as f:
                f.write(
                    "# ShardedExampleGen\n\nThis span's files, settings and schema were "
                    f"converted by an earlier run; its conversion is reused: `{examples_uri}`.\n"
                )
    with filesystem.open_file(executor_input.outputs.output_file, "w") as f:
        f.write(json_format.MessageToJson(output))
