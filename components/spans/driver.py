"""ShardedExampleGen's driver: TFX's file-based driver, told which span to convert.

TFX's driver resolves ``{SPAN}``, ``{VERSION}`` and date specs in the input
pattern: by default the latest span on disk, with a ``RangeConfig`` one span
only. The component's ``requested_span`` parameter (``--span``; a run-time
parameter on Kubeflow, where a scheduler fills it from the scheduled time)
becomes that RangeConfig here, and a span that is not on disk fails with one
line naming the path looked for, instead of TFX's "Cannot find matching for
split single_split".
"""

from __future__ import annotations

import os
from typing import Any

from tfx.components.example_gen import driver, input_processor, utils
from tfx.proto import example_gen_pb2, range_config_pb2
from tfx.utils import proto_utils

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.keys import REQUESTED_SPAN_KEY
from tfrecord_pipelines.components.spans import parse_span

# How TFX's drivers (local and Kubeflow v2) say that no file matches the span asked for.
_NOT_FOUND = "Cannot find matching"


def is_missing_span(error: ValueError) -> bool:
    """Whether TFX's ExampleGen driver failed because no span matched (``missing_span_error``)."""
    return _NOT_FOUND in str(error)


def request_span(exec_properties: dict[str, Any]) -> dict[str, Any]:
    """Returns the exec properties with the requested span as TFX's RangeConfig.

    Raises:
      ValueError: if the requested span is not a span (``spans.parse_span``).
    """
    span = parse_span(exec_properties.get(REQUESTED_SPAN_KEY))
    if span is None:
        return exec_properties
    config = range_config_pb2.RangeConfig(
        static_range=range_config_pb2.StaticRange(start_span_number=span, end_span_number=span)
    )
    return {
        **exec_properties,
        keys.RANGE_CONFIG_KEY: proto_utils.proto_to_json(config),
    }


def missing_span_error(exec_properties: dict[str, Any]) -> ValueError:
    """The one-line error for a span (or any span) that is not on disk, naming the path."""
    input_config = example_gen_pb2.Input()
    proto_utils.json_to_proto(exec_properties[keys.INPUT_CONFIG_KEY], input_config)
    base = exec_properties[keys.INPUT_BASE_KEY]
    pattern = input_config.splits[0].pattern
    span = parse_span(exec_properties.get(REQUESTED_SPAN_KEY))
    if span is None:
        return ValueError(f"No span is on disk: nothing matches {os.path.join(base, pattern)}.")
    is_span, is_date, _ = utils.verify_split_pattern_specs(input_config.splits[0])
    filled = utils.get_pattern_for_span_version(pattern, is_span, is_date, False, span, None)
    return ValueError(
        f"Span {span} is missing: nothing matches {os.path.join(base, filled)}; "
        "the run stops rather than train on earlier data again."
    )


def input_fingerprint(exec_properties: dict[str, Any]) -> str:
    """TFX's input fingerprint of the span ExampleGen will convert (the one its file-based
    driver computes before a cache look-up), with the span and version it resolves.

    Raises:
      ValueError: in one line, when the span asked for, or a split's files, are not there.
    """
    asked = request_span(exec_properties)
    input_config = example_gen_pb2.Input()
    proto_utils.json_to_proto(asked[keys.INPUT_CONFIG_KEY], input_config)
    range_config = None
    if asked.get(keys.RANGE_CONFIG_KEY):
        range_config = range_config_pb2.RangeConfig()
        proto_utils.json_to_proto(asked[keys.RANGE_CONFIG_KEY], range_config)
    processor = input_processor.FileBasedInputProcessor(
        asked[keys.INPUT_BASE_KEY], input_config.splits, range_config
    )
    try:
        span, version = processor.resolve_span_and_version()
        fingerprint = processor.get_input_fingerprint(span, version)
    except ValueError as e:
        if is_missing_span(e):
            raise missing_span_error(asked) from None
        raise
    for split in input_config.splits:
        if f"split:{split.name},num_files:0," in fingerprint:
            pattern = processor.get_pattern_for_span_version(split.pattern, span, version)
            raise ValueError(f"nothing matches {asked[keys.INPUT_BASE_KEY].rstrip('/')}/{pattern}.")
    return f"span:{span},version:{version},{fingerprint}"


class SpanDriver(driver.FileBasedDriver):
    """TFX's file-based ExampleGen driver for the span asked for (``requested_span``)."""

    def resolve_exec_properties(self, exec_properties, pipeline_info, component_info):  # noqa: D102
        asked = request_span(exec_properties)
        try:
            resolved = super().resolve_exec_properties(dict(asked), pipeline_info, component_info)
        except ValueError as e:
            if is_missing_span(e):
                raise missing_span_error(asked) from None
            raise
        exec_properties.update(resolved)
        return exec_properties
