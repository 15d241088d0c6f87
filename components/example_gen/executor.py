"""ShardedExampleGen's executor: this project's sources, split assignment, spill and writer."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import apache_beam as beam
from absl import logging
from tensorflow_metadata.proto.v0 import schema_pb2
from tfx import types
from tfx.components.example_gen import utils
from tfx.components.example_gen.base_example_gen_executor import BaseExampleGenExecutor
from tfx.components.util import examples_utils
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils
from tfx.utils import io_utils, proto_utils

from tfrecord_pipelines.components import keys, ui_artifacts
from tfrecord_pipelines.components.categorical import categorical_integers
from tfrecord_pipelines.components.data_source import IMAGES
from tfrecord_pipelines.components.example_gen import statistics, summary_page
from tfrecord_pipelines.components.example_gen.beam.shards import (
    SpillRecords,
    WriteShardedTFRecords,
)
from tfrecord_pipelines.components.example_gen.beam.sources import ReadSource
from tfrecord_pipelines.components.example_gen.engines import BEAM, SPARK
from tfrecord_pipelines.components.example_gen.quarantine import (
    QUARANTINE_FILE_PREFIX,
    QUARANTINE_FILE_SUFFIX,
    QUARANTINE_TAG,
    summarize_quarantine,
)
from tfrecord_pipelines.components.example_gen.settings import CsvOptions
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.components.example_gen.shard_plan_report import (
    ShardPlanReport,
    SkippedFiles,
    SplitOutcome,
    plan_path,
)
from tfrecord_pipelines.components.example_gen.sharded_writer import finalize_split
from tfrecord_pipelines.components.example_gen.sources import (
    SourceOptions,
    list_input_files,
    plan_source,
)
from tfrecord_pipelines.components.example_gen.spark.session import DEFAULT_MASTER
from tfrecord_pipelines.components.example_gen.split_assignment import SplitAssigner
from tfrecord_pipelines.components.example_gen.split_sizing import (
    SplitSizing,
    count_rows,
    describe_sizing,
    is_default_split,
    size_eval_split,
)
from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.components.task import CLASSIFICATION, REGRESSION

_SPILL_DIR = ".spill"


def _load_schema(input_dict: dict[str, list[types.Artifact]]) -> schema_pb2.Schema | None:
    artifacts = input_dict.get(keys.SCHEMA_KEY) or []
    if not artifacts:
        return None
    path = io_utils.get_only_uri_in_dir(artifacts[0].uri)
    return io_utils.parse_pbtxt_file(path, schema_pb2.Schema())


def source_options(
    exec_properties: dict[str, Any], schema: schema_pb2.Schema | None = None
) -> SourceOptions:
    """Returns how the input is read, from the component's parameters and its schema input."""
    return SourceOptions(
        label_key=exec_properties.get(keys.LABEL_KEY),
        schema=schema,
        csv=CsvOptions(
            block_bytes=exec_properties.get(keys.BLOCK_BYTES_KEY) or None,
            encoding=exec_properties.get(keys.ENCODING_KEY) or None,
            delimiter=exec_properties.get(keys.DELIMITER_KEY) or None,
        ),
    )


def _split_sources(
    input_config: example_gen_pb2.Input, output_config: example_gen_pb2.Output
) -> list[tuple[str, SplitAssigner]]:
    """Returns each input pattern with how its records are dealt to the output splits.

    One input pattern is split by hash (``output_config``); several input
    patterns are splits already, each written whole, as TFX's ExampleGen does.
    """
    if len(input_config.splits) == 1:
        return [(input_config.splits[0].pattern, SplitAssigner.from_output_config(output_config))]
    return [
        (s.pattern, SplitAssigner(names=(s.name,), hash_buckets=(1,))) for s in input_config.splits
    ]


