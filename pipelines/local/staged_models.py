"""Publishes staged pushes once ML Metadata records them; discards the others.

The Pusher (``tfrecord_pipelines.components.pusher.executor``, in local runs) leaves a blessed
model in ``<serving dir>/.staged-<version>``. Only after its execution is
recorded as complete does the model move to ``<serving dir>/<version>``,
where model servers look: a run that fails before that, a full disk while
recording the push, a kill, deploys nothing.
"""

from __future__ import annotations

import os
import shutil

from ml_metadata.proto import metadata_store_pb2

from tfrecord_pipelines.components.keys import STAGED_PATH_PROPERTY
from tfrecord_pipelines.components.pusher.executor import STAGED_PREFIX
from tfrecord_pipelines.local.run_record import node_ids_by_execution

_DONE = (metadata_store_pb2.Execution.COMPLETE, metadata_store_pb2.Execution.CACHED)


def _recorded_pushes(store, pipeline_name: str, pusher_id: str) -> dict[str, str]:
    """Staged path → serving path, for pushes whose execution ML Metadata records as done."""
    pushers = [
        i for i, node in node_ids_by_execution(store, pipeline_name).items() if node == pusher_id
    ]
    done = {e.id for e in store.get_executions_by_id(pushers) if e.last_known_state in _DONE}
    events = store.get_events_by_execution_ids(sorted(done))
    outputs = [e.artifact_id for e in events if e.type == metadata_store_pb2.Event.OUTPUT]
    pushes = {}
    for artifact in store.get_artifacts_by_id(outputs):
        staged = artifact.custom_properties.get(STAGED_PATH_PROPERTY)
        if staged is not None:
            destination = artifact.custom_properties["pushed_destination"].string_value
            pushes[staged.string_value] = destination
    return pushes


def settle_staged_models(
    store, pipeline_name: str, pusher_id: str, serving_dir: str
) -> tuple[list[str], list[str]]:
    """Moves recorded pushes into place and deletes unrecorded staged models.

    Call it only while no run of the pipeline is under way (under its output lock).

    Returns:
      (the serving folders published, the staged folders deleted).
    """
    if not os.path.isdir(serving_dir):
        return [], []
    staged = [
        os.path.join(serving_dir, name)
        for name in sorted(os.listdir(serving_dir))
        if name.startswith(STAGED_PREFIX)
    ]
    if not staged:
        return [], []
    recorded = _recorded_pushes(store, pipeline_name, pusher_id)
    published, deleted = [], []
    for path in staged:
        destination = recorded.get(path)
        if destination and not os.path.exists(destination):
            os.rename(path, destination)
            published.append(destination)
        else:
            shutil.rmtree(path, ignore_errors=True)
            deleted.append(path)
    return published, deleted
