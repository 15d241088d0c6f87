"""ShardedExampleGen: a drop-in for CsvExampleGen that controls its shards.

Same output (an Examples artifact with ``Split-<name>/`` folders of gzipped or
plain TFRecords of tf.Examples), so StatisticsGen, Transform, Trainer and
Evaluator consume it unchanged. Adds: CSV, Parquet and image-folder sources,
a shard plan from a target shard size and reader count, a train/eval split
sized to the data, a quarantine output for input that cannot become an
example, and the examples' statistics, computed in the same pass, as
StatisticsGen would write them (SchemaGen and ExampleValidator read them).
"""

from __future__ import annotations

from tfx import types
from tfx.components.example_gen import utils
from tfx.dsl.components.base import base_beam_component, executor_spec
from tfx.orchestration import data_types
from tfx.proto import example_gen_pb2, range_config_pb2
from tfx.types import standard_artifacts, standard_component_specs
from tfx.types.component_spec import ChannelParameter, ExecutionParameter

from tfrecord_pipelines.components import ui_artifacts
from tfrecord_pipelines.components.data_source import CSV, DataSource
from tfrecord_pipelines.components.example_gen import file_based_arguments
from tfrecord_pipelines.components.example_gen.executor import Executor
from tfrecord_pipelines.components.example_gen.settings import ExampleGenSettings
from tfrecord_pipelines.components.keys import (
    BLOCK_BYTES_KEY,
    CATEGORICAL_LABEL_KEY,
    CODE_VERSION_KEY,
    COMPRESSION_KEY,
    DELIMITER_KEY,
    ENCODING_KEY,
    ENGINE_KEY,
    EVAL_ROWS_KEY,
    EXAMPLES_SUMMARY_KEY,
    LABEL_KEY,
    MAX_BAD_FRACTION_KEY,
    NUM_READERS_KEY,
    NUM_SHARDS_KEY,
    QUARANTINE_KEY,
    REQUESTED_SPAN_KEY,
    SCHEMA_KEY,
    SOURCE_FORMAT_KEY,
    SPARK_CONF_KEY,
    SPARK_MASTER_KEY,
    STATISTICS_KEY,
    TARGET_SHARD_BYTES_KEY,
)
from tfrecord_pipelines.components.spans import parse_span
from tfrecord_pipelines.components.spans.driver import SpanDriver


class Quarantine(types.Artifact):
    """Input records that could not become examples: JSON lines of source, content, reason."""

    # "<namespace>.<Name>": the form KFP v2 needs for custom artifact types.
    TYPE_NAME = "tfrecord_pipelines.Quarantine"


def input_config_for(source: DataSource) -> example_gen_pb2.Input:
    """The source's files, one input split (hashed into train and eval).

    The DataSource's glob (``iris.csv``, ``*.csv.gz``, ``day=*/*.parquet``,
    or the image folder's layout); for data in spans,
    inside the span folders' pattern (``day-{SPAN}/*.csv``), which TFX's
    ExampleGen driver resolves to one span.
    """
    return example_gen_pb2.Input(
        splits=[example_gen_pb2.Input.Split(name="single_split", pattern=source.input_pattern)]
    )


def default_input_config(input_base: str, source_format: str) -> example_gen_pb2.Input:
    """The format's files in ``input_base`` (``input_config_for`` a folder without spans)."""
    return input_config_for(DataSource(root=input_base, format=source_format))


class ShardedExampleGenSpec(standard_component_specs.FileBasedExampleGenSpec):
    """FileBasedExampleGen's spec plus shard, source and quarantine settings."""

    PARAMETERS = {
        **standard_component_specs.FileBasedExampleGenSpec.PARAMETERS,
        SOURCE_FORMAT_KEY: ExecutionParameter(type=str),
        TARGET_SHARD_BYTES_KEY: ExecutionParameter(type=int),
        NUM_READERS_KEY: ExecutionParameter(type=int, optional=True),
        NUM_SHARDS_KEY: ExecutionParameter(type=int, optional=True),
        COMPRESSION_KEY: ExecutionParameter(type=str),
        MAX_BAD_FRACTION_KEY: ExecutionParameter(type=float),
        LABEL_KEY: ExecutionParameter(type=str, optional=True),
        CATEGORICAL_LABEL_KEY: ExecutionParameter(type=int, optional=True),
        BLOCK_BYTES_KEY: ExecutionParameter(type=int, optional=True),
        ENCODING_KEY: ExecutionParameter(type=str, optional=True),
        DELIMITER_KEY: ExecutionParameter(type=str, optional=True),
        ENGINE_KEY: ExecutionParameter(type=str, optional=True),
        SPARK_MASTER_KEY: ExecutionParameter(type=str, optional=True),
        SPARK_CONF_KEY: ExecutionParameter(type=str, optional=True),
        EVAL_ROWS_KEY: ExecutionParameter(type=int, optional=True),
        REQUESTED_SPAN_KEY: ExecutionParameter(type=str, optional=True),
        # Part of TFX's cache key only: a changed converter converts again.
        CODE_VERSION_KEY: ExecutionParameter(type=str, optional=True),
    }
    INPUTS = {SCHEMA_KEY: ChannelParameter(type=standard_artifacts.Schema, optional=True)}
    OUTPUTS = {
        **standard_component_specs.FileBasedExampleGenSpec.OUTPUTS,
        QUARANTINE_KEY: ChannelParameter(type=Quarantine),
        STATISTICS_KEY: ChannelParameter(type=standard_artifacts.ExampleStatistics),
        EXAMPLES_SUMMARY_KEY: ChannelParameter(type=ui_artifacts.Markdown),
    }


