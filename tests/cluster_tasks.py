"""A task as the cluster-like harness (``cluster_runs``) ran it: its record, or its failure."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from google.protobuf import struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2


class TaskFailed(RuntimeError):
    """A task failed: its command exited non-zero, or the launcher refused it (the logs' or
    the launcher's words are in the message)."""

    def __init__(self, task: str, logs: str, log_uri: str | None = None) -> None:
        # Without faulthandler's list of extension modules, which would fill the tail.
        shown = "\n".join(x for x in logs.splitlines() if not x.startswith("Extension modules:"))
        super().__init__(f"{task} failed:\n{shown[-4000:]}")
        self.task = task
        self.logs = logs
        # Where the launcher uploaded the executor's logs (a failed command's too).
        self.log_uri = log_uri


@dataclasses.dataclass(frozen=True)
class TaskRecord:
    """One task as the launcher ran it."""

    executor_input: pipeline_spec_pb2.ExecutorInput
    # Each output as ML Metadata gives it back to a later task: name -> (uri, metadata).
    outputs: dict[str, tuple[str, dict]]
    # Each output's ML Metadata id, by name.
    output_ids: dict[str, int]
    logs: str
    # What the launcher copied into the pod before the command: each file's path in the pod
    # and bytes, and the seconds the copy took.
    staged: tuple[tuple[str, int], ...]
    staged_seconds: float
    # The PVC mounts and secret variables the pod got.
    mounts: tuple[str, ...]
    secret_variables: tuple[str, ...]
    # The task's wall seconds: the copies, the container, the uploads and the recording.
    seconds: float = 0.0
    # Its output parameters, as the next task's driver reads them.
    parameters: Mapping[str, struct_pb2.Value] = dataclasses.field(default_factory=dict)
    # Whether the driver reused a cached execution's outputs instead of running it.
    cached: bool = False

    @property
    def staged_bytes(self) -> int:
        return sum(size for _, size in self.staged)
