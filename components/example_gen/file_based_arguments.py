"""CsvExampleGen's and FileBasedExampleGen's arguments (TFX 1.16), read as ShardedExampleGen
takes them, or refused in one line naming the equivalent.

``input_base``, ``input_config`` and ``output_config`` mean what they mean there and
are taken as they are. ``range_config`` picks the span: a static range of one span is
that span, a rolling range of one span from 0 the latest; ShardedExampleGen converts
one span a run, so a range of more is refused. The others (a custom config, another
payload or file format, another executor) have no equivalent but the one named.
"""

from __future__ import annotations

from tfx.orchestration import data_types
from tfx.proto import example_gen_pb2, range_config_pb2


def span_of(range_config: range_config_pb2.RangeConfig | None, span) -> str | int | None:
    """The span RANGE_CONFIG asks for, as ShardedExampleGen's ``span`` ("": the latest);
    SPAN itself when RANGE_CONFIG is None.

    Raises:
      ValueError: both given, a runtime parameter, or a range of more than one span.
    """
    if range_config is None:
        return span
    if span is not None:
        raise ValueError("give ShardedExampleGen span= or range_config=, not both")
    if isinstance(range_config, data_types.RuntimeParameter):
        raise ValueError(
            "ShardedExampleGen takes a run's span as span=RuntimeParameter(ptype=str), "
            "not a RangeConfig RuntimeParameter"
        )
    kind = range_config.WhichOneof("range")
    if kind == "static_range":
        static = range_config.static_range
        first, last = static.start_span_number, static.end_span_number
        if first == last:
            return first
        raise ValueError(
            f"ShardedExampleGen converts one span a run; range_config's static range "
            f"{first}-{last} is {last - first + 1}: run it per span (span=N), or keep a "
            "window of spans (compile --window N)"
        )
    if kind == "rolling_range":
        rolling = range_config.rolling_range
        if rolling.num_spans <= 1 and rolling.start_span_number == 0:
            return ""
        raise ValueError(
            f"ShardedExampleGen converts one span a run; range_config's rolling range of "
            f"{rolling.num_spans} span(s) from {rolling.start_span_number} is not one: span=None "
            "converts the latest, compile --window N keeps the last N"
        )
    return span


def refuse_unsupported(
    unknown, custom_config, output_data_format, output_file_format, custom_executor_spec
) -> None:
    """Raises for arguments ShardedExampleGen cannot honour, naming the equivalent: settings
    given by their names (UNKNOWN, as before 2026-11-28) and FileBasedExampleGen's; None and
    the values it writes anyway pass.

    Raises:
      TypeError: a setting by its name, custom_config or custom_executor_spec.
      ValueError: a payload or file format it does not write.
    """
    if unknown:
        raise TypeError(
            f"ShardedExampleGen takes {', '.join(sorted(unknown))} in its settings: "
            "ShardedExampleGen(input_base, ExampleGenSettings(...)) "
            "(tfrecord_pipelines.components.example_gen.settings)."
        )
    if custom_config is not None:
        raise TypeError(
            "ShardedExampleGen has no custom_config: its settings (format, label, shards, "
            "compression, quarantine) are ShardedExampleGen(input_base, ExampleGenSettings(...))"
        )
    if custom_executor_spec is not None:
        raise TypeError(
            "ShardedExampleGen runs its own executor; with custom_executor_spec, use TFX's "
            "FileBasedExampleGen"
        )
    if output_data_format not in (None, example_gen_pb2.FORMAT_TF_EXAMPLE):
        raise ValueError(
            "ShardedExampleGen writes tf.Examples (output_data_format FORMAT_TF_EXAMPLE) only"
        )
    if output_file_format not in (None, example_gen_pb2.FORMAT_TFRECORDS_GZIP):
        raise ValueError(
            "ShardedExampleGen writes TFRecord shards (FORMAT_TFRECORDS_GZIP; plain with "
            "ExampleGenSettings(compression='none')) only"
        )
