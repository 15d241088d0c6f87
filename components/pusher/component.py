"""The Pusher: TFX's, staged (``executor``), and held back by drift when asked.

TFX's Pusher pushes a model the Evaluator blessed. This one also takes the
span's ``drift`` (DriftCheck's anomalies): with ``on_drift="block"`` a model
trained on a span whose data drifted from the previous span's is not pushed,
whatever its metrics; ``"warn"`` pushes it and the run's summary says so.
"""

from __future__ import annotations

import json

from tfx import types
from tfx.dsl.components.base import base_component, executor_spec
from tfx.proto import pusher_pb2
from tfx.types import standard_artifacts, standard_component_specs
from tfx.types.component_spec import ChannelParameter

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.pusher import executor
from tfrecord_pipelines.components.pusher.on_drift import BLOCK, ON_DRIFT


class PusherSpec(standard_component_specs.PusherSpec):
    """TFX's Pusher spec plus the span's drift."""

    INPUTS = {
        **standard_component_specs.PusherSpec.INPUTS,
        keys.DRIFT_KEY: ChannelParameter(type=standard_artifacts.ExampleAnomalies, optional=True),
    }


class Pusher(base_component.BaseComponent):
    """Pushes a blessed model to a filesystem destination, through a staging folder.

    Outputs: ``pushed_model`` (PushedModel), as TFX's Pusher; with drift that
    blocked the push, its custom property ``blocked_by_drift`` names the
    drifted features.
    """

    SPEC_CLASS = PusherSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

    def __init__(
        self,
        model: types.BaseChannel,
        model_blessing: types.BaseChannel,
        push_destination: pusher_pb2.PushDestination,
        custom_config: dict | None = None,
        drift: types.BaseChannel | None = None,
        on_drift: str = BLOCK,
    ):
        """Builds the component.

        Args:
          model: the Trainer's model.
          model_blessing: the Evaluator's blessing.
          push_destination: where blessed models go (a filesystem folder).
          custom_config: the executor's settings (``keys.PUBLISH_KEY``).
          drift: DriftCheck's anomalies for the span the model trained on.
          on_drift: ``block`` (a drifted span's model is not pushed) or ``warn``.

        Raises:
          ValueError: on an unknown on_drift.
        """
        if on_drift not in ON_DRIFT:
            raise ValueError(f"on_drift must be one of {', '.join(ON_DRIFT)}, got {on_drift!r}.")
        config = {**(custom_config or {}), keys.ON_DRIFT_KEY: on_drift}
        super().__init__(
            spec=PusherSpec(
                model=model,
                model_blessing=model_blessing,
                drift=drift,
                push_destination=push_destination,
                custom_config=json.dumps(config),
                pushed_model=types.Channel(type=standard_artifacts.PushedModel),
            )
        )
