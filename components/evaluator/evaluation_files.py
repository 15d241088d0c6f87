"""An evaluation written as TFMA writes it, so that TFMA, TFX and the report read it unchanged.

The files of TFMA's default writers in the evaluation folder: one
MetricsForSlice and one PlotsForSlice per slice (``metrics-*``,
``plots-*``), an empty attributions file, the ValidationResult
(``validations.tfrecord``) and ``eval_config.json``. The validation is
TFMA's: ``metrics_validator`` on each slice's metrics, merged as TFMA's
writer merges them (missing slices fail it; no thresholds at all pass it
only as a rubber stamp).
"""

from __future__ import annotations

import os

import tensorflow as tf
from google.protobuf import json_format
from tensorflow_model_analysis import constants
from tensorflow_model_analysis import version as tfma_version
from tensorflow_model_analysis.evaluators import metrics_validator
from tensorflow_model_analysis.metrics import metric_specs, metric_types
from tensorflow_model_analysis.proto import config_pb2, validation_result_pb2
from tensorflow_model_analysis.writers import metrics_plots_and_validations_writer as writer

from tfrecord_pipelines.components.storage import filesystem

_SHARD = "-00000-of-00001.tfrecord"


def validate(sliced: list[tuple[tuple, dict]], eval_config, rubber_stamp: bool):
    """TFMA's ValidationResult for these slices' metrics."""
    result = None
    for slice_key, metrics in sliced:
        plain = {k: v for k, v in metrics.items() if not isinstance(k, metric_types.PlotKey)}
        found = metrics_validator.validate_metrics((slice_key, plain), eval_config)
        if result is None:
            result = validation_result_pb2.ValidationResult(validation_ok=True)
        result.validation_ok &= found.validation_ok
        result.metric_validations_per_slice.extend(found.metric_validations_per_slice)
        metrics_validator.merge_details(result, found)
    result = result or validation_result_pb2.ValidationResult(validation_ok=False)
    if not metric_specs.metric_thresholds_from_metrics_specs(
        eval_config.metrics_specs, eval_config=eval_config
    ):
        result.validation_ok = rubber_stamp
        result.missing_thresholds = not rubber_stamp
    missing = metrics_validator.get_missing_slices(
        result.validation_details.slicing_details, eval_config
    )
    if missing:
        result.validation_ok = False
        result.missing_slices.extend(m for m in missing if isinstance(m, config_pb2.SlicingSpec))
    if rubber_stamp:
        result.rubber_stamp = True
    return result


def write(
    output_dir: str,
    sliced: list[tuple[tuple, dict]],
    validation,
    eval_config,
    data_location: str,
    model_locations: dict[str, str],
) -> None:
    """Writes the evaluation folder TFMA's ``load_eval_result`` reads."""
    filesystem.make_folder(output_dir)
    metrics, plots, attributions = [], [], []
    for slice_key, values in sliced:
        plot_values = {k: v for k, v in values.items() if isinstance(k, metric_types.PlotKey)}
        metric_values = {k: v for k, v in values.items() if k not in plot_values}
        # As TFMA: a record of each kind for every slice, empty or not.
        metrics.append(writer.convert_slice_metrics_to_proto((slice_key, metric_values), []))
        plots.append(writer.convert_slice_plots_to_proto((slice_key, plot_values), []))
        attributions.append(writer.convert_slice_attributions_to_proto((slice_key, {})))
    for name, records in (
        (constants.METRICS_KEY, metrics),
        (constants.PLOTS_KEY, plots),
        (constants.ATTRIBUTIONS_KEY, attributions),
    ):
        with tf.io.TFRecordWriter(os.path.join(output_dir, name + _SHARD)) as f:
            for record in records:
                f.write(record.SerializeToString())
    with tf.io.TFRecordWriter(
        os.path.join(output_dir, constants.VALIDATIONS_KEY + ".tfrecord")
    ) as f:
        f.write(validation.SerializeToString())
    run = config_pb2.EvalRun(
        eval_config=eval_config,
        version=tfma_version.VERSION,
        data_location=data_location,
        file_format="tfrecord",
        model_locations=model_locations,
    )
    with filesystem.open_file(os.path.join(output_dir, "eval_config.json"), "w") as f:
        f.write(json_format.MessageToJson(run))
