"""The Evaluator's two paths, TFMA's and the batched one, run on the same model and rows."""

import math
import os
from pathlib import Path

import tensorflow_model_analysis as tfma
from google.protobuf import json_format
from tfx.types import artifact_utils, standard_artifacts

from tfrecord_pipelines.components.evaluator.executor import Executor
from tfrecord_pipelines.components.evaluator.label_classes import (
    LABEL_VOCABULARY_KEY,
    POSITIVE_CLASS_KEY,
)


class TfmaPathExecutor(Executor):
    """The Evaluator as before the batched path: TFX's executor, TFMA's extractors."""

    batched = False


def _artifact(kind, uri: str, artifact_id: int = 1):
    artifact = kind()
    artifact.uri = uri
    artifact.id = artifact_id
    return artifact


def evaluate(executor, examples: str, model: str, eval_config, output: Path, **options):
    """Runs ``executor`` as TFX would; returns (evaluation folder, blessed)."""
    rows = _artifact(standard_artifacts.Examples, examples)
    rows.split_names = artifact_utils.encode_split_names(
        sorted(p[len("Split-") :] for p in os.listdir(examples) if p.startswith("Split-"))
    )
    inputs = {"examples": [rows], "model": [_artifact(standard_artifacts.Model, model)]}
    if options.get("baseline"):
        inputs["baseline_model"] = [_artifact(standard_artifacts.Model, options["baseline"], 2)]
    evaluation = _artifact(standard_artifacts.ModelEvaluation, str(output / "evaluation"))
    blessing = _artifact(standard_artifacts.ModelBlessing, str(output / "blessing"))
    os.makedirs(blessing.uri, exist_ok=True)
    properties = {
        "eval_config": json_format.MessageToJson(eval_config),
        "example_splits": "null",
        LABEL_VOCABULARY_KEY: options.get("label_vocabulary"),
        POSITIVE_CLASS_KEY: options.get("positive_class"),
    }
    executor().Do(inputs, {"evaluation": [evaluation], "blessing": [blessing]}, properties)
    return evaluation.uri, blessing.get_int_custom_property("blessed") == 1


def _values(records, field: str) -> dict:
    """(slice key, metric key) → value, for every model's metrics, plots or diffs."""
    found = {}
    for record in records:
        for kv in getattr(record, field):
            found[(record.slice_key.SerializeToString(), kv.key.SerializeToString())] = kv.value
    return found


def assert_same_evaluation(tfma_dir: str, batched_dir: str) -> int:
    """Every metric within 1e-6, the same plots and validation; returns the metrics compared."""
    old = _values(tfma.load_metrics(tfma_dir), "metric_keys_and_values")
    new = _values(tfma.load_metrics(batched_dir), "metric_keys_and_values")
    assert sorted(old) == sorted(new)
    for key, value in old.items():
        if value.HasField("double_value"):
            assert math.isclose(
                value.double_value.value, new[key].double_value.value, abs_tol=1e-6
            ), (key, value, new[key])
        else:
            assert value == new[key], key
    old_plots = _values(tfma.load_plots(tfma_dir), "plot_keys_and_values")
    assert old_plots == _values(tfma.load_plots(batched_dir), "plot_keys_and_values")
    old_check = tfma.load_validation_result(tfma_dir)
    new_check = tfma.load_validation_result(batched_dir)
    # Beam orders the slices' validations as it goes.
    for check in (old_check, new_check):
        ordered = sorted(check.metric_validations_per_slice, key=lambda v: v.SerializeToString())
        del check.metric_validations_per_slice[:]
        check.metric_validations_per_slice.extend(ordered)
    assert old_check == new_check
    return len(old)