def _size_splits(
    exec_properties: dict[str, Any], input_config, output_config
) -> tuple[example_gen_pb2.Output, SplitSizing | None]:
    """Sizes TFX's default train/eval split to the data (``split_sizing``), before any row
    is assigned; any other split, or no ``eval_rows``, is kept as given."""
    eval_rows = exec_properties.get(keys.EVAL_ROWS_KEY)
    if not eval_rows or len(input_config.splits) != 1 or not is_default_split(output_config):
        return output_config, None
    source_format = exec_properties[keys.SOURCE_FORMAT_KEY]
    files = list_input_files(
        source_format,
        exec_properties[keys.INPUT_BASE_KEY],
        input_config.splits[0].pattern,
    )
    rows, exact = count_rows(source_format, files)
    sizing = size_eval_split(rows, eval_rows, exact=exact)
    logging.info("Splits: %s", describe_sizing(sizing.to_json()))
    sized = example_gen_pb2.Output()
    for name, buckets in sizing.hash_buckets.items():
        sized.split_config.splits.add(name=name, hash_buckets=buckets)
    return sized, sizing


def _source_plans(exec_properties: dict[str, Any], schema, input_config, output_config) -> list:
    """Each input pattern's source plan (``sources.SourcePlan``), for either engine."""
    return [
        plan_source(
            exec_properties[keys.SOURCE_FORMAT_KEY],
            exec_properties[keys.INPUT_BASE_KEY],
            pattern,
            assigner=assigner,
            options=source_options(exec_properties, schema),
        )
        for pattern, assigner in _split_sources(input_config, output_config)
    ]


def _read_spilled_splits(
    pipeline, conversion: _Conversion, exec_properties: dict[str, Any], output_config, input_config
):
    """Applies the source transforms; returns (split name → PCollection of Spilled files).

    With the conversion's ``statistics_paths`` (split name → file), each split's
    columns are described by TFDV on the way (``statistics``).
    """
    statistics_paths = conversion.statistics_paths
    batches, quarantines = [], []
    for number, plan in enumerate(conversion.plans):
        outputs = pipeline | f"Read[Input{number}]" >> ReadSource(plan)
        batches.append(outputs[keys.EXAMPLES_TAG])
        quarantines.append(outputs[QUARANTINE_TAG])
    _ = (
        quarantines
        | "FlattenQuarantine" >> beam.Flatten()
        | "QuarantineToJson" >> beam.Map(lambda record: record.to_json())
        | "WriteQuarantine"
        >> beam.io.WriteToText(
            os.path.join(conversion.quarantine_uri, QUARANTINE_FILE_PREFIX),
            file_name_suffix=QUARANTINE_FILE_SUFFIX,
        )
    )
    names = utils.generate_output_split_names(input_config, output_config)
    by_split = lambda element, n: names.index(element.split)  # noqa: E731
    # One input needs no Flatten, which the local runner would answer by pickling
    # every batch of records on its way to the spill.
    converted = batches[0] if len(batches) == 1 else batches | "FlattenBatches" >> beam.Flatten()
    if statistics_paths:
        options = _stats_options(exec_properties, conversion.schema)
        columns = converted | "ColumnsBySplit" >> beam.Partition(by_split, len(names))
        for index, name in enumerate(names):
            _ = (
                columns[index]
                | f"Columns[{name}]" >> beam.Map(lambda element: element.columns)
                | f"Statistics[{name}]"
                >> statistics.WriteStatistics(statistics_paths[name], options)
            )
    tagged = (
        converted
        | "Spill" >> beam.ParDo(SpillRecords(conversion.spill_dir))
        | "BySplit" >> beam.Partition(by_split, len(names))
    )
    return {name: tagged[index] for index, name in enumerate(names)}


def _stats_options(exec_properties: dict[str, Any], schema: schema_pb2.Schema | None):
    """TFDV's options for the source's format, counting the values of a label that names
    classes and of the integers the schema marks categorical."""
    label = exec_properties.get(keys.LABEL_KEY)
    counted = [label] if label and exec_properties.get(keys.CATEGORICAL_LABEL_KEY) else []
    counted += [name for name in categorical_integers(schema) if name not in counted]
    return statistics.stats_options(exec_properties[keys.SOURCE_FORMAT_KEY], counted)


