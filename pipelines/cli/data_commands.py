"""``convert`` and ``inspect``: sharded TFRecords without a pipeline."""

from __future__ import annotations

import argparse
import os

from tfrecord_pipelines.cli.dialect_arguments import add_delimiter_argument
from tfrecord_pipelines.cli.shard_arguments import (
    add_sharding_arguments,
    compression_argument,
    sharding_from_args,
)
from tfrecord_pipelines.components.data_source import FORMATS
from tfrecord_pipelines.components.example_gen.engines import BEAM, ENGINES, SPARK
from tfrecord_pipelines.components.example_gen.quarantine_limit import DEFAULT_MAX_BAD_FRACTION
from tfrecord_pipelines.components.example_gen.spark.session import DEFAULT_MASTER
from tfrecord_pipelines.components.example_gen.split_sizing import DEFAULT_EVAL_ROWS
from tfrecord_pipelines.components.storage import filesystem


def add_parsers(commands) -> None:
    """Adds the convert and inspect sub-commands to the CLI's sub-parsers."""
    _add_convert_parser(commands)
    inspect = commands.add_parser(
        "inspect", help="count records and infer the feature spec of TFRecord files"
    )
    inspect.add_argument("path", help="a TFRecord file, a folder or a glob")
    inspect.add_argument("--verbose", action="store_true", help="show all library logs")


def _add_convert_parser(commands) -> None:
    convert = commands.add_parser(
        "convert", help="convert CSV, Parquet or an image folder into sharded TFRecords"
    )
    convert.add_argument(
        "source", help="a CSV or Parquet file, a glob, or a folder of them (or the image folder)"
    )
    convert.add_argument("dest", help="output folder: Split-<name>/ shards, shard_plan.json")
    convert.add_argument(
        "--format", choices=FORMATS, help="csv, parquet or images (default: detected)"
    )
    add_sharding_arguments(convert)
    convert.add_argument(
        "--compression",
        type=compression_argument,
        help="gzip (fast deflate), gzip:LEVEL (zlib, 1 fastest - 9 smallest) or none "
        "(default: gzip for tables, none for images, as run)",
    )
    convert.add_argument(
        "--encoding", default="utf-8", help="CSV: the files' text encoding (default utf-8)"
    )
    add_delimiter_argument(convert)
    convert.add_argument(
        "--block-size", default="32MiB", help="CSV: bytes parsed as one block (default 32MiB)"
    )
    convert.add_argument(
        "--overwrite", action="store_true", help="replace what DEST holds (default: refuse)"
    )
    convert.add_argument(
        "--label",
        help="tabular: column every row must fill; images: the feature of the class id "
        "(default: label; every record names its class in class_name)",
    )
    convert.add_argument("--schema", help="CSV: schema.pbtxt giving column types")
    convert.add_argument(
        "--statistics",
        action="store_true",
        help="also write each split's TFDV statistics, as the pipeline's ExampleGen does "
        "(DEST/statistics/Split-<name>/FeatureStats.pb)",
    )
    _add_split_arguments(convert)
    convert.add_argument(
        "--max-bad-fraction",
        type=float,
        default=DEFAULT_MAX_BAD_FRACTION,
        help="share of input that may be quarantined",
    )
    _add_engine_arguments(convert)
    convert.add_argument("--beam-arg", action="append", default=[], metavar="ARG")
    convert.add_argument("--verbose", action="store_true", help="show all library logs")


def _add_split_arguments(convert: argparse.ArgumentParser) -> None:
    convert.add_argument(
        "--split",
        help="split names and weights, e.g. train=8,eval=2 (default: train=2,eval=1 until "
        "the eval third would pass --eval-rows, then about that many eval rows)",
    )
    convert.add_argument(
        "--eval-rows",
        type=int,
        default=DEFAULT_EVAL_ROWS,
        help=f"the default split's cap on eval rows (default {DEFAULT_EVAL_ROWS:,}: an "
        "accuracy near 0.8 to about +-0.25 points, 95%%)",
    )
    convert.add_argument(
        "--split-key", help="split on this column's hash, keeping rows that share it together"
    )


def _add_engine_arguments(convert: argparse.ArgumentParser) -> None:
    convert.add_argument(
        "--engine",
        choices=ENGINES,
        default=BEAM,
        help="beam (default: the --beam-arg runner) or spark (needs Java 17)",
    )
    convert.add_argument(
        "--spark-master",
        default=DEFAULT_MASTER,
        help="spark: local[N], local-cluster[N,CORES,MB], spark://HOST:PORT or k8s://... "
        "(default local[*])",
    )
    convert.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="spark: a session setting, e.g. spark.executor.memory=4g (repeatable)",
    )


def _parse_splits(text: str) -> dict[str, int]:
    splits = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        if not name.strip() or not weight.strip().isdigit() or int(weight) < 1:
            raise ValueError(
                f"--split {text!r}: give name=weight pairs with whole weights, e.g. train=8,eval=2."
            )
        splits[name.strip()] = int(weight)
    return splits


def _check_engine(args: argparse.Namespace):
    """The Spark settings, checked (and that Java is there) before any slow import."""
    from tfrecord_pipelines.cli.task_arguments import check_java_for_spark
    from tfrecord_pipelines.components.example_gen.settings import SparkOptions
    from tfrecord_pipelines.components.example_gen.spark import session

    if args.engine != SPARK:
        if args.spark_conf:
            raise ValueError("--spark-conf is for --engine spark.")
        return SparkOptions(master=args.spark_master)
    spark = SparkOptions(master=args.spark_master, conf=session.parse_conf(args.spark_conf))
    check_java_for_spark()
    return spark


