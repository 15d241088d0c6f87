"""ShardedExampleGen's executor without a pipeline: ``python -m tfrecord_pipelines convert``."""

from __future__ import annotations

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
from tfrecord_pipelines.components.example_gen.executor import Executor
from tfrecord_pipelines.components.example_gen.settings import ExampleGenSettings
from tfrecord_pipelines.components.example_gen.shard_plan_report import (
    ShardPlanReport,
    read_shard_plan,
)

QUARANTINE_DIR = "quarantine"
STATISTICS_DIR = "statistics"


def convert(
    source: str,
    dest: str,
    settings: ExampleGenSettings | None = None,
    *,
    schema_path: str | None = None,
    splits: Mapping[str, int] | None = None,
    split_key: str | None = None,
    beam_pipeline_args: list[str] | None = None,
    overwrite: bool = False,
    statistics: bool = False,
) -> ShardPlanReport:
    """Converts ``source`` (a file, a glob or a folder) into ``dest/Split-<name>/`` shards,
    as the component does, with the same ``settings``.

    Writes ``dest/shard_plan.json`` and quarantined input to ``dest/quarantine/``;
    with ``statistics``, also each split's TFDV statistics, computed as the
    component computes them, to ``dest/statistics/Split-<name>/FeatureStats.pb``.
    ``dest`` appears complete or not at all (``destination.fresh_destination``);
    one that already holds files is replaced only with ``overwrite``. The
    settings' format and CSV delimiter, when None, are found from the files.
    ``splits`` maps split names to hash-bucket weights (default: train and
    eval, 2:1 until a third would pass the settings' ``eval_rows``, then about
    that many eval rows: ``split_sizing``); ``split_key`` hashes that
    feature instead of the whole example, so rows sharing a key stay in one
    split. The ``spark`` engine converts on Spark instead of the Beam runner
    of ``beam_pipeline_args``.

    Returns:
      The shard plan report (also in dest/shard_plan.json).

    Raises:
      ValueError: on bad input or settings (missing or empty source, too much
        quarantined input, a destination in use, ...); dest is left as it was.
    """
    settings = settings or ExampleGenSettings()
    data = open_source(
        source,
        settings.source_format,
        delimiter=settings.csv.delimiter,
        encoding=settings.csv.encoding_to_read,
    )
    input_config = input_config_for(data)
    output_config = _output_config(input_config, splits, split_key)
    parameters = settings.parameters(default_format=data.format)
    # Found from the files when not given, as the pipeline's command line does.
    parameters[keys.DELIMITER_KEY] = data.delimiter
    if splits or split_key:
        parameters[keys.EVAL_ROWS_KEY] = None
    exec_properties = {
        keys.INPUT_BASE_KEY: data.input_base,
        keys.INPUT_CONFIG_KEY: proto_utils.proto_to_json(input_config),
        keys.OUTPUT_CONFIG_KEY: proto_utils.proto_to_json(output_config),
        **parameters,
    }
    with fresh_destination(dest, overwrite=overwrite, in_place=QUARANTINE_DIR) as working:
        _run_executor(
            working, dest, exec_properties, schema_path, beam_pipeline_args or [], statistics
        )
    return read_shard_plan(dest)


def _output_config(input_config, splits: Mapping[str, int] | None, split_key: str | None):
    """The default train and eval splits, or ``splits`` by weight; split on ``split_key``."""
    output_config = utils.make_default_output_config(input_config)
    if splits:
        del output_config.split_config.splits[:]
        for name, weight in splits.items():
            output_config.split_config.splits.add(name=name, hash_buckets=weight)
    if split_key:
        output_config.split_config.partition_feature_name = split_key
    return output_config


def _run_executor(
    working: str,
    dest: str,
    exec_properties: dict,
    schema_path: str | None,
    beam_args: list,
    statistics: bool,
) -> None:
    """Runs ShardedExampleGen's executor into ``working``, its quarantine into ``dest``."""
    quarantine = Quarantine()
    quarantine.uri = os.path.join(dest, QUARANTINE_DIR)
    examples = standard_artifacts.Examples()
    examples.uri = working
    outputs = {keys.EXAMPLES_KEY: [examples], keys.QUARANTINE_KEY: [quarantine]}
    if statistics:
        described = standard_artifacts.ExampleStatistics()
        described.uri = os.path.join(working, STATISTICS_DIR)
        outputs[keys.STATISTICS_KEY] = [described]
    with tempfile.TemporaryDirectory() as tmp:
        input_dict = {}
        if schema_path:
            schema = standard_artifacts.Schema()
            schema.uri = os.path.join(tmp, "schema")
            os.makedirs(schema.uri)
            shutil.copy(schema_path, os.path.join(schema.uri, "schema.pbtxt"))
            input_dict[keys.SCHEMA_KEY] = [schema]
        context = base_beam_executor.BaseBeamExecutor.Context(
            beam_pipeline_args=beam_args, tmp_dir=os.path.join(tmp, "beam")
        )
        Executor(context).Do(input_dict, outputs, exec_properties)
