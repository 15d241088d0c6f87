"""TFX's Pusher, pushing through a staging folder.

TFX's Pusher copies the model straight into ``<serving dir>/<version>``. A
model server watching that folder can load a model whose copy is still under
way, and when the copy succeeds but recording the push in ML Metadata fails
(a full disk), a run reported as failed has deployed a model. This executor
copies into ``.staged-<version>`` (model servers skip names that are not a
version number) and either renames it into place itself or, when
``custom_config["publish"]`` is ``after_metadata``, leaves that to the
orchestrator once the Pusher's execution is recorded as complete
(``tfrecord_pipelines.local.staged_models`` does it for local runs).
"""

from __future__ import annotations

import os
import time
from typing import Any

from absl import logging
from tfx import types
from tfx.components.pusher import executor as pusher_executor
from tfx.proto import pusher_pb2
from tfx.types import artifact_utils
from tfx.utils import json_utils, proto_utils

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.keys import (
    BLOCKED_PROPERTY,
    DRIFT_KEY,
    DRIFTED_PROPERTY,
    ON_DRIFT_KEY,
    PUBLISH_AFTER_METADATA,
    PUBLISH_KEY,
    STAGED_PATH_PROPERTY,
)
from tfrecord_pipelines.components.pusher.on_drift import BLOCK
from tfrecord_pipelines.components.storage import filesystem

STAGED_PREFIX = ".staged-"
_SAVED_MODEL_PB = "saved_model.pb"


def _filesystem_destination(exec_properties: dict[str, Any]) -> str:
    destination = pusher_pb2.PushDestination()
    proto_utils.json_to_proto(exec_properties[keys.PUSH_DESTINATION_KEY], destination)
    if destination.WhichOneof("destination") != "filesystem":
        raise NotImplementedError("This Pusher pushes to a filesystem destination only.")
    return destination.filesystem.base_directory


def _free_version(base_directory: str) -> str:
    """A UNIX-time version (TFX's default) that no pushed or staged model holds yet."""
    version = int(time.time())
    while filesystem.exists(os.path.join(base_directory, str(version))) or filesystem.exists(
        os.path.join(base_directory, f"{STAGED_PREFIX}{version}")
    ):
        version += 1
    return str(version)


def copy_model(model_path: str, destination: str) -> None:
    """Copies a SavedModel folder, ``saved_model.pb`` last (loaders wait for that file)."""
    filesystem.copy_tree(model_path, destination, last=(_SAVED_MODEL_PB,))


def _drifted(input_dict: dict[str, list[types.Artifact]]) -> str:
    """The drifted features of the model's span, comma-separated ("" without drift)."""
    drift = input_dict.get(DRIFT_KEY) or []
    return drift[0].get_string_custom_property(DRIFTED_PROPERTY) if drift else ""


class Executor(pusher_executor.Executor):
    """Pushes a blessed model through ``.staged-<version>``; see the module docstring."""

    def Do(  # noqa: N802 - TFX API
        self,
        input_dict: dict[str, list[types.Artifact]],
        output_dict: dict[str, list[types.Artifact]],
        exec_properties: dict[str, Any],
    ) -> None:
        """Pushes the model if it is blessed; records where in the PushedModel artifact."""
        self._log_startup(input_dict, output_dict, exec_properties)
        model_push = artifact_utils.get_single_instance(output_dict[keys.PUSHED_MODEL_KEY])
        custom_config = (
            json_utils.loads(exec_properties.get(keys.CUSTOM_CONFIG_KEY) or "null") or {}
        )
        drifted = _drifted(input_dict)
        blocked = bool(drifted) and custom_config.get(ON_DRIFT_KEY, BLOCK) == BLOCK
        if blocked:
            # Recorded whether or not the model was blessed: both are reasons it was not pushed.
            logging.warning("Not pushed: the span drifted from the previous one (%s).", drifted)
            model_push.set_string_custom_property(BLOCKED_PROPERTY, drifted)
        if blocked or not self.CheckBlessing(input_dict):
            self._MarkNotPushed(model_push)
            return
        model_path = self.GetModelPath(input_dict)
        base_directory = _filesystem_destination(exec_properties)
        version = _free_version(base_directory)
        serving_path = os.path.join(base_directory, version)
        staged_path = os.path.join(base_directory, f"{STAGED_PREFIX}{version}")
        copy_model(model_path, staged_path)
        filesystem.copy_tree(model_path, model_push.uri)
        self._MarkPushed(model_push, pushed_destination=serving_path, pushed_version=version)
        if custom_config.get(PUBLISH_KEY) == PUBLISH_AFTER_METADATA:
            model_push.set_string_custom_property(STAGED_PATH_PROPERTY, staged_path)
            logging.info("Model staged at %s until the push is recorded.", staged_path)
            return
        filesystem.move_tree(staged_path, serving_path)
        logging.info("Model pushed to %s.", serving_path)
