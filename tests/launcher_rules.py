"""KFP's launcher's refusals and ML Metadata's round trip, for the cluster-like harness.

Read in kubeflow/pipelines at 7b70c7b95f68, ``backend/src/v2`` (file:line at each
rule). Wherever the launcher fails a task, these fail with its message:

- a URI it cannot parse into a bucket (``objectstore/config.go:118-169``), which
  ``fetchNonDefaultBuckets`` meets first for every input not under the pipeline
  root (``component/launcher_v2.go:1030-1034``);
- an input object whose key has a ``..`` component (``objectstore/object_store.go:146-148``);
- an output uploaded outside the pipeline root's bucket and prefix
  (``KeyFromURI``, ``objectstore/config.go:101-112``; ``launcher_v2.go:820-823``);
- an output parameter in neither the executor output nor its file
  (``component/launcher_v2.go:484-515``);
- an output's metadata value ML Metadata cannot take: a null
  (``metadata/converter.go:138-170``, called at ``metadata/client.go:1215``).

ML Metadata is the real store (the ``ml-metadata`` package, in memory): an output is
recorded as ``RecordArtifact`` records it (``metadata/client.go:1214-1274``: the
converted metadata, ``display_name`` and ``store_session_info`` added) and read back
for the next task as the driver reads it (``metadata/converter.go:181-221``,
``metadata/client.go:245-261``): the artifact's id as its name, a bool as an
integer, a list as ``{"list": [...]}``, a struct as ``{"struct": {...}}``, and an
empty instance schema.
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import re
import threading
from collections.abc import Callable
from pathlib import Path

import yaml
from google.protobuf import json_format, struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2
from ml_metadata.metadata_store import metadata_store
from ml_metadata.proto import metadata_store_pb2

# objectstore/config.go:118, bucketPattern; :137 and :161, the schemes it opens.
_BUCKET_PATTERN = re.compile(r"(^[a-z][a-z0-9]+:///?)([^/?]+)(/[^?]*)?(\?.+)?$")
_SCHEMES = ("gs://", "s3://", "minio://", "mem://")
# component/launcher_v2.go:955-958: an input so flagged is in the workspace, not downloaded.
WORKSPACE_FLAG = "_kfp_workspace"


class LauncherError(RuntimeError):
    """What the launcher fails a task with, in its own words."""


@dataclasses.dataclass(frozen=True)
class BucketConfig:
    """objectstore.Config: a bucket, and the prefix under it the launcher's bucket opens."""

    scheme: str
    bucket: str
    prefix: str = ""

    @classmethod
    def of_pipeline_root(cls, root: str) -> BucketConfig:
        """ParseBucketPathToConfig (objectstore/config.go:130-152)."""
        match = _BUCKET_PATTERN.match(root)
        if match is None:
            raise LauncherError(
                f"parse bucket config failed: unrecognized pipeline root format: {root!r}"
            )
        scheme, bucket, path, _ = match.groups()
        if scheme not in _SCHEMES:
            raise LauncherError(f"parse bucket config failed: unsupported Cloud bucket: {root!r}")
        prefix = (path or "").lstrip("/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        return cls(scheme, bucket, prefix)

    @classmethod
    def of_artifact(cls, uri: str) -> BucketConfig:
        """ParseBucketConfigForArtifactURI (objectstore/config.go:154-169)."""
        match = _BUCKET_PATTERN.match(uri)
        if match is None:
            raise LauncherError(f"parse bucket config failed: unrecognized uri format: {uri!r}")
        scheme, bucket, _, _ = match.groups()
        if scheme not in _SCHEMES:
            raise LauncherError(f"parse bucket config failed: unsupported Cloud bucket: {uri!r}")
        return cls(scheme, bucket)

    def prefixed_bucket(self) -> str:
        """PrefixedBucket (objectstore/config.go:97-99): Go's path.Join drops a trailing /."""
        return self.scheme + posixpath.normpath(posixpath.join(self.bucket, self.prefix))

    def key_from_uri(self, uri: str) -> str:
        """KeyFromURI (objectstore/config.go:101-112)."""
        prefixed = self.prefixed_bucket()
        if not uri.startswith(prefixed):
            raise LauncherError(f"URI {uri!r} does not have expected bucket prefix {prefixed!r}")
        key = uri[len(prefixed) :].lstrip("/")
        if not key:
            raise LauncherError(f"URI {uri!r} has empty key given prefixed bucket {prefixed!r}")
        return key


def check_input_buckets(inputs: pipeline_spec_pb2.ExecutorInput.Inputs, root: BucketConfig) -> None:
    """fetchNonDefaultBuckets (component/launcher_v2.go:1010-1048), run before any download:
    the first artifact of each input not under the pipeline root must name a bucket.

    Raises:
      LauncherError: as downloadArtifacts wraps it (launcher_v2.go:929-940).
    """
    for name, artifact_list in inputs.artifacts.items():
        if not artifact_list.artifacts:
            continue
        uri = artifact_list.artifacts[0].uri
        if uri.startswith("oci://") or uri.startswith(root.prefixed_bucket()):
            continue
        try:
            BucketConfig.of_artifact(uri)
        except LauncherError as e:
            raise LauncherError(
                "failed to fetch non default buckets: failed to parse bucketConfig for output "
                f"artifact {name!r} with uri {uri!r}: {e}"
            ) from None


def input_key(name: str, uri: str, root: BucketConfig) -> str:
    """The key an input is downloaded from (launcher_v2.go:970-993): under the pipeline
    root's bucket, or the bucket its URI names.

    Raises:
      LauncherError: as the launcher fails the download.
    """
    config = root if uri.startswith(root.prefixed_bucket()) else BucketConfig.of_artifact(uri)
    try:
        return config.key_from_uri(uri)
    except LauncherError as e:
        raise LauncherError(
            f"failed to download input artifact {name!r} from remote storage URI {uri!r}: {e}"
        ) from None


def downloaded_path(blob_dir: str, object_key: str) -> str | None:
    """Where DownloadBlob puts one listed object, relative to the input's local folder
    (objectstore/object_store.go:176-205): None for a key not under ``blob_dir``, which it
    skips (isBlobKeyUnderPrefix, :171-174), "." for the key itself.

    Raises:
      LauncherError: a key with a '..' component (sanitizeDownloadPath, :146-148; a key
        under the prefix without one cannot resolve outside the folder, its :160-167).
    """
    prefix = blob_dir.rstrip("/")
    if object_key != prefix and not object_key.startswith(prefix + "/"):
        return None
    if ".." in object_key.split("/"):
        raise LauncherError(
            f"path traversal detected: blob key {object_key!r} contains '..' component"
        )
    return posixpath.relpath(object_key, blob_dir)


def output_key(name: str, uri: str, root: BucketConfig) -> str:
    """The key an output is uploaded to: always in the pipeline root's bucket
    (launcher_v2.go:819-823, the default bucket alone).

    Raises:
      LauncherError: an output outside the root's bucket and prefix.
    """
    try:
        return root.key_from_uri(uri)
    except LauncherError as e:
        raise LauncherError(f"failed to upload output artifact {name!r}: {e}") from None


def merge_runtime_artifacts(
    produced: pipeline_spec_pb2.RuntimeArtifact, target: pipeline_spec_pb2.RuntimeArtifact
) -> None:
    """mergeRuntimeArtifacts (launcher_v2.go:1188-1205): the executor output's URI if set, its
    metadata fields over the driver's; in place. (Its custom path too, a field that the
    pipeline spec this project's kfp reads has not got: no task here can write one.)"""
    if produced.uri:
        target.uri = produced.uri
    for key, value in produced.metadata.fields.items():
        target.metadata.fields[key].CopyFrom(value)


def collect_output_parameters(
    executor_input: pipeline_spec_pb2.ExecutorInput,
    component: dict,
    on_pod_disk: Callable[[str], Path],
) -> dict[str, struct_pb2.Value]:
    """collectOutputParameters (launcher_v2.go:484-515): each output parameter from the
    executor output, else from its file (``TextToPbValue``).

    Args:
      executor_input: the task's, its outputs' files named.
      component: the task's component spec (its output parameters' types).
      on_pod_disk: where a path of the pod lies on this machine.

    Raises:
      LauncherError: a parameter in neither, in the launcher's words.
    """
    written = pipeline_spec_pb2.ExecutorOutput()
    output_file = on_pod_disk(executor_input.outputs.output_file)
    if output_file.exists():
        json_format.Parse(output_file.read_text(), written, ignore_unknown_fields=True)
    found = {}
    for name, parameter in executor_input.outputs.parameters.items():
        if name in written.parameter_values:
            found[name] = written.parameter_values[name]
            continue
        kind = component["outputDefinitions"]["parameters"][name]["parameterType"]
        path = on_pod_disk(parameter.output_file)
        if not path.exists():
            raise LauncherError(
                f"failed to read output parameter name={name!r} type={kind!r} "
                f"path={parameter.output_file!r}: open {parameter.output_file}: no such file "
                "or directory"
            )
        found[name] = _text_to_value(path.read_text(), kind)
    return found


def _text_to_value(text: str, kind: str) -> struct_pb2.Value:
    """metadata.TextToPbValue: a parameter file's text as its type's value."""
    value = struct_pb2.Value()
    if kind == "STRING":
        value.string_value = text
    elif kind in ("NUMBER_INTEGER", "NUMBER_DOUBLE"):
        value.number_value = float(text)
    elif kind == "BOOLEAN":
        value.bool_value = text.strip() == "true"
    else:
        json_format.Parse(text, value)
    return value


def _mlmd_value(value: struct_pb2.Value) -> metadata_store_pb2.Value:
    """StructValueToMLMDValue (metadata/converter.go:138-170)."""
    kind = value.WhichOneof("kind")
    converted = metadata_store_pb2.Value()
    if kind == "string_value":
        converted.string_value = value.string_value
    elif kind == "number_value":
        converted.double_value = value.number_value
    elif kind == "bool_value":
        converted.int_value = int(value.bool_value)
    elif kind == "list_value":
        converted.struct_value.fields["list"].list_value.CopyFrom(value.list_value)
    elif kind == "struct_value":
        converted.struct_value.fields["struct"].struct_value.CopyFrom(value.struct_value)
    else:  # "TODO: support null" (converter.go:167)
        go_type = {"null_value": "*structpb.Value_NullValue"}.get(kind, "<nil>")
        raise LauncherError(
            "failed to convert RuntimeArtifact to MLMD artifact: unknown/unsupported value "
            f"type {go_type}"
        )
    return converted


def _struct_value(value: metadata_store_pb2.Value) -> struct_pb2.Value:
    """toRuntimeArtifact's property conversion (metadata/converter.go:194-212)."""
    kind = value.WhichOneof("value")
    converted = struct_pb2.Value()
    if kind == "string_value":
        converted.string_value = value.string_value
    elif kind == "double_value":
        converted.number_value = value.double_value
    elif kind == "int_value":
        converted.number_value = float(value.int_value)
    elif kind == "struct_value":
        converted.struct_value.CopyFrom(value.struct_value)
    else:
        raise LauncherError(
            "failed to convert MLMD artifact to RuntimeArtifact: unknown property type in "
            f"MLMD artifact: {kind}"
        )
    return converted


def _type_name(type_schema: pipeline_spec_pb2.ArtifactTypeSchema) -> str:
    """getArtifactSchema then SchemaToArtifactType (launcher_v2.go:1173-1186,
    metadata/client.go:1199-1211)."""
    kind = type_schema.WhichOneof("kind")
    if kind == "schema_title":
        return type_schema.schema_title
    if kind == "instance_schema":
        data = yaml.safe_load(type_schema.instance_schema) or {}
        title = data.get("title") if isinstance(data, dict) else None
        if title:
            return str(title)
    raise LauncherError(f"failed to determine schema for output: {kind or 'no type'}")


class MetadataStore:
    """ML Metadata as the launcher records outputs and the driver reads them back."""

    def __init__(self, session_info: dict | None = None) -> None:
        config = metadata_store_pb2.ConnectionConfig()
        config.fake_database.SetInParent()
        self._store = metadata_store.MetadataStore(config)
        self._session_info = json.dumps(session_info)
        # Tasks run at once (argo_schedule): one call into the store at a time.
        self._lock = threading.Lock()

    def record(
        self,
        name: str,
        artifact: pipeline_spec_pb2.RuntimeArtifact,
        session_info: str | None = None,
    ) -> int:
        """RecordArtifact (metadata/client.go:1214-1274); returns the artifact's id.

        Raises:
          LauncherError: a metadata value ML Metadata cannot take, in the launcher's words.
        """
        recorded = metadata_store_pb2.Artifact(uri=artifact.uri, state="LIVE")
        try:
            for key, value in artifact.metadata.fields.items():
                if key != WORKSPACE_FLAG:  # converter.go:122-126
                    recorded.custom_properties[key].CopyFrom(_mlmd_value(value))
        except LauncherError as e:
            raise LauncherError(
                f"unable to produce MLMD artifact for output {name!r}: {e}"
            ) from None
        if "display_name" not in recorded.custom_properties:
            recorded.custom_properties["display_name"].string_value = name
        if "store_session_info" not in recorded.custom_properties:
            recorded.custom_properties["store_session_info"].string_value = (
                session_info or self._session_info
            )
        type_name = _type_name(artifact.type)
        with self._lock:
            recorded.type_id = self._store.put_artifact_type(
                metadata_store_pb2.ArtifactType(name=type_name)
            )
            [artifact_id] = self._store.put_artifacts([recorded])
        return artifact_id

    def read(self, artifact_id: int) -> pipeline_spec_pb2.RuntimeArtifact:
        """An artifact as the driver hands it to a task that reads it (OutputArtifact's
        ToRuntimeArtifact, metadata/client.go:245-261): no type, its id as its name."""
        with self._lock:
            [stored] = self._store.get_artifacts_by_id([artifact_id])
        artifact = pipeline_spec_pb2.RuntimeArtifact(name=str(stored.id), uri=stored.uri)
        artifact.type.instance_schema = ""
        for properties in (stored.properties, stored.custom_properties):
            for key, value in properties.items():
                artifact.metadata.fields[key].CopyFrom(_struct_value(value))
        return artifact

    def as_dict(self, artifact_id: int) -> tuple[str, dict]:
        """The URI and metadata a later task reads for an artifact."""
        artifact = self.read(artifact_id)
        return artifact.uri, json_format.MessageToDict(artifact.metadata)
