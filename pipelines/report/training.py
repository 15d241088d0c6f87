"""Training as the Trainer logged it: per-epoch metrics from TensorBoard, the input stall.

The curves are read with TensorBoard's own event reader (``EventAccumulator``)
from the Keras TensorBoard callback's ``train/`` and ``validation/`` logs; the
input stall and its verdict from ``input_stall.json``, which the Trainer's
``InputStallReport`` writes.
"""

from __future__ import annotations

import dataclasses
import json
import os

from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util

from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.components.trainer.input_stall import (
    HOST_BOUND_SHARE,
    HOST_NAME,
    INPUT_BOUND_SHARE,
    METRIC_NAME,
    REPORT_FILE,
    START_NAME,
    advice,
)
from tfrecord_pipelines.report import charts

_EPOCH_PREFIX = "epoch_"
_LOG_FOLDERS = ("train", "validation")


@dataclasses.dataclass(frozen=True)
class TrainingView:
    """The Trainer's epochs.

    Attributes:
      metrics: each metric's values per epoch, by log folder (train, validation).
      charts: one SVG chart per metric, the input stall's with its threshold.
      stall: the last epoch's input stall (share of step time waiting for
        batches), or None without a report.
      host_stall: the last epoch's host stall (share of step time waiting for
        the host between calls), or None without a report.
      steps_per_call: the steps each call ran, or None if the report does not say.
      verdict: ``input-bound``, ``host-bound``, ``device-bound`` or ``too short
        to tell`` (of the last epoch).
      advice: what to do about it.
      data_service: the tf.data service's address, if the input came from one.
      workers: the service's registered workers at each epoch's end.
    """

    metrics: dict[str, dict[str, list[float]]]
    charts: dict[str, str]
    stall: float | None
    host_stall: float | None
    steps_per_call: int | None
    verdict: str | None
    advice: str | None
    data_service: str | None
    workers: list[int | None]


def _epoch_scalars(folder: str) -> dict[str, list[float]]:
    if not filesystem.isdir(folder):
        return {}
    events = event_accumulator.EventAccumulator(
        folder, size_guidance={event_accumulator.TENSORS: 0}
    )
    events.Reload()
    scalars = {}
    for tag in events.Tags()[event_accumulator.TENSORS]:
        if tag.startswith(_EPOCH_PREFIX):
            steps = sorted(events.Tensors(tag), key=lambda e: e.step)
            scalars[tag[len(_EPOCH_PREFIX) :]] = [
                float(tensor_util.make_ndarray(e.tensor_proto)) for e in steps
            ]
    return scalars


def read_training(model_run_uri: str) -> TrainingView:
    """The Trainer's per-epoch metrics, input stall, verdict and charts."""
    metrics: dict[str, dict[str, list[float]]] = {}
    for folder in _LOG_FOLDERS:
        for name, values in _epoch_scalars(os.path.join(model_run_uri, folder)).items():
            metrics.setdefault(name, {})[folder] = values
    report_path = os.path.join(model_run_uri, REPORT_FILE)
    report = {"epochs": []}
    if filesystem.exists(report_path):
        with filesystem.open_text(report_path) as f:
            report = json.load(f)
    epochs = report["epochs"]
    last = epochs[-1] if epochs else None
    workers = [e.get("data_service_workers") for e in epochs]
    chart_of = {}
    for name, series in sorted(metrics.items()):
        if name == METRIC_NAME:
            chart_of[name] = charts.per_epoch(
                series, "share of step time", (INPUT_BOUND_SHARE, "input-bound above")
            )
        elif name == HOST_NAME:
            chart_of[name] = charts.per_epoch(
                series, "share of step time", (HOST_BOUND_SHARE, "host-bound above")
            )
        elif name == START_NAME:
            # Each validation starts its pipeline afresh; training's only in its first epoch.
            chart_of[name] = charts.per_epoch(series, "seconds to the first batch")
        else:
            chart_of[name] = charts.per_epoch(series, name)
    return TrainingView(
        metrics=metrics,
        charts=chart_of,
        stall=last[METRIC_NAME] if last else None,
        host_stall=last.get(HOST_NAME) if last else None,
        steps_per_call=report.get("steps_per_call"),
        verdict=last["verdict"] if last else None,
        advice=(
            advice(last[METRIC_NAME], workers[-1], last.get("steps"), last.get(HOST_NAME, 0.0))
            if last
            else None
        ),
        data_service=report.get("data_service"),
        workers=workers,
    )