def run_convert(args: argparse.Namespace) -> None:
    """Converts and prints the shard plan and the quarantine count."""
    from tfrecord_pipelines.components.storage import filesystem

    # What the source names is listed once in a bucket while it is checked.
    with filesystem.one_listing(args.source):
        settings, arguments = _convert_settings(args)
    _convert_and_report(args, settings, arguments)


def _convert_settings(args: argparse.Namespace):
    """The conversion's settings and convert's other arguments, checked before anything slow."""
    from tfrecord_pipelines.cli.task_arguments import check_writable
    from tfrecord_pipelines.cli.usage import UsageError
    from tfrecord_pipelines.components.data_source import check_encoding, check_label, open_source
    from tfrecord_pipelines.components.data_source.image_folder import class_id_key
    from tfrecord_pipelines.components.example_gen.settings import CsvOptions, ExampleGenSettings
    from tfrecord_pipelines.components.example_gen.shard_compression import default_compression
    from tfrecord_pipelines.components.example_gen.shard_plan import parse_size
    from tfrecord_pipelines.components.spans import split_data_path
    from tfrecord_pipelines.components.storage import filesystem

    # Everything that can be checked is, before the converter's imports (TFX, Beam).
    check_encoding(args.encoding)
    if split_data_path(args.source):
        raise UsageError(
            f"{args.source} names span folders; convert reads one folder: give one span's "
            "folder (e.g. events/day-31), or run the pipeline with --data and --span."
        )
    source = open_source(args.source, args.format, delimiter=args.delimiter, encoding=args.encoding)
    if source.is_images:
        class_id_key(args.label)
    elif args.label:
        check_label(source, args.label)
    if args.schema and not filesystem.exists(args.schema):
        raise UsageError(f"--schema {args.schema} does not exist.")
    splits = _parse_splits(args.split) if args.split else None
    if args.eval_rows < 1:
        raise UsageError(f"--eval-rows must be at least 1, got {args.eval_rows}.")
    settings = ExampleGenSettings(
        source_format=source.format,
        label_key=args.label,
        sharding=sharding_from_args(args),
        compression=args.compression or default_compression(source.is_images),
        max_bad_fraction=args.max_bad_fraction,
        eval_rows=args.eval_rows,
        csv=CsvOptions(parse_size(args.block_size), args.encoding, source.delimiter),
        engine=args.engine,
        spark=_check_engine(args),
    )
    if not filesystem.is_remote(args.dest):
        check_writable(os.path.abspath(args.dest))
    return settings, {"schema_path": args.schema, "splits": splits, "split_key": args.split_key}


def _convert_and_report(args: argparse.Namespace, settings, arguments: dict) -> None:
    from tfrecord_pipelines.components.example_gen.convert import convert
    from tfrecord_pipelines.local.beam_args import local_beam_args
    from tfrecord_pipelines.local.disk_space import check_disk_full

    dest = filesystem.absolute(args.dest)
    print(f"Converting {args.source} ({settings.source_format}) into {dest} ...", flush=True)
    try:
        report = convert(
            args.source,
            dest,
            settings,
            **arguments,
            beam_pipeline_args=local_beam_args(args.beam_arg),
            overwrite=args.overwrite,
            statistics=args.statistics,
        )
    except Exception as e:
        check_disk_full(e, dest)
        raise
    _print_report(report, dest, args.statistics)


def _print_report(report, dest: str, statistics: bool) -> None:
    """What a conversion wrote, split by split, and where its shard plan is."""
    from tfrecord_pipelines.components.data_source.image_folder import describe_skipped
    from tfrecord_pipelines.components.example_gen.convert import QUARANTINE_DIR, STATISTICS_DIR
    from tfrecord_pipelines.components.example_gen.shard_plan_report import plan_path
    from tfrecord_pipelines.components.example_gen.split_sizing import describe_sizing

    print(
        f"Read {report.records_read:,} records: wrote {report.records_written:,}, "
        f"quarantined {report.quarantined:,} ({os.path.join(dest, QUARANTINE_DIR)})."
    )
    if report.skipped_files and report.skipped_files.count:
        skipped = report.skipped_files
        print(f"  Skipped {describe_skipped(skipped.count, list(skipped.first))}.")
    if report.split_sizing is not None:
        print(f"  Splits sized to the data: {describe_sizing(report.split_sizing)}")
    asked = (
        f"{report.num_shards} asked for"
        if report.num_shards
        else f"target {report.target_shard_bytes / 2**20:.1f} MiB"
    )
    for name, split in report.splits.items():
        sizes = [s.bytes for s in split.shards]
        print(
            f"  Split-{name}: {len(sizes)} shards (planned {split.planned_shards}), "
            f"{split.records:,} records, {split.bytes / 2**20:.1f} MiB, shard sizes "
            f"{min(sizes) / 2**20:.1f}-{max(sizes) / 2**20:.1f} MiB ({asked})"
        )
        if split.shards_adjusted:
            print(f"    {split.shards_adjusted}")
    print(f"Shard plan: {plan_path(dest)}")
    if statistics:
        print(f"Statistics: {os.path.join(dest, STATISTICS_DIR)}/Split-<name>/FeatureStats.pb")


def run_inspect(args: argparse.Namespace) -> None:
    """Prints record and shard counts, sizes and the inferred feature spec."""
    from tfrecord_pipelines.components.tfrecords.inspection import format_spec, inspect_records

    result = inspect_records(args.path)
    for file, (records, size) in result.files.items():
        print(f"{file}: {records:,} records, {size:,} bytes")
    print(f"{len(result.files)} shards, {result.records:,} records, {result.bytes / 2**20:.2f} MiB")
    print(f"Feature spec (from {result.sampled:,} records), for tf.io.parse_example:")
    print(format_spec(result.feature_spec))
