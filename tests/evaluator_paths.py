"""The Evaluator's two paths, TFMA's and the batched one, run on the same model and rows."""

import math
import os
from pathlib import Path

import tensorflow_model_analysis as tfma
from google.protobuf import json_format
from tfx.types import artifact_utils, standard_artifacts

from tfrecord_pipelines.components import ui_artifacts
from tfrecord_pipelines.components.evaluator.executor import Executor
from tfrecord_pipelines.components.keys import LABEL_VOCABULARY_KEY, POSITIVE_CLASS_KEY


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
    uri, blessed, _ = evaluate_with_ui(executor, examples, model, eval_config, output, **options)
    return uri, blessed


def evaluate_with_ui(executor, examples: str, model: str, eval_config, output: Path, **options):
    """Runs ``executor`` as TFX would; returns (evaluation folder, blessed, the UI outputs:
    metrics, classification_metrics and summary artifacts by output name)."""
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
    ui = {
        "metrics": _artifact(ui_artifacts.Metrics, str(output / "metrics")),
        "classification_metrics": _artifact(
            ui_artifacts.ClassificationMetrics, str(output / "classification_metrics")
        ),
        "evaluation_summary": _artifact(ui_artifacts.Markdown, str(output / "summary.md")),
    }
    outputs = {"evaluation": [evaluation], "blessing": [blessing]}
    executor().Do(inputs, {**outputs, **{name: [a] for name, a in ui.items()}}, properties)
    return evaluation.uri, blessing.get_int_custom_property("blessed") == 1, ui


def _values(records, field: str) -> dict:
    """(slice key, metric key) → value, for every model's metrics, plots or diffs."""
    found = {}
    for record in records:
        for kv in getattr(record, field):
            found[(record.slice_key.SerializeToString(), kv.key.SerializeToString())] = kv.value
    return found


def _comparable_plot(plot) -> dict:
    """A plot as a dict (NaN as "NaN", so that it equals itself)."""
    return json_format.MessageToDict(plot)


def assert_same_evaluation(tfma_dir: str, batched_dir: str) -> int:
    """Every metric within 1e-6, the same plots and validation; returns the metrics compared.
    Both must have scored the same predictions (``row_by_row_model``)."""
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
    new_plots = _values(tfma.load_plots(batched_dir), "plot_keys_and_values")
    assert sorted(old_plots) == sorted(new_plots)
    for key, value in old_plots.items():
        assert _comparable_plot(value) == _comparable_plot(new_plots[key]), key
    old_check = tfma.load_validation_result(tfma_dir)
    new_check = tfma.load_validation_result(batched_dir)
    # Beam orders the slices' validations as it goes.
    for check in (old_check, new_check):
        ordered = sorted(check.metric_validations_per_slice, key=lambda v: v.SerializeToString())
        del check.metric_validations_per_slice[:]
        check.metric_validations_per_slice.extend(ordered)
    assert old_check == new_check
    return len(old)


def _rewrapped(model: str, output: Path, serving) -> str:
    """The model artifact at ``model`` again under ``output``, its serving signature
    ``serving(the original's)``, its Transform signature and assets as they were. Returns
    the artifact's folder."""
    import shutil

    import tensorflow as tf

    original = Path(model) / "Format-Serving"
    loaded = tf.saved_model.load(str(original))
    module = tf.Module()
    module.loaded = loaded
    wrapped = output / "Format-Serving"
    tf.saved_model.save(
        module,
        str(wrapped),
        signatures={
            "serving_default": serving(loaded.signatures["serving_default"]),
            "transform_features": loaded.signatures["transform_features"],
        },
    )
    # The label vocabulary the Evaluator reads among the model's assets.
    shutil.copytree(original / "assets", wrapped / "assets", dirs_exist_ok=True)
    return str(output)


def row_by_row_model(model: str, output: Path) -> str:
    """The model artifact at ``model`` again, its serving signature scoring each row alone.

    TFMA's path and the batched one give the model different batches, and a row's
    probabilities then differ in float32's last digit: a row saturated at 1.0 in one
    batch is 0.99999994 in another, which moves it to another of TFMA's 10,000 AUC
    buckets (measured: an AUC of 0.99397 against 0.99286 for the same model and rows).
    Scored one at a time, each row's prediction is the same whatever batch it came in,
    so the two paths are compared on the same predictions. Returns the artifact's folder.
    """
    import tensorflow as tf

    def serving(serve):
        row = {
            name: tf.TensorSpec(spec.shape[1:], spec.dtype)
            for name, spec in serve.structured_outputs.items()
        }

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def one_at_a_time(examples):
            def score(example):
                return {name: value[0] for name, value in serve(examples=example[None]).items()}

            return tf.map_fn(score, examples, fn_output_signature=row)

        return one_at_a_time

    return _rewrapped(model, output, serving)


def altered_model(model: str, output: Path, prediction_key: str | None, alter) -> str:
    """The model artifact at ``model`` again, ``alter`` applied to its predictions: a model
    whose predictions differ from the real one's in a known way, without another training.

    ``alter(examples, predictions)`` takes the serving signature's input (serialized
    records) and its ``prediction_key`` output (None: its only output), and returns the
    changed predictions. Returns the artifact's folder.
    """
    import tensorflow as tf

    def serving(serve):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def altered(examples):
            outputs = dict(serve(examples=examples))
            key = prediction_key or next(iter(outputs))
            outputs[key] = alter(examples, outputs[key])
            return outputs

        return altered

    return _rewrapped(model, output, serving)