def _describe_shards(pipeline, split_dirs: dict[str, str], paths: dict[str, str], options):
    """The read-back pass for engines that cannot describe records as they convert (Spark)."""
    for name, split_dir in split_dirs.items():
        _ = (
            pipeline
            | f"ReadShards[{name}]" >> statistics.ReadShardColumns(split_dir)
            | f"Statistics[{name}]" >> statistics.WriteStatistics(paths[name], options)
        )


def _convert_with_spark(plans: list, exec_properties, **outputs) -> None:
    """Converts on Spark; ``outputs`` as ``spark.engine.convert_with_spark`` takes them."""
    from tfrecord_pipelines.components.example_gen.spark.engine import convert_with_spark

    convert_with_spark(
        plans,
        master=exec_properties.get(keys.SPARK_MASTER_KEY) or DEFAULT_MASTER,
        conf=json.loads(exec_properties.get(keys.SPARK_CONF_KEY) or "{}"),
        **outputs,
    )


@beam.ptransform_fn
def _SourceToRecords(pipeline, exec_properties: dict[str, Any], split_pattern: str):  # noqa: N802
    """TFX's per-record source interface, for callers of GenerateExamplesByBeam."""
    plan = plan_source(
        exec_properties[keys.SOURCE_FORMAT_KEY],
        exec_properties[keys.INPUT_BASE_KEY],
        split_pattern,
        assigner=SplitAssigner(names=("all",), hash_buckets=(1,)),
        options=SourceOptions(label_key=exec_properties.get(keys.LABEL_KEY)),
    )
    outputs = pipeline | "Read[Input]" >> ReadSource(plan)
    return outputs[keys.EXAMPLES_TAG] | "Flatten" >> beam.FlatMap(lambda element: element[1])


def _statistics_paths(output_dict, span: int, split_names) -> dict[str, str] | None:
    """Each split's statistics file, when the caller asked for statistics (the component
    does; ``convert`` does not); the artifact is labelled as StatisticsGen labels its own,
    with the span TFX's driver resolved (it writes it on the examples as a custom property)."""
    artifacts = output_dict.get(keys.STATISTICS_KEY)
    if not artifacts:
        return None
    artifact = artifact_utils.get_single_instance(artifacts)
    artifact.split_names = artifact_utils.encode_split_names(split_names)
    artifact.span = span
    return {
        name: os.path.join(
            artifact_utils.get_split_uri(artifacts, name), statistics.STATISTICS_FILE
        )
        for name in split_names
    }


def _resolved(exec_properties: dict[str, Any], name: str) -> int | None:
    """An integer the driver resolved (span, version), or None. On Kubeflow it arrives as a
    JSON number, a float (2.0): the artifacts' int properties refuse that."""
    value = exec_properties.get(name)
    return None if value is None else int(value)


