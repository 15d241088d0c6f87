"""Examples written into the pipeline root's store and handed on as references, so that no
launcher copies them.

KFP's launcher downloads every input artifact whole into the task's pod
(launcher_v2.go:929-999): a task given ExampleGen's examples would wait for, and
need the disk of, every shard of the span, though SpanWindow reads only their
metadata and the Trainer reads them as a stream. The task that writes examples
(ExampleGen; Transform when it materializes) writes them instead into the
pipeline root's store beside its outputs, ``{task root}/.data/{output}`` (a
name no KFP output has, so no launcher's listing of an output's key reaches it),
through TensorFlow's and Beam's own file systems; its output is a small reference
that names them (``keys.MEMBERS_PROPERTY``, as SpanWindow hands the window), and
the entry point of each task that reads it reads them from the store
(``kfp_executor.expand_members``).

KFP's pipeline workspace (``/kfp-workspace``, 2.15 and later) is the other way
around the copy; the guide says why this one was chosen. A task that cannot reach
the store itself (a ``minio://`` root and no ``--artifact-endpoint``; S3 settings
of its own beside the root's store's) writes through the launcher's copy, as before,
and says so in one line.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping

from kfp.pipeline_spec import pipeline_spec_pb2

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.storage import launcher_copies, object_stores

# The folder of a task's root that holds what the task wrote into the store itself.
DATA_FOLDER = ".data"
# The entry point's flag that the compiled pipeline gives every task (``runner``).
FLAG = "examples_in_store"


def data_uri(output_uri: str) -> str:
    """Where the examples of the output at ``output_uri`` (``{task root}/{name}``) are
    written: ``{task root}/.data/{name}``."""
    task_root, name = posixpath.split(output_uri.rstrip("/"))
    return f"{task_root}/{DATA_FOLDER}/{name}"


def _tfx_artifact(artifact: pipeline_spec_pb2.RuntimeArtifact):
    """The TFX artifact a RuntimeArtifact stands for, as TFX's entry point reads it."""
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils

    listed = pipeline_spec_pb2.ArtifactList(artifacts=[artifact])
    [parsed] = kubeflow_v2_entrypoint_utils.parse_raw_artifact_dict({"_": listed})["_"]
    return parsed


def _is_examples(artifact: pipeline_spec_pb2.RuntimeArtifact) -> bool:
    from tfx.types import standard_artifacts

    return isinstance(_tfx_artifact(artifact), standard_artifacts.Examples)


def redirect(
    executor_input: pipeline_spec_pb2.ExecutorInput,
    local_to_remote: Mapping[str, str],
    s3_endpoint: str | None,
) -> dict[str, str]:
    """Points each examples output that the launcher would upload at its folder in the
    store, in place (after ``kfp_executor.localize_artifact_uris``). Only for a task of the
    compiled pipeline (``FLAG``), whose readers all run this entry point: a plain KFP
    pipeline's own components read the examples' files where the launcher put them.

    Returns:
      The URI each redirected output is written at -> the output's own URI.
    """
    redirected = {}
    for artifact_list in executor_input.outputs.artifacts.values():
        for artifact in artifact_list.artifacts:
            remote = local_to_remote.get(artifact.uri)
            if remote is None or not _is_examples(artifact):
                continue
            written = _written_uri(data_uri(remote), s3_endpoint)
            if written is not None:
                redirected[written] = remote
                artifact.uri = written
    return redirected


def _written_uri(uri: str, s3_endpoint: str | None) -> str | None:
    """Where this process writes ``uri``, or None when it cannot reach the store (then the
    launcher's copy carries the examples, as it carries every other output)."""
    instead = "The examples go through the launcher's copy instead of the store"
    if uri.startswith(launcher_copies.MINIO_SCHEME) and not s3_endpoint:
        print(
            f"{instead}: this pod has no endpoint for {uri}'s store (compile with "
            "--artifact-endpoint and --artifact-secret)"
        )
        return None
    written = launcher_copies.unstaged_uri(uri, s3_endpoint)
    if s3_endpoint and written.startswith(object_stores.S3_SCHEME):
        try:
            object_stores.read_artifact_store()
        except ValueError as e:
            print(f"{instead}: {e}")
            return None
    return written


def hand_as_references(
    executor_output: pipeline_spec_pb2.ExecutorOutput,
    executor_input: pipeline_spec_pb2.ExecutorInput,
    redirected: Mapping[str, str],
) -> None:
    """Makes each redirected output of the executor output a reference to the examples
    written in the store, in place: the output's own URI, its metadata, and the examples as
    its one member. An output that already stands for others (a conversion handed on) only
    gets its own URI back."""
    for name, artifact_list in executor_output.artifacts.items():
        for artifact in artifact_list.artifacts:
            reference_uri = redirected.get(artifact.uri)
            if reference_uri is None:
                continue
            if keys.MEMBERS_PROPERTY not in artifact.metadata.fields:
                given_type = executor_input.outputs.artifacts[name].artifacts[0].type
                member = _as_member(artifact, given_type)
                artifact.metadata.fields[keys.MEMBERS_PROPERTY].string_value = json.dumps([member])
            artifact.uri = reference_uri


def _as_member(
    written: pipeline_spec_pb2.RuntimeArtifact, artifact_type: pipeline_spec_pb2.ArtifactTypeSchema
) -> dict:
    """TFX's JSON of the examples the executor wrote, named by the URI KFP names them by."""
    member = pipeline_spec_pb2.RuntimeArtifact()
    member.CopyFrom(written)
    member.type.CopyFrom(artifact_type)
    member.uri = launcher_copies.remote_uri(written.uri)
    return _tfx_artifact(member).to_json_dict()
