"""Executions a killed run left RUNNING: marked CANCELED, their partial outputs removed.

TFX publishes an execution's outputs only when it succeeds, so nothing reads
what a killed execution half-wrote; but the execution stays RUNNING in ML
Metadata for ever and its folders stay on disk. Called under the output
lock, when no other run of the pipeline can be under way.
"""

from __future__ import annotations

import dataclasses
import os
import shutil

from ml_metadata.proto import metadata_store_pb2

from tfrecord_pipelines.local.run_record import node_ids_by_execution

_UNFINISHED = (metadata_store_pb2.Execution.NEW, metadata_store_pb2.Execution.RUNNING)
# TFX's layout under a node's folder (tfx.orchestration.portable.outputs_utils).
_SYSTEM = ".system"
_EXECUTOR_EXECUTION = "executor_execution"
_STATEFUL_WORKING_DIR = "stateful_working_dir"


@dataclasses.dataclass(frozen=True)
class InterruptedExecution:
    """An execution found unfinished with no run under way, and what was removed of it."""

    node_id: str
    execution_id: int
    removed: tuple[str, ...]


def _partial_outputs(node_dir: str, execution: metadata_store_pb2.Execution) -> list[str]:
    """The folders TFX made for the execution: ``<node>/<output key>/<id>`` and system ones.

    TFX does not record which stateful working folder an execution used, and
    removes it when an execution ends; with no run under way, any left is a
    killed execution's.
    """
    paths = []
    if os.path.isdir(node_dir):
        for key in os.listdir(node_dir):
            if key != _SYSTEM:
                paths.append(os.path.join(node_dir, key, str(execution.id)))
    paths.append(os.path.join(node_dir, _SYSTEM, _EXECUTOR_EXECUTION, str(execution.id)))
    stateful = os.path.join(node_dir, _SYSTEM, _STATEFUL_WORKING_DIR)
    if os.path.isdir(stateful):
        paths += [os.path.join(stateful, name) for name in os.listdir(stateful)]
    return [p for p in paths if os.path.exists(p)]


def cancel_interrupted_executions(
    store, pipeline_name: str, pipeline_root: str
) -> list[InterruptedExecution]:
    """Marks the pipeline's NEW or RUNNING executions CANCELED and removes their folders."""
    node_ids = node_ids_by_execution(store, pipeline_name)
    unfinished = [
        e for e in store.get_executions_by_id(sorted(node_ids)) if e.last_known_state in _UNFINISHED
    ]
    found = []
    for execution in unfinished:
        node_id = node_ids[execution.id]
        removed = _partial_outputs(os.path.join(pipeline_root, node_id), execution)
        for path in removed:
            shutil.rmtree(path, ignore_errors=True)
        execution.last_known_state = metadata_store_pb2.Execution.CANCELED
        store.put_executions([execution])
        found.append(InterruptedExecution(node_id, execution.id, tuple(removed)))
    return found
