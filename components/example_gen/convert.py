"""ShardedExampleGen's executor without a pipeline: ``python -m tfrecord_pipelines convert``."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping

from tfx.components.example_gen import utils
from tfx.dsl.components.base import base_beam_executor
from tfx.types import standard_artifacts
from tfx.utils import proto_utils

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.data_source import open_source
from tfrecord_pipelines.components.example_gen.component import Quarantine, input_config_for
from tfrecord_pipelines.components.example_gen.destination import fresh_destination
from tfrecord_pipelines.components.example_gen.engines import BEAM
from tfrecord_pipelines.components.example_gen.executor import Executor
from tfrecord_pipelines.components.example_gen.quarantine_limit import DEFAULT_MAX_BAD_FRACTION
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.components.example_gen.shard_plan_report import (
    ShardPlanReport,
    read_shard_plan,
)
from tfrecord_pipelines.components.example_gen.sources import DEFAULT_ENCODING
from tfrecord_pipelines.components.example_gen.split_sizing import DEFAULT_EVAL_ROWS

QUARANTINE_DIR = "quarantine"


def convert(
    source: str,
    dest: str,
    *,
    source_format: str | None,
    sharding: ShardingOptions,
    compression: str,
    label_key: str | None = None,
    max_bad_fraction: float = DEFAULT_MAX_BAD_FRACTION,
    schema_path: str | None = None,
    splits: Mapping[str, int] | None = None,
    split_key: str | None = None,
    eval_rows: int | None = DEFAULT_EVAL_ROWS,
    beam_pipeline_args: list[str] | None = None,
    block_bytes: int | None = None,
    encoding: str | None = None,
    delimiter: str | None = None,
    overwrite: bool = False,
    engine: str = BEAM,
    spark_master: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
) -> ShardPlanReport:
    """Converts ``source`` (a file, a glob or a folder) into ``dest/Split-<name>/`` shards,
    as the component does.

    Writes ``dest/shard_plan.json`` and quarantined input to ``dest/quarantine/``.
    ``dest`` appears complete or not at all (``destination.fresh_destination``);
    one that already holds files is replaced only with ``overwrite``.
    ``splits`` maps split names to hash-bucket weights (default: train and
    eval, 2:1 until a third would pass ``eval_rows``, then about
    ``eval_rows`` eval rows: ``split_sizing``); ``split_key`` hashes that
    feature instead of the whole example, so rows sharing a key stay in one
    split. ``engine`` ``spark`` converts on
    Spark (``spark_master``, default ``local[*]``, and ``spark_conf``
    settings) instead of the Beam runner of ``beam_pipeline_args``.

    Returns:
      The shard plan report (also in dest/shard_plan.json).

    Raises:
      ValueError: on bad input or settings (missing or empty source, too much
        quarantined input, a destination in use, ...); dest is left as it was.
    """
    data = open_source(
        source, source_format, delimiter=delimiter, encoding=encoding or DEFAULT_ENCODING
    )
    input_config = input_config_for(data)
    output_config = utils.make_default_output_config(input_config)
    if splits:
        del output_config.split_config.splits[:]
        for name, weight in splits.items():
            output_config.split_config.splits.add(name=name, hash_buckets=weight)
    if split_key:
        output_config.split_config.partition_feature_name = split_key
    if splits or split_key:
        eval_rows = None
    quarantine = Quarantine()
    quarantine.uri = os.path.join(dest, QUARANTINE_DIR)
    exec_properties = {
        keys.INPUT_BASE_KEY: data.input_base,
        keys.INPUT_CONFIG_KEY: proto_utils.proto_to_json(input_config),
        keys.OUTPUT_CONFIG_KEY: proto_utils.proto_to_json(output_config),
        keys.SOURCE_FORMAT_KEY: data.format,
        keys.TARGET_SHARD_BYTES_KEY: sharding.target_shard_bytes,
        keys.NUM_READERS_KEY: sharding.num_readers,
        keys.NUM_SHARDS_KEY: sharding.num_shards,
        keys.COMPRESSION_KEY: compression,
        keys.MAX_BAD_FRACTION_KEY: max_bad_fraction,
        keys.LABEL_KEY: label_key,
        keys.BLOCK_BYTES_KEY: block_bytes,
        keys.ENCODING_KEY: encoding,
        keys.DELIMITER_KEY: data.delimiter,
        keys.ENGINE_KEY: engine,
        keys.SPARK_MASTER_KEY: spark_master,
        keys.SPARK_CONF_KEY: json.dumps(dict(spark_conf or {})),
        keys.EVAL_ROWS_KEY: eval_rows,
    }
    with (
        fresh_destination(dest, overwrite=overwrite, in_place=QUARANTINE_DIR) as working,
        tempfile.TemporaryDirectory() as tmp,
    ):
        examples = standard_artifacts.Examples()
        examples.uri = working
        input_dict = {}
        if schema_path:
            schema = standard_artifacts.Schema()
            schema.uri = os.path.join(tmp, "schema")
            os.makedirs(schema.uri)
            shutil.copy(schema_path, os.path.join(schema.uri, "schema.pbtxt"))
            input_dict[keys.SCHEMA_KEY] = [schema]
        context = base_beam_executor.BaseBeamExecutor.Context(
            beam_pipeline_args=beam_pipeline_args or [], tmp_dir=os.path.join(tmp, "beam")
        )
        Executor(context).Do(
            input_dict,
            {keys.EXAMPLES_KEY: [examples], keys.QUARANTINE_KEY: [quarantine]},
            exec_properties,
        )
    return read_shard_plan(dest)
