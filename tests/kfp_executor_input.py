"""Runs compiled KFP v2 tasks the way KFP's open-source driver and launcher do.

Mirrors, for tests, kubeflow/pipelines backend/src/v2: the driver builds the
ExecutorInput (``driver/resolve.go``: upstream outputs come from ML Metadata
with an empty ``instanceSchema``; ``provisionOutputs``: output URIs under the
pipeline root, typed by the component's outputDefinitions) and the launcher
substitutes it for ``{{$}}`` in the container command and args
(``component/launcher_v2.go``: ``compileCmdAndArgs``), runs them, and records
the outputs merged with the executor output file (``mergeRuntimeArtifacts``).
Every URI here is a local path under a test folder.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

_EXECUTOR_INPUT = "{{$}}"
_ARTIFACT_PLACEHOLDER = re.compile(
    r"\{\{\$\.(inputs|outputs)\.artifacts\['([^']+)'\]\.(uri|path)\}\}"
)
_PARAMETER_PLACEHOLDER = re.compile(r"\{\{\$\.inputs\.parameters\['([^']+)'\]\}\}")


@dataclass(frozen=True)
class TaskRun:
    """One task's run: what it was given, how it ended, what it reported."""

    task: str
    executor_input: dict[str, Any]
    process: subprocess.CompletedProcess
    executor_output: pipeline_spec_pb2.ExecutorOutput | None

    def output_uri(self, name: str) -> str:
        return self.executor_input["outputs"]["artifacts"][name]["artifacts"][0]["uri"]

    def output_metadata(self, name: str) -> dict[str, Any]:
        """The metadata the launcher records for output NAME (the executor's wins)."""
        if self.executor_output is None:
            raise RuntimeError(f"{self.task} wrote no executor output file.")
        reported = json_format.MessageToDict(self.executor_output.artifacts[name].artifacts[0])
        return reported.get("metadata", {})


def substitute_placeholders(strings: list[str], executor_input: dict[str, Any]) -> list[str]:
    """Fills KFP placeholders as the launcher does; local URIs are their own paths."""
    as_json = json.dumps(executor_input)

    def artifact(match: re.Match) -> str:
        side, name, _ = match.groups()
        return executor_input[side]["artifacts"][name]["artifacts"][0]["uri"]

    def parameter(match: re.Match) -> str:
        value = executor_input["inputs"]["parameterValues"][match.group(1)]
        return value if isinstance(value, str) else json.dumps(value)

    result = []
    for text in strings:
        text = text.replace(_EXECUTOR_INPUT, as_json)
        text = _PARAMETER_PLACEHOLDER.sub(parameter, _ARTIFACT_PLACEHOLDER.sub(artifact, text))
        if "{{$" in text.replace(as_json, ""):
            raise ValueError(f"Unhandled KFP placeholder in {text[:200]!r}")
        result.append(text)
    return result


class KfpTaskRunner:
    """Runs the tasks of a compiled PipelineSpec one by one, chaining their artifacts."""

    def __init__(self, spec_path: Path, root: Path, cwd: Path):
        # The PipelineSpec is the first YAML document; a platform spec may follow.
        self._spec = next(yaml.safe_load_all(spec_path.read_text()))
        self._root = root
        self._cwd = cwd
        self._runs: dict[str, TaskRun] = {}
        self._next_id = 1

    def task_spec(self, task: str) -> dict[str, Any]:
        return self._spec["root"]["dag"]["tasks"][task]

    def component(self, task: str) -> dict[str, Any]:
        return self._spec["components"][self.task_spec(task)["componentRef"]["name"]]

    def container(self, task: str) -> dict[str, Any]:
        label = self.component(task)["executorLabel"]
        return self._spec["deploymentSpec"]["executors"][label]["container"]

    def _input_artifact(self, producer: str, key: str) -> dict[str, Any]:
        """An upstream output as the driver reads it back from ML Metadata."""
        run = self.run(producer)  # KFP runs producers first (dependentTasks).
        if run.process.returncode != 0:
            raise RuntimeError(f"Upstream task {producer} failed:\n{run.process.stderr[-3000:]}")
        metadata = {**run.output_metadata(key), "display_name": key}
        artifact_id, self._next_id = str(self._next_id), self._next_id + 1
        return {
            "name": artifact_id,  # the ML Metadata artifact id
            "type": {"instanceSchema": ""},  # GetOutputArtifactsByExecutionId: Schema ""
            "uri": run.output_uri(key),
            "metadata": metadata,
        }

    def executor_input(self, task: str) -> dict[str, Any]:
        """The ExecutorInput JSON the driver builds for TASK."""
        inputs = self.task_spec(task).get("inputs", {})
        parameters = {}
        for name, spec in inputs.get("parameters", {}).items():
            if "runtimeValue" not in spec:
                raise ValueError(f"{task}.{name}: only constant parameters are handled: {spec}")
            parameters[name] = spec["runtimeValue"]["constant"]
        artifacts = {}
        for name, spec in inputs.get("artifacts", {}).items():
            source = spec["taskOutputArtifact"]
            artifacts[name] = {
                "artifacts": [
                    self._input_artifact(source["producerTask"], source["outputArtifactKey"])
                ]
            }
        outputs = {}
        for name, spec in (
            self.component(task).get("outputDefinitions", {}).get("artifacts", {}).items()
        ):
            output = {"uri": str(self._root / task / name), "type": spec["artifactType"]}
            if "metadata" in spec:
                output["metadata"] = spec["metadata"]
            outputs[name] = {"artifacts": [output]}
        return {
            "inputs": {"parameterValues": parameters, "artifacts": artifacts},
            "outputs": {
                "artifacts": outputs,
                "outputFile": str(self._root / "kfp_outputs" / task / "output_metadata.json"),
            },
        }

    def run(self, task: str) -> TaskRun:
        """Runs TASK's container command and args on this machine; records its outputs."""
        if task in self._runs:
            return self._runs[task]
        executor_input = self.executor_input(task)
        container = self.container(task)
        command = substitute_placeholders(
            [*container["command"], *container.get("args", [])], executor_input
        )
        if command[0] == "python":
            # The image puts the project's virtualenv first on PATH; here the
            # test runs in that virtualenv, whose interpreter is sys.executable.
            command[0] = sys.executable
        env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
        process = subprocess.run(
            command, cwd=self._cwd, env=env, capture_output=True, text=True, timeout=900
        )
        output_file = Path(executor_input["outputs"]["outputFile"])
        executor_output = None
        if output_file.exists():
            executor_output = json_format.Parse(
                output_file.read_text(), pipeline_spec_pb2.ExecutorOutput()
            )
        run = TaskRun(task, executor_input, process, executor_output)
        self._runs[task] = run
        return run


def count_tfrecords(path: Path) -> int:
    """Counts the records of a TFRecord file (gzipped when it ends in .gz)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    count = 0
    with opener(path, "rb") as f:
        while header := f.read(12):  # uint64 length, uint32 length CRC
            if len(header) < 12:
                raise ValueError(f"{path}: truncated record header")
            length = int.from_bytes(header[:8], "little")
            if len(f.read(length + 4)) < length + 4:  # data, uint32 data CRC
                raise ValueError(f"{path}: truncated record")
            count += 1
    return count
