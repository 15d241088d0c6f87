"""TFX's Evaluator executor, with TFMA's metrics computed from batched predictions.

The same inputs, EvalConfig and outputs as TFX's Evaluator: the
evaluation folder in TFMA's format and the blessing. When the EvalConfig
asks only for what ``batched_metrics`` computes (the metrics this project's
pipelines configure: counts, Keras metrics, AUC and other metrics from
TFMA's calibration histogram, the multi-class confusion matrix; slices by
single features; a baseline model), the eval rows go through each model's
serving and Transform signatures in batches of 1,024, and TFMA's own
derived computations, diffs and validation run on the vectorized
combiners' outputs. The change threshold against a baseline is then judged
by a paired test on the rows both models scored (``change_gate``), written
into TFMA's validation result. Anything else (a module file's extractors,
example weights, TFMA's confidence intervals, other metrics) runs TFX's
executor, TFMA's extractors and evaluators, unchanged; the log says which
and why.
"""

from __future__ import annotations

import os
import time

import numpy as np
import tensorflow_model_analysis as tfma
from absl import logging
from tfx.components.evaluator import constants
from tfx.components.evaluator import executor as tfx_executor
from tfx.types import artifact_utils
from tfx.utils import io_utils, json_utils, path_utils, proto_utils

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.evaluator import (
    batched_metrics,
    change_gate,
    evaluation_files,
    label_classes,
    paired_change,
    ui_metrics,
)
from tfrecord_pipelines.components.evaluator.predictions import (
    ModelScorer,
    SliceValues,
    read_batches,
)
from tfrecord_pipelines.components.storage import filesystem

_DEFAULT_SPLITS = ["eval"]


def eval_config_from(exec_properties: dict, has_baseline: bool):
    """The EvalConfig as TFX's Evaluator uses it: TFMA's defaults filled in, verified."""
    eval_config = tfma.EvalConfig()
    proto_utils.json_to_proto(exec_properties[keys.EVAL_CONFIG_KEY], eval_config)
    # As TFX: a change threshold is ignored when there is no baseline model.
    eval_config = tfma.utils.update_eval_config_with_defaults(
        eval_config, has_baseline=has_baseline, rubber_stamp=True
    )
    tfma.utils.verify_eval_config(eval_config)
    return eval_config


def batched_unsupported(
    eval_config, exec_properties: dict, computations: batched_metrics.Computations
) -> str | None:
    """Why TFMA itself must evaluate this configuration, or None."""
    for key in (keys.MODULE_PATH_KEY, keys.MODULE_FILE_KEY):
        if exec_properties.get(key):
            return "a module file may define custom extractors or models"
    for model in eval_config.model_specs:
        if len(model.preprocessing_function_names) != 1 or not model.label_key:
            return f"model spec {model.name!r} needs a label key and one preprocessing function"
    return batched_metrics.unsupported(eval_config, computations)


class Executor(tfx_executor.Executor):
    """TFX's Evaluator executor; batched when the EvalConfig allows it (module docstring).

    Attributes:
      batched: False runs TFMA's path whatever the EvalConfig (to compare the two).
    """

    batched = True

    def Do(self, input_dict, output_dict, exec_properties) -> None:
        """Evaluates the candidate (and baseline) model and writes the blessing."""
        classes = None
        vocabulary = exec_properties.get(keys.LABEL_VOCABULARY_KEY)
        positive = exec_properties.get(keys.POSITIVE_CLASS_KEY) or None
        if vocabulary:
            model = artifact_utils.get_single_instance(input_dict[keys.MODEL_KEY])
            classes = label_classes.read_vocabulary(
                path_utils.serving_model_path(model.uri, path_utils.is_old_model_artifact(model)),
                vocabulary,
            )
        if positive and exec_properties.get(keys.EVAL_CONFIG_KEY):
            config = tfma.EvalConfig()
            proto_utils.json_to_proto(exec_properties[keys.EVAL_CONFIG_KEY], config)
            config = label_classes.with_positive_class(
                config, label_classes.positive_class_id(classes, positive)
            )
            exec_properties = {
                **exec_properties,
                keys.EVAL_CONFIG_KEY: proto_utils.proto_to_json(config),
            }
        self._evaluate(input_dict, output_dict, exec_properties)
        evaluation_uri = artifact_utils.get_single_uri(output_dict[constants.EVALUATION_KEY])
        if classes:
            label_classes.write(evaluation_uri, classes, positive)
        ui_metrics.publish(evaluation_uri, output_dict, _verdict(output_dict))

    def _evaluate(self, input_dict, output_dict, exec_properties) -> None:
        if not exec_properties.get(keys.EVAL_CONFIG_KEY):
            return super().Do(input_dict, output_dict, exec_properties)
        has_baseline = bool(input_dict.get(keys.BASELINE_MODEL_KEY))
        eval_config = eval_config_from(exec_properties, has_baseline)
        computations = batched_metrics.computations_for(eval_config)
        reason = (
            batched_unsupported(eval_config, exec_properties, computations)
            if self.batched
            else "anything: batched evaluation is off"
        )
        if reason:
            logging.info(
                "TFMA evaluates the model: the batched Evaluator does not compute %s.%s",
                reason,
                " The baseline is compared by the two values (TFMA's change threshold), "
                "not by a paired test on the rows."
                if has_baseline
                else "",
            )
            return super().Do(input_dict, output_dict, exec_properties)
        output_uri = artifact_utils.get_single_uri(output_dict[constants.EVALUATION_KEY])
        splits = json_utils.loads(exec_properties.get(keys.EXAMPLE_SPLITS_KEY, "null"))
        files = _split_files(input_dict[keys.EXAMPLES_KEY], splits)
        models = _model_paths(eval_config, input_dict)
        started = time.process_time()
        sliced, outputs = evaluate(eval_config, computations, models, files)
        # TFX rubber-stamps in the config (no baseline: no change thresholds), not the writer.
        validation = evaluation_files.validate(sliced, eval_config, rubber_stamp=False)
        change = change_gate.judge(validation, eval_config, outputs)
        evaluation_files.write(output_uri, sliced, validation, eval_config, ",".join(files), models)
        if change:
            paired_change.write(output_uri, change)
        logging.info(
            "Evaluated %d rows in %d slices by batched predictions (%.1f CPU-s); written to %s.",
            len(next(iter(outputs.values())).labels),
            len(sliced),
            time.process_time() - started,
            output_uri,
        )
        if not tfma.metrics.metric_thresholds_from_metrics_specs(
            eval_config.metrics_specs, eval_config=eval_config
        ):
            logging.info("No threshold configured, will not validate model.")
            return None
        write_blessing(input_dict, output_dict, exec_properties, validation.validation_ok)
        return None


