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
around the copy; the guide says why this one was chosen. A task whose pod has no
endpoint for the store (a ``minio://`` root and no ``--artifact-endpoint``) writes
through the launcher's copy, as before; one whose TensorFlow keeps its own ``s3://``
data's store writes on its disk and uploads to the store with the root's own client
(``upload_to_store``). Each says so in one line.
"""

from __future__ import annotations

import json
import posixpath
import shutil
from collections.abc import Mapping, Sequence

from kfp.pipeline_spec import pipeline_spec_pb2

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.storage import launcher_copies, object_stores, root_uploads

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
    own_paths: Sequence[str] = (),
) -> dict[str, str]:
    """Points each examples output that the launcher would upload at its folder in the
    store, in place (after ``kfp_executor.localize_artifact_uris``). Only for a task of the
    compiled pipeline (``FLAG``), whose readers all run this entry point: a plain KFP
    pipeline's own components read the examples' files where the launcher put them.

    A task whose TensorFlow keeps its own ``s3://`` paths' store (``own_paths``; see
    ``object_stores.read_artifact_store``) writes the examples on its disk, where the
    launcher would upload them from; ``upload_to_store`` moves them into the store after
    the executor, through the root's store's own client.

    Returns:
      The URI each redirected output is stored at -> the output's own URI.
    """
    redirected = {}
    for artifact_list in executor_input.outputs.artifacts.values():
        for artifact in artifact_list.artifacts:
            remote = local_to_remote.get(artifact.uri)
            if remote is None or not _is_examples(artifact):
                continue
            stored = _stored_uri(data_uri(remote), s3_endpoint)
            if stored is None:
                continue
            redirected[stored] = remote
            if _reachable(stored, s3_endpoint, own_paths):
                artifact.uri = stored
    return redirected


def _stored_uri(uri: str, s3_endpoint: str | None) -> str | None:
    """Where ``uri`` is in the store as this process names it, or None when the pod has no
    endpoint for its store (then the launcher's copy carries the examples, as it carries
    every other output)."""
    if uri.startswith(launcher_copies.MINIO_SCHEME) and not s3_endpoint:
        print(
            "The examples go through the launcher's copy instead of the store: this pod has no "
            f"endpoint for {uri}'s store (compile with --artifact-endpoint and --artifact-secret)"
        )
        return None
    return launcher_copies.unstaged_uri(uri, s3_endpoint)


def _reachable(stored: str, s3_endpoint: str | None, own_paths: Sequence[str]) -> bool:
    """Whether this process's TensorFlow and Beam reach ``stored``'s store."""
    if not (s3_endpoint and stored.startswith(object_stores.S3_SCHEME)):
        return True
    if object_stores.read_artifact_store(own_paths):
        return True
    print(f"The examples are written on this pod's disk, then uploaded to {stored}")
    return False


def upload_to_store(
    executor_output: pipeline_spec_pb2.ExecutorOutput,
    local_to_remote: Mapping[str, str],
    redirected: Mapping[str, str],
) -> None:
    """Uploads each redirected output the executor wrote on the pod's disk (``redirect``) to
    its place in the store, through the root's store's own client (``root_uploads``), and
    removes it from the disk, so that the launcher uploads nothing of it; points the output
    at the store, in place, as if the executor had written there."""
    stored_for = {remote: stored for stored, remote in redirected.items()}
    for artifact_list in executor_output.artifacts.values():
        for artifact in artifact_list.artifacts:
            local = artifact.uri
            stored = stored_for.get(local_to_remote.get(local, ""))
            if stored is None:
                continue
            if keys.MEMBERS_PROPERTY not in artifact.metadata.fields:
                files, size = root_uploads.upload_folder(local, stored)
                print(f"Uploaded {files} files ({size / 2**20:.1f} MiB) of examples to {stored}")
            shutil.rmtree(local, ignore_errors=True)
            artifact.uri = stored


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
