"""ShardedExampleGen's settings: frozen, checked when made, each default written once.

The component (``component.ShardedExampleGen``) and ``convert`` take the same
``ExampleGenSettings`` and build the executor's parameters from it
(``parameters``), so a conversion by the command line and a pipeline's are
asked for alike. Light to import: the command line builds one before TFX.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.data_source import FORMATS, check_encoding, csv_dialect
from tfrecord_pipelines.components.example_gen.engines import BEAM, ENGINES
from tfrecord_pipelines.components.example_gen.quarantine_limit import DEFAULT_MAX_BAD_FRACTION
from tfrecord_pipelines.components.example_gen.shard_compression import GZIP, parse_compression
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.components.example_gen.spark import session
from tfrecord_pipelines.components.example_gen.split_sizing import DEFAULT_EVAL_ROWS

# CSV bytes per Beam element: large enough that Beam's cost per element
# vanishes, small enough that one large file spreads over the workers and a
# worker's memory stays a few times this.
DEFAULT_BLOCK_BYTES = 32 * 1024 * 1024
DEFAULT_ENCODING = "utf-8"


@dataclasses.dataclass(frozen=True)
class CsvOptions:
    """How CSV files are read; None leaves a setting to the executor's default.

    Attributes:
      block_bytes: bytes of a file parsed as one block (default 32 MiB). Larger
        blocks cost less per row and more memory (about 5x the block per worker);
        smaller ones spread a file over more workers.
      encoding: the files' text encoding, a Python codec name (default UTF-8); a
        row that does not decode is quarantined.
      delimiter: the field delimiter (default: sniffed from the first file's
        first rows, tab for ``.tsv``; ``data_source.csv_dialect``).
    """

    block_bytes: int | None = None
    encoding: str | None = None
    delimiter: str | None = None

    def __post_init__(self):
        if self.block_bytes is not None and self.block_bytes < 1:
            raise ValueError(f"block_bytes must be at least 1, got {self.block_bytes}.")
        if self.encoding is not None:
            check_encoding(self.encoding)
        if self.delimiter is not None:
            csv_dialect.check_delimiter(self.delimiter)

    @property
    def block_bytes_to_read(self) -> int:
        """The block size, the default where none is set."""
        return self.block_bytes or DEFAULT_BLOCK_BYTES

    @property
    def encoding_to_read(self) -> str:
        """The encoding, the default where none is set."""
        return self.encoding or DEFAULT_ENCODING


@dataclasses.dataclass(frozen=True)
class SparkOptions:
    """Where the ``spark`` engine converts.

    Attributes:
      master: ``local[N]``, ``local-cluster[N,CORES,MB]``, ``spark://HOST:PORT``
        or ``k8s://https://HOST:PORT``; None: ``local[*]``, every core of this machine.
      conf: settings for the session, e.g. ``{"spark.executor.memory": "4g"}``.
    """

    master: str | None = None
    conf: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.master:
            session.check_master(self.master)
        session.parse_conf([f"{k}={v}" for k, v in self.conf.items()])


@dataclasses.dataclass(frozen=True)
class ExampleGenSettings:
    """What ShardedExampleGen converts, and how.

    Attributes:
      source_format: ``csv``, ``parquet`` or ``images``; None: ``convert`` finds
        it from the files, the component reads ``csv``.
      label_key: tabular: a column every row must fill (rows without it are
        quarantined); images: the feature of the class's id (default ``label``;
        ``class_name``, the class by name that every record holds, leaves the id
        at ``label``).
      categorical_label: True: the label names classes (classification): its
        statistics count its values, integers and booleans too, so that
        Transform takes the classes from them and reads no record; the examples
        record the problem as classification. False: a regression's label,
        recorded as such. None: not said, and not recorded (a string label's
        values are counted all the same; an integer label's are not).
      sharding: the shards' target size and readers (``shard_plan``): about 10
        shards per reading server keeps every reader busy.
      compression: ``gzip`` (smaller files, more CPU to read; ISA-L's fast deflate),
        ``gzip:LEVEL`` (zlib's, 1 fastest to 9 smallest) or ``none``.
      max_bad_fraction: the share of input records that may be quarantined
        before the conversion fails.
      eval_rows: with the default splits, the eval split's cap: TFX's 2:1 until
        a third of the rows would pass it, then about this many eval rows and the
        rest train (``split_sizing``); None keeps 2:1 at any size.
      csv: how CSV files are read.
      engine: ``beam`` (the runner of the pipeline's beam_pipeline_args) or
        ``spark``: the same conversion and output on Spark, for data that
        already lives on a Spark cluster.
      spark: the Spark engine's master and session settings.

    Raises:
      ValueError: on an unknown source format, compression or engine, a Spark
        setting or master Spark does not know, eval_rows below 1, or a
        max_bad_fraction outside [0, 1].
    """

    source_format: str | None = None
    label_key: str | None = None
    categorical_label: bool | None = None
    sharding: ShardingOptions = dataclasses.field(default_factory=ShardingOptions)
    compression: str = GZIP
    max_bad_fraction: float = DEFAULT_MAX_BAD_FRACTION
    eval_rows: int | None = DEFAULT_EVAL_ROWS
    csv: CsvOptions = dataclasses.field(default_factory=CsvOptions)
    engine: str = BEAM
    spark: SparkOptions = dataclasses.field(default_factory=SparkOptions)

    def __post_init__(self):
        if self.source_format is not None and self.source_format not in FORMATS:
            raise ValueError(
                f"source_format must be one of {', '.join(FORMATS)}, got {self.source_format!r}."
            )
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}.")
        parse_compression(self.compression)
        if self.eval_rows is not None and self.eval_rows < 1:
            raise ValueError(f"eval_rows must be at least 1, got {self.eval_rows}.")
        if not 0.0 <= self.max_bad_fraction <= 1.0:
            raise ValueError(
                f"max_bad_fraction must be within [0, 1], got {self.max_bad_fraction}."
            )

    def parameters(self, default_format: str) -> dict[str, Any]:
        """The executor's parameters (``keys``' names), ``default_format`` for a format
        left unset. A setting left to the executor's default is None."""
        return {
            keys.SOURCE_FORMAT_KEY: self.source_format or default_format,
            keys.TARGET_SHARD_BYTES_KEY: self.sharding.target_shard_bytes,
            keys.NUM_READERS_KEY: self.sharding.num_readers,
            keys.NUM_SHARDS_KEY: self.sharding.num_shards,
            keys.COMPRESSION_KEY: self.compression,
            keys.MAX_BAD_FRACTION_KEY: self.max_bad_fraction,
            keys.LABEL_KEY: self.label_key,
            keys.CATEGORICAL_LABEL_KEY: (
                int(self.categorical_label)
                if self.label_key and self.categorical_label is not None
                else None
            ),
            keys.BLOCK_BYTES_KEY: self.csv.block_bytes,
            keys.ENCODING_KEY: self.csv.encoding,
            keys.DELIMITER_KEY: self.csv.delimiter,
            keys.ENGINE_KEY: self.engine,
            keys.SPARK_MASTER_KEY: self.spark.master,
            keys.SPARK_CONF_KEY: json.dumps(dict(self.spark.conf)) if self.spark.conf else None,
            keys.EVAL_ROWS_KEY: self.eval_rows,
        }