class Executor(BaseExampleGenExecutor):
    """Splits by a stable hash, batch by batch; writes planned shards and a quarantine.

    TFX's ``GenerateExamplesByBeam`` moves one record per Beam element and
    hashes each in Python; here sources emit batches of records already dealt
    to their split (``split_assignment``), which costs a fraction per record.
    """

    def GetInputSourceToExamplePTransform(self) -> beam.PTransform:  # noqa: N802 - TFX API
        return _SourceToRecords

    def Do(  # noqa: N802 - TFX API
        self,
        input_dict: dict[str, list[types.Artifact]],
        output_dict: dict[str, list[types.Artifact]],
        exec_properties: dict[str, Any],
    ) -> None:
        """Converts the input, writes sharded splits, and checks the bad fraction.

        Raises:
          ValueError: on missing or empty input, an empty split, or more
            quarantined input than max_bad_fraction allows.
        """
        input_config = example_gen_pb2.Input()
        proto_utils.json_to_proto(exec_properties[keys.INPUT_CONFIG_KEY], input_config)
        output_config = example_gen_pb2.Output()
        proto_utils.json_to_proto(exec_properties[keys.OUTPUT_CONFIG_KEY], output_config)
        output_config, sizing = _size_splits(exec_properties, input_config, output_config)
        split_names = utils.generate_output_split_names(input_config, output_config)
        examples = artifact_utils.get_single_instance(output_dict[keys.EXAMPLES_KEY])
        quarantine = artifact_utils.get_single_instance(output_dict[keys.QUARANTINE_KEY])
        examples.split_names = artifact_utils.encode_split_names(split_names)
        schema = _load_schema(input_dict)
        logging.info("Converting %s into sharded TFRecords.", exec_properties[keys.INPUT_BASE_KEY])
        span = _resolved(exec_properties, keys.SPAN_PROPERTY) or 0
        conversion = _Conversion(
            split_dirs={
                name: artifact_utils.get_split_uri([examples], name) for name in split_names
            },
            outcome_paths={
                name: os.path.join(examples.uri, f".outcome-{name}.json") for name in split_names
            },
            spill_dir=os.path.join(examples.uri, _SPILL_DIR),
            statistics_paths=_statistics_paths(output_dict, span, split_names),
            plans=_source_plans(exec_properties, schema, input_config, output_config),
            quarantine_uri=quarantine.uri,
            schema=schema,
            sharding=ShardingOptions(
                target_shard_bytes=exec_properties[keys.TARGET_SHARD_BYTES_KEY],
                num_readers=exec_properties.get(keys.NUM_READERS_KEY),
                num_shards=exec_properties.get(keys.NUM_SHARDS_KEY),
            ),
            compression=exec_properties[keys.COMPRESSION_KEY],
        )
        outcomes = self._convert(conversion, exec_properties, input_config, output_config)
        summary = summarize_quarantine(quarantine.uri)
        report = _shard_plan_report(
            conversion, outcomes, summary, sizing, exec_properties, input_config
        )
        _publish(examples, quarantine, report, summary.count)
        _record_task(examples, exec_properties)
        if output_dict.get(keys.EXAMPLES_SUMMARY_KEY):
            ui_artifacts.write_text(
                artifact_utils.get_single_instance(output_dict[keys.EXAMPLES_SUMMARY_KEY]),
                summary_page.render(report, conversion.statistics_paths),
            )
        _check_outcome(report, summary, exec_properties[keys.MAX_BAD_FRACTION_KEY], quarantine.uri)

    def _convert(self, conversion, exec_properties, input_config, output_config) -> dict:
        """Converts on Spark or Beam into each split's shards; returns each split's outcome."""
        on_spark = (exec_properties.get(keys.ENGINE_KEY) or BEAM) == SPARK
        if on_spark:
            _convert_with_spark(
                conversion.plans,
                exec_properties,
                split_dirs=conversion.split_dirs,
                outcome_paths=conversion.outcome_paths,
                quarantine_uri=conversion.quarantine_uri,
                spill_dir=conversion.spill_dir,
                sharding=conversion.sharding,
                compression=conversion.compression,
            )
        else:
            with self._make_beam_pipeline() as pipeline:
                splits = _read_spilled_splits(
                    pipeline, conversion, exec_properties, output_config, input_config
                )
                for name, batches in splits.items():
                    _ = batches | f"WriteSplit[{name}]" >> WriteShardedTFRecords(
                        conversion.split_dirs[name],
                        conversion.outcome_paths[name],
                        conversion.sharding,
                        conversion.compression,
                    )
        outcomes = {
            name: finalize_split(folder, conversion.outcome_paths[name], conversion.compression)
            for name, folder in conversion.split_dirs.items()
        }
        # Spill files of bundles a runner retried were never read.
        if filesystem.exists(conversion.spill_dir):
            filesystem.remove_tree(conversion.spill_dir)
        if on_spark and conversion.statistics_paths:
            logging.info("Describing the shards Spark wrote (TFDV runs on Beam only).")
            with self._make_beam_pipeline() as pipeline:
                _describe_shards(
                    pipeline,
                    conversion.split_dirs,
                    conversion.statistics_paths,
                    _stats_options(exec_properties, conversion.schema),
                )
        return outcomes


@dataclasses.dataclass(frozen=True)
class _Conversion:
    """Where one execution's conversion writes, and what it reads."""

    split_dirs: dict[str, str]
    outcome_paths: dict[str, str]
    spill_dir: str
    statistics_paths: dict[str, str]
    plans: list
    quarantine_uri: str
    schema: schema_pb2.Schema | None
    sharding: ShardingOptions
    compression: str


