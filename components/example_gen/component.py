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

import json

from tfx import types
from tfx.components.example_gen import utils
from tfx.dsl.components.base import base_beam_component, executor_spec
from tfx.orchestration import data_types
from tfx.proto import example_gen_pb2
from tfx.types import standard_artifacts, standard_component_specs
from tfx.types.component_spec import ChannelParameter, ExecutionParameter

from tfrecord_pipelines.components import ui_artifacts
from tfrecord_pipelines.components.data_source import FORMATS as SOURCE_FORMATS
from tfrecord_pipelines.components.data_source import DataSource
from tfrecord_pipelines.components.example_gen.engines import BEAM, ENGINES
from tfrecord_pipelines.components.example_gen.executor import Executor
from tfrecord_pipelines.components.example_gen.quarantine_limit import DEFAULT_MAX_BAD_FRACTION
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.components.example_gen.sources import (
    DEFAULT_BLOCK_BYTES,
    DEFAULT_ENCODING,
    SourceOptions,
)
from tfrecord_pipelines.components.example_gen.spark import session
from tfrecord_pipelines.components.example_gen.split_sizing import DEFAULT_EVAL_ROWS
from tfrecord_pipelines.components.keys import (
    BLOCK_BYTES_KEY,
    CATEGORICAL_LABEL_KEY,
    CODE_VERSION_KEY,
    COMPRESSION_KEY,
    DELIMITER_KEY,
    ENCODING_KEY,
    ENGINE_KEY,
    EVAL_ROWS_KEY,
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
    SUMMARY_KEY,
    TARGET_SHARD_BYTES_KEY,
)
from tfrecord_pipelines.components.shard_compression import GZIP, parse_compression
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
        SUMMARY_KEY: ChannelParameter(type=ui_artifacts.Markdown),
    }


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
        *,
        source_format: str = "csv",
        sharding: ShardingOptions | None = None,
        compression: str = GZIP,
        max_bad_fraction: float = DEFAULT_MAX_BAD_FRACTION,
        label_key: str | None = None,
        categorical_label: bool = False,
        schema: types.BaseChannel | None = None,
        input_config: example_gen_pb2.Input | None = None,
        output_config: example_gen_pb2.Output | None = None,
        code_version: str | None = None,
        block_bytes: int | None = None,
        encoding: str | None = None,
        delimiter: str | None = None,
        engine: str = BEAM,
        spark_master: str | None = None,
        spark_conf: dict[str, str] | None = None,
        eval_rows: int | None = DEFAULT_EVAL_ROWS,
        span: int | str | data_types.RuntimeParameter | None = None,
    ):
        """Builds the component.

        Args:
          input_base: folder of the input files (or the image folder).
          source_format: ``csv``, ``parquet`` or ``images``.
          sharding: target shard size and reader count (default 128 MiB, no readers).
          compression: ``gzip`` (smaller files, more CPU to read), ``gzip:LEVEL``
            (1 fastest to 9 smallest; default 6) or ``none``.
          max_bad_fraction: the share of input records that may be quarantined
            before the component fails.
          label_key: tabular: a column every row must fill (rows without it are
            quarantined); images: the feature of the class's id (default
            ``label``; ``class_name``, the class by name that every record
            holds, leaves the id at ``label``).
          categorical_label: the label names classes (classification): its
            statistics count its values, integers and booleans too, so that
            Transform takes the classes from them and reads no record.
          schema: CSV: a Schema channel giving column types (else inferred).
          input_config: which files to read (default: the format's files in
            input_base by extension, ``.csv``/``.tsv`` (also compressed) or
            ``.parquet``, or the image folder's layout, so a README beside the
            data is not read as data).
          output_config: the splits (default: train and eval by hash, sized by
            ``eval_rows``; ``split_config.partition_feature_name`` splits on a
            key column).
          code_version: the converter code's version
            (``tfrecord_pipelines.components.code_version``): with caching on, a new
            version converts again.
          block_bytes: CSV: bytes parsed as one block (default 32 MiB); see
            ``sources.SourceOptions``.
          encoding: CSV: the files' text encoding (default UTF-8).
          delimiter: CSV: the field delimiter (default: sniffed from the first
            file's first rows, tab for ``.tsv``; ``data_source.csv_dialect``).
          engine: ``beam`` (default: the runner of the pipeline's
            beam_pipeline_args) or ``spark``: the same conversion and output
            on Spark, for data that already lives on a Spark cluster.
          spark_master: Spark: ``local[N]``, ``local-cluster[N,CORES,MB]``,
            ``spark://HOST:PORT`` or ``k8s://https://HOST:PORT`` (default ``local[*]``).
          spark_conf: Spark: settings for the session, e.g.
            ``{"spark.executor.memory": "4g"}``.
          eval_rows: with the default output_config, the eval split's cap:
            TFX's 2:1 until a third of the rows would pass it, then about
            this many eval rows and the rest train (``split_sizing``); None
            keeps 2:1 at any size. Ignored with an output_config.
          span: with ``{SPAN}``, ``{VERSION}`` or date specs in the input pattern
            (``day-{SPAN}/*.csv``): the span to convert, a number or a day
            (``2026-11-25``); None or "" converts the latest span on disk. May be
            a RuntimeParameter (str) that a scheduler fills per run. A span that
            is not on disk fails the component, naming the path looked for.

        Raises:
          ValueError: on an unknown source format, compression or engine, a
            Spark setting or master Spark does not know, or a max_bad_fraction
            outside [0, 1].
        """
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}.")
        if spark_master:
            session.check_master(spark_master)
        session.parse_conf([f"{k}={v}" for k, v in (spark_conf or {}).items()])
        if source_format not in SOURCE_FORMATS:
            raise ValueError(
                f"source_format must be one of {', '.join(SOURCE_FORMATS)}, got {source_format!r}."
            )
        parse_compression(compression)
        if not isinstance(span, data_types.RuntimeParameter):
            asked = parse_span(span)
            span = "" if asked is None else str(asked)
        if eval_rows is not None and eval_rows < 1:
            raise ValueError(f"eval_rows must be at least 1, got {eval_rows}.")
        if not 0.0 <= max_bad_fraction <= 1.0:
            raise ValueError(f"max_bad_fraction must be within [0, 1], got {max_bad_fraction}.")
        SourceOptions(
            block_bytes=block_bytes or DEFAULT_BLOCK_BYTES,
            encoding=encoding or DEFAULT_ENCODING,
            delimiter=delimiter,
        )  # checks them before the pipeline runs
        sharding = sharding or ShardingOptions()
        input_config = input_config or default_input_config(input_base, source_format)
        if output_config:
            eval_rows = None
        output_config = output_config or utils.make_default_output_config(input_config)
        spec = ShardedExampleGenSpec(
            input_base=input_base,
            input_config=input_config,
            output_config=output_config,
            output_data_format=example_gen_pb2.FORMAT_TF_EXAMPLE,
            output_file_format=example_gen_pb2.FORMAT_TFRECORDS_GZIP,
            source_format=source_format,
            target_shard_bytes=sharding.target_shard_bytes,
            num_readers=sharding.num_readers,
            num_shards=sharding.num_shards,
            compression=compression,
            max_bad_fraction=max_bad_fraction,
            label_key=label_key,
            categorical_label=int(categorical_label) if label_key else None,
            code_version=code_version,
            block_bytes=block_bytes,
            encoding=encoding,
            delimiter=delimiter,
            engine=engine,
            spark_master=spark_master,
            spark_conf=json.dumps(spark_conf) if spark_conf else None,
            eval_rows=eval_rows,
            requested_span=span,
            schema=schema,
            examples=types.Channel(type=standard_artifacts.Examples),
            quarantine=types.Channel(type=Quarantine),
            statistics=types.Channel(type=standard_artifacts.ExampleStatistics),
            summary=types.Channel(type=ui_artifacts.Markdown),
        )
        super().__init__(spec=spec)
