"""What a finished local run produced, read back from its ML Metadata store."""

from __future__ import annotations

import dataclasses

import tensorflow_model_analysis as tfma
from ml_metadata import metadata_store
from tfx import v1 as tfx

from components.trainer.input_stall import last_epoch_share


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """The outputs a user looks for after a run.

    Attributes:
      blessed: whether the Evaluator blessed the new model.
      pushed_model: the pushed model's folder, or None if it was not pushed.
      model: the trained model artifact's folder.
      evaluation: the Evaluator's output folder (load with tfma.load_eval_result).
      metrics: overall metrics on the eval split, by name.
      model_run: the Trainer's TensorBoard logs and input-stall report.
      input_stall: the last training epoch's input stall (share of step time
        spent waiting for batches), or None if the Trainer wrote no report.
    """

    blessed: bool
    pushed_model: str | None
    model: str
    evaluation: str
    metrics: dict[str, float]
    model_run: str
    input_stall: float | None


def _latest(store: metadata_store.MetadataStore, type_name: str):
    artifacts = store.get_artifacts_by_type(type_name)
    if not artifacts:
        raise LookupError(f"The metadata store holds no {type_name} artifact; did the run finish?")
    return max(artifacts, key=lambda a: a.id)


def _overall_metrics(evaluation_uri: str) -> dict[str, float]:
    metrics = {}
    for metrics_for_slice in tfma.load_metrics(evaluation_uri):
        if metrics_for_slice.slice_key.single_slice_keys:
            continue
        for kv in metrics_for_slice.metric_keys_and_values:
            if kv.value.HasField("double_value") and not kv.key.is_diff:
                metrics[kv.key.name] = kv.value.double_value.value
    return metrics


def summarize_run(metadata_path: str) -> RunSummary:
    """Reads the latest run's model, blessing, push and metrics from ML Metadata.

    Raises:
      LookupError: if the store holds no finished run.
    """
    store = metadata_store.MetadataStore(
        tfx.orchestration.metadata.sqlite_metadata_connection_config(metadata_path)
    )
    blessing = _latest(store, "ModelBlessing")
    pushed = _latest(store, "PushedModel")
    evaluation = _latest(store, "ModelEvaluation")
    model_run = _latest(store, "ModelRun")
    was_pushed = pushed.custom_properties["pushed"].int_value == 1
    return RunSummary(
        blessed=blessing.custom_properties["blessed"].int_value == 1,
        pushed_model=(
            pushed.custom_properties["pushed_destination"].string_value if was_pushed else None
        ),
        model=_latest(store, "Model").uri,
        evaluation=evaluation.uri,
        metrics=_overall_metrics(evaluation.uri),
        model_run=model_run.uri,
        input_stall=last_epoch_share(model_run.uri),
    )