def _shard_plan_report(
    conversion: _Conversion, outcomes: dict, summary, sizing, exec_properties, input_config
) -> ShardPlanReport:
    """The shard plan and counts of a finished conversion (``shard_plan.json``), with the span
    and version TFX's driver resolved (0 and None for data without spans, as on the Examples
    artifact) and the input pattern it filled in."""
    splits = {name: SplitOutcome.from_json(outcome) for name, outcome in outcomes.items()}
    written = sum(split.records for split in splits.values())
    skipped = None
    if exec_properties[keys.SOURCE_FORMAT_KEY] == IMAGES:
        paths = [path for plan in conversion.plans for path in plan.skipped]
        skipped = SkippedFiles(len(paths), tuple(paths[:100]))
    return ShardPlanReport(
        span=_resolved(exec_properties, keys.SPAN_PROPERTY) or 0,
        version=_resolved(exec_properties, keys.VERSION_PROPERTY),
        input_pattern=input_config.splits[0].pattern,
        target_shard_bytes=conversion.sharding.target_shard_bytes,
        num_readers=conversion.sharding.num_readers,
        num_shards=conversion.sharding.num_shards,
        compression=conversion.compression,
        records_read=written + summary.count,
        records_written=written,
        quarantined=summary.count,
        quarantined_by_reason=summary.by_reason,
        splits=splits,
        split_sizing=sizing.to_json() if sizing else None,
        skipped_files=skipped,
    )


def _record_task(examples: types.Artifact, exec_properties: dict[str, Any]) -> None:
    """Records on the examples the label they were converted for and its problem (when
    told it), so that the components that read them need not be told again."""
    label = exec_properties.get(keys.LABEL_KEY)
    if not label:
        return
    examples.set_string_custom_property(keys.LABEL_PROPERTY, label)
    categorical = exec_properties.get(keys.CATEGORICAL_LABEL_KEY)
    if categorical is None:
        return
    examples.set_string_custom_property(
        keys.PROBLEM_PROPERTY, CLASSIFICATION if categorical else REGRESSION
    )


def _publish(
    examples: types.Artifact, quarantine: types.Artifact, report: ShardPlanReport, bad: int
):
    """Writes the shard plan beside the splits and on the artifacts."""
    # Written whole or not at all: a plan is the mark of a complete conversion.
    path = plan_path(examples.uri)
    with filesystem.open_file(path + ".partial", "w") as f:
        json.dump(report.to_json(), f, indent=2)
    filesystem.replace(path + ".partial", path)
    examples_utils.set_payload_format(examples, example_gen_pb2.FORMAT_TF_EXAMPLE)
    # TFX names every TFRecord format 'tfrecords_gzip'; readers detect GZIP by '.gz'.
    examples_utils.set_file_format(examples, "tfrecords_gzip")
    examples.set_string_custom_property(keys.COMPRESSION_KEY, report.compression)
    examples.set_string_custom_property(keys.SHARD_PLAN_KEY, report.dumps())
    examples.set_int_custom_property(keys.RECORDS_WRITTEN_PROPERTY, report.records_written)
    examples.set_int_custom_property(keys.QUARANTINED_COUNT_PROPERTY, bad)
    quarantine.set_int_custom_property(keys.QUARANTINE_COUNT_PROPERTY, bad)


def _check_outcome(report: ShardPlanReport, summary, max_bad: float, quarantine_uri: str) -> None:
    """Fails the conversion for an empty split, or more quarantined input than allowed."""
    read = report.records_read
    for name, outcome in report.splits.items():
        if outcome.records == 0:
            raise ValueError(
                f"Split {name!r} received no examples ({read} records read, "
                f"{summary.count} quarantined); add data or change the split ratios."
            )
    if read and summary.count / read > max_bad:
        raise ValueError(
            f"{summary.count} of {read} input records "
            f"({summary.count / read:.2%}) were quarantined, more than "
            f"max_bad_fraction {max_bad:.2%}: {summary.describe()}. "
            f"All of them: {quarantine_uri}"
        )
