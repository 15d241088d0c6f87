"""One pipeline run as ML Metadata recorded it: each node's execution and its outputs.

Every query goes through the run's ``pipeline_run`` context, so what is read
belongs to that run: a reused (CACHED) execution links the earlier artifacts
into it, and nothing of another run, earlier, later or concurrent, does.
"""

from __future__ import annotations

import dataclasses
import json
import re

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2
from tfx.orchestration.metadata import sqlite_metadata_connection_config

from tfrecord_pipelines.components.keys import NODE_CONTEXT

PIPELINE_RUN_CONTEXT = "pipeline_run"
# Where TFX records a failed execution's traceback.
_EXECUTION_RESULT = "__execution_result__"
# A traceback's "SomeError: message" line.
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception)\b")
_State = metadata_store_pb2.Execution.State
STATE_NAMES = {
    _State.NEW: "new",
    _State.RUNNING: "running",
    _State.COMPLETE: "complete",
    _State.CACHED: "cached",
    _State.FAILED: "failed",
    _State.CANCELED: "canceled",
}


@dataclasses.dataclass(frozen=True)
class NodeExecution:
    """A node's execution in one run.

    Attributes:
      node_id: the component's id (``Trainer``, ``ShardedExampleGen``...).
      execution: the ML Metadata execution.
      outputs: its published output artifacts by output key (none unless it
        completed or was reused).
      inputs: its input artifacts by input key.
    """

    node_id: str
    execution: metadata_store_pb2.Execution
    outputs: dict[str, list[metadata_store_pb2.Artifact]]
    inputs: dict[str, list[metadata_store_pb2.Artifact]] = dataclasses.field(default_factory=dict)

    @property
    def state(self) -> str:
        """``complete``, ``cached``, ``failed``, ``canceled``, ``running`` or ``new``."""
        return STATE_NAMES.get(self.execution.last_known_state, "unknown")

    @property
    def error(self) -> str:
        """A failed execution's first error (the cause, in a chained traceback) as TFX
        recorded it ("" if none)."""
        result = self.execution.custom_properties.get(_EXECUTION_RESULT)
        if result is None:
            return ""
        message = json.loads(result.string_value or "{}").get("resultMessage", "")
        errors = [line.strip() for line in message.splitlines() if _ERROR_LINE.match(line)]
        return errors[0] if errors else message.strip()[-300:]

    def output(self, key: str) -> metadata_store_pb2.Artifact | None:
        """The single artifact of output ``key``, or None."""
        artifacts = self.outputs.get(key) or []
        return artifacts[0] if artifacts else None


def open_store(metadata_path: str) -> metadata_store.MetadataStore:
    """The SQLite ML Metadata store of a local pipeline, connected as LocalDagRunner connects."""
    return metadata_store.MetadataStore(sqlite_metadata_connection_config(metadata_path))


def node_ids_by_execution(store, pipeline_name: str) -> dict[int, str]:
    """The node id of every execution of the pipeline's nodes, by execution id."""
    prefix = f"{pipeline_name}."
    node_ids = {}
    for context in store.get_contexts_by_type(NODE_CONTEXT):
        if context.name.startswith(prefix):
            for execution in store.get_executions_by_context(context.id):
                node_ids[execution.id] = context.name[len(prefix) :]
    return node_ids


def read_run(store, pipeline_name: str, run_id: str) -> dict[str, NodeExecution]:
    """The executions of run ``run_id`` by node id; empty if the store has no such run."""
    context = store.get_context_by_type_and_name(PIPELINE_RUN_CONTEXT, run_id)
    if context is None:
        return {}
    executions = store.get_executions_by_context(context.id)
    node_ids = node_ids_by_execution(store, pipeline_name)
    events = store.get_events_by_execution_ids([e.id for e in executions])
    artifacts = {a.id: a for a in store.get_artifacts_by_id([e.artifact_id for e in events])}
    by_kind: dict[int, dict[int, dict[str, list]]] = {
        metadata_store_pb2.Event.OUTPUT: {},
        metadata_store_pb2.Event.INPUT: {},
    }
    for event in events:
        if event.type not in by_kind:
            continue
        key = event.path.steps[0].key if event.path.steps else ""
        by_kind[event.type].setdefault(event.execution_id, {}).setdefault(key, []).append(
            artifacts[event.artifact_id]
        )
    run = {}
    for execution in sorted(executions, key=lambda e: e.id):
        node_id = node_ids.get(execution.id)
        if node_id is not None:
            run[node_id] = NodeExecution(
                node_id,
                execution,
                by_kind[metadata_store_pb2.Event.OUTPUT].get(execution.id, {}),
                by_kind[metadata_store_pb2.Event.INPUT].get(execution.id, {}),
            )
    return run