def _verdict(output_dict) -> bool | None:
    """Whether the blessing blessed the model; None when no threshold was configured."""
    blessing = artifact_utils.get_single_instance(output_dict[keys.BLESSING_KEY])
    if not blessing.has_custom_property(constants.ARTIFACT_PROPERTY_BLESSED_KEY):
        return None
    return blessing.get_int_custom_property(constants.ARTIFACT_PROPERTY_BLESSED_KEY) == 1


def _split_files(examples: list, splits: list[str] | None) -> list[str]:
    """The files of the splits TFX's Evaluator would read (every file of each split's folder)."""
    files = []
    for split in splits or _DEFAULT_SPLITS:
        for uri in artifact_utils.get_split_uris(examples, split):
            files.extend(
                sorted(
                    path
                    for path in filesystem.glob(io_utils.all_files_pattern(uri))
                    if not filesystem.isdir(path)
                )
            )
    if not files:
        raise ValueError(
            f"No eval records: the examples have no files in split(s) {splits or _DEFAULT_SPLITS}."
        )
    return files


def _model_paths(eval_config, input_dict) -> dict[str, str]:
    paths = {}
    for spec in eval_config.model_specs:
        key = keys.BASELINE_MODEL_KEY if spec.is_baseline else keys.MODEL_KEY
        artifact = artifact_utils.get_single_instance(input_dict[key])
        paths[spec.name] = path_utils.serving_model_path(
            artifact.uri, path_utils.is_old_model_artifact(artifact)
        )
    return paths


def evaluate(
    eval_config,
    computations: batched_metrics.Computations,
    model_paths: dict[str, str],
    files: list[str],
):
    """Scores the records with each model and computes every slice's metrics.

    Returns:
      ``([(slice key, {MetricKey: value})], {model name: ModelOutputs})``, the
      overall slice first.
    """
    specs = {spec.name: spec for spec in eval_config.model_specs}
    scorers = {
        name: ModelScorer(
            path,
            specs[name].signature_name or "serving_default",
            specs[name].label_key,
            specs[name].preprocessing_function_names[0],
            specs[name].prediction_key,
        )
        for name, path in model_paths.items()
    }
    slice_features = [
        spec.feature_keys[0] for spec in eval_config.slicing_specs if spec.feature_keys
    ]
    slices = SliceValues(slice_features)
    for batch in read_batches(files):
        for scorer in scorers.values():
            scorer.score(batch)
        slices.add(batch)
    outputs = {
        name: batched_metrics.ModelOutputs(
            np.concatenate(scorer.labels), np.concatenate(scorer.predictions)
        )
        for name, scorer in scorers.items()
    }
    sliced = []
    if any(not spec.feature_keys for spec in eval_config.slicing_specs):
        sliced.append(((), batched_metrics.slice_metrics(computations, outputs)))
    for slice_key, rows in slices.slices():
        sliced.append((slice_key, batched_metrics.slice_metrics(computations, outputs, rows)))
    return sliced, outputs


def write_blessing(input_dict, output_dict, exec_properties, blessed: bool) -> None:
    """The blessing artifact as TFX's Evaluator writes it."""
    blessing = artifact_utils.get_single_instance(output_dict[keys.BLESSING_KEY])
    model = input_dict[keys.MODEL_KEY][0]
    blessing.set_string_custom_property(
        constants.ARTIFACT_PROPERTY_CURRENT_MODEL_URI_KEY, model.uri
    )
    blessing.set_int_custom_property(constants.ARTIFACT_PROPERTY_CURRENT_MODEL_ID_KEY, model.id)
    if input_dict.get(keys.BASELINE_MODEL_KEY):
        baseline = input_dict[keys.BASELINE_MODEL_KEY][0]
        blessing.set_string_custom_property(
            constants.ARTIFACT_PROPERTY_BASELINE_MODEL_URI_KEY, baseline.uri
        )
        blessing.set_int_custom_property(
            constants.ARTIFACT_PROPERTY_BASELINE_MODEL_ID_KEY, baseline.id
        )
    if keys.CURRENT_COMPONENT_ID_KEY in exec_properties:
        blessing.set_string_custom_property(
            keys.COMPONENT_ID_PROPERTY, exec_properties[keys.CURRENT_COMPONENT_ID_KEY]
        )
    name = constants.BLESSED_FILE_NAME if blessed else constants.NOT_BLESSED_FILE_NAME
    io_utils.write_string_file(os.path.join(blessing.uri, name), "")
    blessing.set_int_custom_property(
        keys.BLESSED_PROPERTY,
        constants.BLESSED_VALUE if blessed else constants.NOT_BLESSED_VALUE,
    )
    logging.info("Blessing result %s written to %s.", blessed, blessing.uri)
