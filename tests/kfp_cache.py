"""KFP open source's cache, for the cluster-like harness (``cluster_runs``): a contract test of
how the driver keys, looks up and reuses a task's outputs.

Read in kubeflow/pipelines at 7b70c7b95f68, ``backend/src/v2`` (file:line at each rule):

- The key (``cacheutils/cache.go:173-229``, GenerateCacheKey): the input artifacts'
  names, which the driver sets to their ML Metadata ids; the input parameters' values;
  each output artifact's name, type and metadata (its URI wiped); the output
  parameters' types; the image; the command and arguments as compiled (placeholders
  unresolved); the PVCs mounted, deduplicated and sorted (``driver/cache.go:87-130``).
  A task's ``cachingOptions.cacheKey``, when set, replaces all of it: the component's
  name, a zero byte and the key (``driver/cache.go:88-96``). Hashed as SHA-256 of the
  key's JSON (``cache.go:150-171``; Go's encoding/json sorts map keys).
- The look-up (``driver/cache.go:132-147``; ``cacheutils/cache.go:105-138``): only for a
  task whose ``cachingOptions.enableCache`` is true, by fingerprint, pipeline name and
  namespace; the newest entry wins.
- A hit (``driver/container.go:217-240``, ``driver/cache.go:58-82``): the task does not
  run; its outputs are the cached execution's own artifacts (their ids, so the tasks
  after it see the same inputs and can hit too) and its output parameters.
- An entry is made by the launcher after the command succeeded and its outputs were
  uploaded (``component/launcher_v2.go:299-317``), only for a task that looked up and
  missed (its fingerprint is not empty).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2


@dataclasses.dataclass(frozen=True)
class CachedExecution:
    """What a hit hands on: the execution's output artifacts' ids and its output parameters."""

    output_ids: Mapping[str, int]
    parameters: Mapping[str, object]


def _json(message) -> object:
    return json_format.MessageToDict(message)


def fingerprint(
    task: Mapping,
    container: Mapping,
    executor_input: pipeline_spec_pb2.ExecutorInput,
    output_parameter_types: Mapping[str, str],
    pvc_names: Sequence[str],
) -> str:
    """The task's cache fingerprint as the driver computes it (getFingerPrint).

    Raises:
      ValueError: an output parameter with no type in the component, as
        GenerateCacheKey refuses it (cache.go:215-218).
    """
    custom = task.get("cachingOptions", {}).get("cacheKey", "")
    if custom:
        digest = hashlib.sha256()
        if task.get("componentRef", {}).get("name"):
            digest.update(task["componentRef"]["name"].encode() + b"\0")
        digest.update(custom.encode())
        return digest.hexdigest()
    inputs, outputs = executor_input.inputs, executor_input.outputs
    key = {
        "inputArtifactNames": {
            name: {"artifactNames": [a.name for a in listed.artifacts]}
            for name, listed in inputs.artifacts.items()
        },
        "inputParameterValues": {
            name: _json(value) for name, value in inputs.parameter_values.items()
        },
        "outputArtifactsSpec": {
            name: {
                "name": listed.artifacts[0].name,
                "type": _json(listed.artifacts[0].type),
                "metadata": _json(listed.artifacts[0].metadata),
            }
            for name, listed in outputs.artifacts.items()
            if listed.artifacts
        },
        "outputParametersSpec": {},
        "containerSpec": {
            "image": container["image"],
            "cmdArgs": [*container.get("command", []), *container.get("args", [])],
            "pvcNames": sorted(set(pvc_names)),
        },
    }
    for name in outputs.parameters:
        if name not in output_parameter_types:
            raise ValueError(f"unknown parameter {name!r} found in ExecutorInput_Outputs")
        key["outputParametersSpec"][name] = output_parameter_types[name]
    text = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def enabled(task: Mapping) -> bool:
    """Whether the driver looks the task up (``cachingOptions.enableCache``)."""
    return bool(task.get("cachingOptions", {}).get("enableCache"))


class Cache:
    """The API server's cache entries: (pipeline, namespace, fingerprint) -> executions,
    newest last."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str, str], list[CachedExecution]] = {}
        self._lock = threading.Lock()
        # Every look-up, in order: (pipeline, task, hit).
        self.lookups: list[tuple[str, str, bool]] = []

    def look_up(self, pipeline: str, namespace: str, task: str, key: str) -> CachedExecution | None:
        """The newest execution cached under the key (GetExecutionCache), or None."""
        with self._lock:
            found = self._entries.get((pipeline, namespace, key))
            self.lookups.append((pipeline, task, bool(found)))
            return found[-1] if found else None

    def add(self, pipeline: str, namespace: str, key: str, execution: CachedExecution) -> None:
        """CreateExecutionCache, after the task succeeded."""
        with self._lock:
            self._entries.setdefault((pipeline, namespace, key), []).append(execution)
