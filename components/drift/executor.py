"""DriftCheck's executor: TFDV's ``validate_statistics`` with the previous span's statistics."""

from __future__ import annotations

import json
import os
from typing import Any

import tensorflow_data_validation as tfdv
from absl import logging
from tensorflow_metadata.proto.v0 import anomalies_pb2, schema_pb2
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils
from tfx.utils import io_utils

from tfrecord_pipelines.components.drift.common_bins import on_common_bins
from tfrecord_pipelines.components.keys import (
    ANOMALIES_KEY,
    DRIFT_REPORT_PROPERTY,
    DRIFTED_PROPERTY,
    MAX_JS_KEY,
    MAX_LINF_KEY,
    PREVIOUS_SPAN_PROPERTY,
    PREVIOUS_STATISTICS_KEY,
    SCHEMA_KEY,
    STATISTICS_KEY,
)

# The split compared, and the file ExampleValidator writes its anomalies to.
SPLIT = "train"
ANOMALIES_FILE = "SchemaDiff.pb"
_STATISTICS_FILE = "FeatureStats.pb"
_MEASURES = {
    anomalies_pb2.DriftSkewInfo.Measurement.L_INFTY: "L-infinity",
    anomalies_pb2.DriftSkewInfo.Measurement.JENSEN_SHANNON_DIVERGENCE: "Jensen-Shannon",
}


def _statistics(artifact: types.Artifact):
    return tfdv.load_stats_binary(
        os.path.join(artifact_utils.get_split_uri([artifact], SPLIT), _STATISTICS_FILE)
    )


def with_comparators(
    schema: schema_pb2.Schema, max_js: float, max_linf: float
) -> schema_pb2.Schema:
    """The schema with a drift comparator on every feature that has none: L-infinity for
    strings (and categorical integers), Jensen-Shannon for numbers; none for images."""
    schema = schema_pb2.Schema.FromString(schema.SerializeToString())
    for feature in schema.feature:
        if feature.HasField("image_domain"):
            continue  # encoded images: TFDV has no value shares for them to compare
        comparator = feature.drift_comparator
        if comparator.HasField("infinity_norm") or comparator.HasField("jensen_shannon_divergence"):
            continue
        categorical = feature.type == schema_pb2.BYTES or feature.int_domain.is_categorical
        if categorical:
            comparator.infinity_norm.threshold = max_linf
        else:
            comparator.jensen_shannon_divergence.threshold = max_js
    return schema


def drift_report(anomalies: anomalies_pb2.Anomalies) -> dict[str, dict[str, Any]]:
    """Each compared feature's measure, value, threshold and whether it drifted."""
    report = {}
    for info in anomalies.drift_skew_info:
        name = ".".join(info.path.step)
        for measurement in info.drift_measurements:
            report[name] = {
                "measure": _MEASURES.get(measurement.type, str(measurement.type)),
                "value": measurement.value,
                "threshold": measurement.threshold,
                "drifted": measurement.value > measurement.threshold,
            }
    return report


class Executor(base_executor.BaseExecutor):
    """Writes the drift anomalies of this span against the previous one."""

    def Do(  # noqa: N802 - TFX API
        self,
        input_dict: dict[str, list[types.Artifact]],
        output_dict: dict[str, list[types.Artifact]],
        exec_properties: dict[str, Any],
    ) -> None:
        """Compares the train splits' statistics; no previous span: nothing to compare."""
        output = artifact_utils.get_single_instance(output_dict[ANOMALIES_KEY])
        output.split_names = artifact_utils.encode_split_names([SPLIT])
        current = artifact_utils.get_single_instance(input_dict[STATISTICS_KEY])
        previous = (input_dict.get(PREVIOUS_STATISTICS_KEY) or [None])[0]
        report: dict[str, dict[str, Any]] = {}
        anomalies = anomalies_pb2.Anomalies()
        if previous is not None:
            schema = io_utils.SchemaReader().read(
                io_utils.get_only_uri_in_dir(artifact_utils.get_single_uri(input_dict[SCHEMA_KEY]))
            )
            schema = with_comparators(
                schema, exec_properties[MAX_JS_KEY], exec_properties[MAX_LINF_KEY]
            )
            ours, theirs = on_common_bins(_statistics(current), _statistics(previous))
            anomalies = tfdv.validate_statistics(ours, schema, previous_statistics=theirs)
            report = drift_report(anomalies)
            output.set_int_custom_property(PREVIOUS_SPAN_PROPERTY, previous.span)
        drifted = sorted(name for name, r in report.items() if r["drifted"])
        logging.info("Drift against the previous span: %s", drifted or "none")
        io_utils.write_bytes_file(
            os.path.join(artifact_utils.get_split_uri([output], SPLIT), ANOMALIES_FILE),
            anomalies.SerializeToString(),
        )
        output.set_string_custom_property(DRIFT_REPORT_PROPERTY, json.dumps(report))
        output.set_string_custom_property(DRIFTED_PROPERTY, ",".join(drifted))
        output.span = current.span