def _requested_span(span):
    """The span parameter: a RuntimeParameter as given; else the span asked for as text, ""
    for the latest."""
    if isinstance(span, data_types.RuntimeParameter):
        return span
    asked = parse_span(span)
    return "" if asked is None else str(asked)


class ShardedExampleGen(base_beam_component.BaseBeamComponent):
    """Converts CSV, Parquet or image folders into sharded TFRecords of tf.Examples.

    Outputs:
      examples: Examples artifact with one ``Split-<name>/`` folder per split,
        ``shard_plan.json`` beside them, and custom properties ``shard_plan``
        (JSON), ``records_written``, ``quarantined_count``, ``compression``.
      quarantine: Quarantine artifact of ``quarantine*.jsonl`` files, custom
        property ``count``.
      statistics: ExampleStatistics artifact, ``Split-<name>/FeatureStats.pb``
        (TFDV), as StatisticsGen writes it (``statistics``).
    """

    SPEC_CLASS = ShardedExampleGenSpec
    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(Executor)
    DRIVER_CLASS = SpanDriver

    def __init__(
        self,
        input_base: str,
        settings: ExampleGenSettings | None = None,
        *,
        schema: types.BaseChannel | None = None,
        input_config: example_gen_pb2.Input | None = None,
        output_config: example_gen_pb2.Output | None = None,
        code_version: str | None = None,
        span: int | str | data_types.RuntimeParameter | None = None,
        range_config: range_config_pb2.RangeConfig | None = None,
        custom_config=None,
        output_data_format: int | None = None,
        output_file_format: int | None = None,
        custom_executor_spec=None,
        **unknown,
    ):
        """Builds the component.

        Args:
          input_base: folder of the input files (or the image folder).
          settings: what to convert and how (``settings.ExampleGenSettings``:
            format, label, shards, compression, quarantine, CSV reading, engine);
            None: its defaults, CSV files.
          schema: CSV: a Schema channel giving column types (else inferred).
          input_config: which files to read (default: the format's files in
            input_base by extension, ``.csv``/``.tsv`` (also compressed) or
            ``.parquet``, or the image folder's layout, so a README beside the
            data is not read as data).
          output_config: the splits (default: train and eval by hash, sized by
            the settings' ``eval_rows``, which an output_config overrides;
            ``split_config.partition_feature_name`` splits on a key column).
          code_version: the converter code's version
            (``tfrecord_pipelines.components.code_version``): with caching on, a new
            version converts again.
          span: with ``{SPAN}``, ``{VERSION}`` or date specs in the input pattern
            (``day-{SPAN}/*.csv``): the span to convert, a number or a day
            (``2026-11-25``); None or "" converts the latest span on disk. May be
            a RuntimeParameter (str) that a scheduler fills per run. A span that
            is not on disk fails the component, naming the path looked for.
          range_config: CsvExampleGen's way to pick the span: a static range of one
            span, or a rolling range of one (the latest); instead of ``span``.
          custom_config: FileBasedExampleGen's; refused, naming ExampleGenSettings.
          output_data_format: None or FORMAT_TF_EXAMPLE, what it writes; else refused.
          output_file_format: None or FORMAT_TFRECORDS_GZIP, what it writes; else refused.
          custom_executor_spec: FileBasedExampleGen's; refused.

        Raises:
          TypeError: for a setting given by its name before ExampleGenSettings, a
            custom_config or a custom executor.
          ValueError: on a span that is not a number or a day, a range of more than one
            span, or another payload or file format.
        """
        file_based_arguments.refuse_unsupported(
            unknown, custom_config, output_data_format, output_file_format, custom_executor_spec
        )
        span = _requested_span(file_based_arguments.span_of(range_config, span))
        settings = settings or ExampleGenSettings()
        source_format = settings.source_format or CSV
        input_config = input_config or default_input_config(input_base, source_format)
        parameters = settings.parameters(default_format=CSV)
        if output_config:
            parameters[EVAL_ROWS_KEY] = None
        spec = ShardedExampleGenSpec(
            input_base=input_base,
            input_config=input_config,
            output_config=output_config or utils.make_default_output_config(input_config),
            output_data_format=example_gen_pb2.FORMAT_TF_EXAMPLE,
            output_file_format=example_gen_pb2.FORMAT_TFRECORDS_GZIP,
            **parameters,
            code_version=code_version,
            requested_span=span,
            schema=schema,
            examples=types.Channel(type=standard_artifacts.Examples),
            quarantine=types.Channel(type=Quarantine),
            statistics=types.Channel(type=standard_artifacts.ExampleStatistics),
            examples_summary=types.Channel(type=ui_artifacts.Markdown),
        )
        super().__init__(spec=spec)
