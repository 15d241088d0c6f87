"""Arguments shared by the run, compile and submit commands, and the PipelineConfig they make.

Everything here is checked before TFX or TensorFlow is imported (for a
local data folder): a wrong folder, format or label costs a second, not the
half minute of TFX's import.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from tfrecord_pipelines.cli.dialect_arguments import add_delimiter_argument
from tfrecord_pipelines.cli.evaluation_settings import (
    add_evaluation_arguments,
    evaluation_options,
    slice_features,
    thresholds_from_args,
)
from tfrecord_pipelines.cli.shard_arguments import (
    add_sharding_arguments,
    compression_argument,
    sharding_from_args,
)
from tfrecord_pipelines.cli.usage import UsageError
from tfrecord_pipelines.components.drift.thresholds import DEFAULT_MAX_JS, DEFAULT_MAX_LINF
from tfrecord_pipelines.components.task import CLASSIFICATION, PROBLEMS
from tfrecord_pipelines.components.trainer.options import TrainingOptions
from tfrecord_pipelines.definition.config import DEFAULT_EVAL_STEPS

_REPO_ROOT = Path(__file__).resolve().parents[2]
# The bundled data sets, which the image holds too (docker/Dockerfile).
BUNDLED_DATA_DIR = _REPO_ROOT / "data"
DEFAULT_DATA = BUNDLED_DATA_DIR / "penguins"
DEFAULT_LABEL = "species"
SCHEMAS_DIR = _REPO_ROOT / "schemas"
_NO_AUGMENTATION = "none"


def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the data, spans, training, evaluation, shard and image options."""
    _add_data_arguments(parser)
    _add_span_arguments(parser)
    _add_training_arguments(parser)
    add_evaluation_arguments(parser)
    _add_ingest_arguments(parser)
    _add_image_arguments(parser)
    parser.add_argument("--verbose", action="store_true", help="show all library logs")


def _add_data_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("data")
    group.add_argument(
        "--data",
        help="a CSV or Parquet file, a glob ('exports/*.csv.gz'), or a folder of CSV or "
        "Parquet files (Hive key=value/ levels too) or of images (class sub-folders or "
        f"labels.csv) (default: the bundled {DEFAULT_DATA.name}); data in spans: a folder "
        "per span, named "
        "with TFX's specs, e.g. 'events/day-{SPAN}/', 'events/{YYYY}-{MM}-{DD}/', "
        "'events/day-{SPAN}/v{VERSION}/'",
    )
    group.add_argument(
        "--format",
        choices=("csv", "parquet", "images"),
        help="what --data holds (default: detected from the files' names)",
    )
    add_delimiter_argument(group)
    group.add_argument(
        "--label",
        help="column to predict (required with tabular --data; default: "
        f"{DEFAULT_LABEL}); images: always the class, by its folder's or labels.csv's name",
    )
    group.add_argument("--problem", choices=PROBLEMS, default=CLASSIFICATION)
    group.add_argument(
        "--inputs",
        metavar="FEATURE[,FEATURE...]",
        help="the features the model reads (default: every column but the label; images: "
        "the image alone)",
    )
    group.add_argument("--name", help="pipeline name (default: the data folder's name)")
    schema = group.add_mutually_exclusive_group()
    schema.add_argument(
        "--schema",
        help="curated schema.pbtxt (default: schemas/<data folder name>/schema.pbtxt if present)",
    )
    schema.add_argument(
        "--infer-schema", action="store_true", help="infer the schema even if a curated one exists"
    )
    group.add_argument(
        "--module-file",
        metavar="FILE.py",
        help="your own preprocessing_fn and/or run_fn (whichever it defines) instead of the "
        "built-in ones",
    )


def _add_span_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("data in spans")
    group.add_argument(
        "--span",
        metavar="N|YYYY-MM-DD",
        help="with spans in --data: the span to convert, a number or a day (default: the "
        "latest on disk); a span that is not on disk fails the run",
    )
    group.add_argument(
        "--window",
        type=int,
        metavar="N",
        help="with spans in --data: train on this span and the N-1 before it; each span is "
        "converted and analyzed once; a local run converts the window's earlier spans first, "
        "a Kubeflow run reads them from --state-dir",
    )
    group.add_argument(
        "--warm-start",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with spans in --data (Kubeflow: with --window): start training from the latest "
        "blessed model "
        "of earlier spans when its inputs and vocabularies are this model's, for the new data's "
        "share of the steps (default); --no-warm-start trains from scratch",
    )
    group.add_argument(
        "--on-drift",
        choices=("block", "warn"),
        default="block",
        help="with spans in --data (Kubeflow: with --window): when this span's data drifted "
        "from the previous span's, block the push (default) or only warn",
    )
    group.add_argument(
        "--max-drift-js",
        type=float,
        default=DEFAULT_MAX_JS,
        metavar="D",
        help="numeric features drift above this Jensen-Shannon divergence on common bins "
        f"(default: {DEFAULT_MAX_JS}; a schema's drift_comparator wins)",
    )
    group.add_argument(
        "--max-drift-linf",
        type=float,
        default=DEFAULT_MAX_LINF,
        metavar="D",
        help="categorical features drift above this L-infinity distance of the values' shares "
        f"(default: {DEFAULT_MAX_LINF})",
    )


def _add_training_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("training")
    length = group.add_mutually_exclusive_group()
    length.add_argument(
        "--train-steps",
        type=int,
        help="training steps (batches) (default: at least one epoch and at least 1000 steps)",
    )
    length.add_argument(
        "--epochs",
        type=float,
        help="passes over the training split, e.g. 3 or 0.5 (default: as --train-steps)",
    )
    group.add_argument("--eval-steps", type=int, default=DEFAULT_EVAL_STEPS)
    group.add_argument(
        "--batch-size",
        type=int,
        help="Trainer's global batch (default: from the train split's size: 64, doubled up to "
        "1024 while an epoch would take over 1000 steps)",
    )
    group.add_argument(
        "--cache",
        default="auto",
        metavar="auto|none|memory|FOLDER",
        help="cache the parsed train split (images: decoded): auto (in memory when small), "
        "none, memory, or a local folder for a file cache; unless none, the validation "
        "batches are also held in memory when they fit (default: auto)",
    )
    group.add_argument(
        "--mixed-precision", action="store_true", help="train in mixed_float16 (GPUs)"
    )
    group.add_argument(
        "--epoch-steps",
        type=int,
        default=TrainingOptions.epoch_steps,
        help="training steps between validations and input-stall reports (default: %(default)s)",
    )
    group.add_argument(
        "--steps-per-call",
        type=int,
        help="steps run in each call into TensorFlow, paying the host's per-call cost once "
        "for them all (default: an epoch's steps, --epoch-steps)",
    )
    group.add_argument(
        "--data-service",
        metavar="HOST:PORT",
        help="tf.data service dispatcher whose workers read, parse and decode the training "
        "input (python -m tfrecord_pipelines.cli.data_service; k8s/components/data-service)",
    )


def _add_ingest_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("shards and ExampleGen's engine")
    add_sharding_arguments(group)
    group.add_argument(
        "--compression",
        type=compression_argument,
        help="of the shards: gzip (fast deflate), gzip:LEVEL (zlib, 1 fastest - 9 smallest) "
        "or none "
        "(default: gzip for tabular data, none for images)",
    )
    group.add_argument(
        "--example-gen-engine",
        choices=("beam", "spark"),
        default="beam",
        help="ShardedExampleGen's engine: beam (default: the --beam-arg runner) or spark "
        "(needs Java 17; see --spark-master, --spark-conf)",
    )
    group.add_argument(
        "--spark-master",
        help="with --example-gen-engine spark: local[N], local-cluster[N,CORES,MB], "
        "spark://HOST:PORT or k8s://https://HOST:PORT (default: local[*])",
    )
    group.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --example-gen-engine spark: a session setting, e.g. "
        "spark.executor.memory=4g (repeatable)",
    )
    group.add_argument(
        "--encoding",
        default="utf-8",
        help="CSV: the files' text encoding, e.g. latin-1 or cp1252 (default: utf-8); "
        "rows that do not decode are quarantined",
    )


def _add_image_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("images")
    group.add_argument(
        "--image-size",
        type=int,
        help="model input side in pixels (default: the median side of the training images, "
        "within 32-224)",
    )
    group.add_argument(
        "--image-channels", type=int, choices=(1, 3), help="3: RGB (default), 1: grayscale"
    )
    group.add_argument(
        "--augment",
        metavar="crop,flip|none",
        help="training augmentations: crop (random shifts and zooms), flip (left-right; not "
        "for text or digits) (default: crop)",
    )
    group.add_argument(
        "--image-model",
        choices=("resnet", "mobilenet_v2", "efficientnet_b0"),
        help="convolutional network, trained from scratch (default: resnet, a small one)",
    )


def add_no_cache_argument(parser: argparse.ArgumentParser) -> None:
    """Adds --no-cache: run every component even where an earlier execution could be reused."""
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="run every step again; by default a step whose inputs, parameters and code are "
        "unchanged reuses its earlier outputs",
    )


def dataset_name(data: str) -> str:
    """The pipeline name ``--data`` gives, lower-case, dashes: a folder's base name; a file's
    name without its extensions (``iris`` for ``iris.csv.gz``); a glob's folder
    (``exports`` for ``exports/*.csv``); for data in spans, the folder above the span
    folders (``events`` for ``events/day-{SPAN}/``). Read from the text alone."""
    import glob

    from tfrecord_pipelines.components.data_source import files
    from tfrecord_pipelines.components.spans import split_data_path

    if "://" not in data:
        data = os.path.abspath(data)
    pattern = split_data_path(data)
    if pattern:
        data = pattern.base
    parts = data.rstrip("/").split("/")
    magic = next((i for i, part in enumerate(parts) if glob.has_magic(part)), None)
    name = parts[magic - 1] if magic else parts[-1]
    if magic is None and files.kind_of(name) in (files.CSV, files.PARQUET):
        name = name.split(".")[0] or name
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")


def _resolve_schema(args: argparse.Namespace, dataset: str) -> str | None:
    if args.infer_schema:
        return None
    if args.schema:
        return os.path.abspath(args.schema) if "://" not in args.schema else args.schema
    curated = SCHEMAS_DIR / dataset / "schema.pbtxt"
    return str(curated) if curated.is_file() else None


def _source(args: argparse.Namespace):
    """The data source; for data in spans, checked on the span asked for (or the latest)."""
    import dataclasses

    from tfrecord_pipelines.components import data_source, spans

    data_root = args.data or str(DEFAULT_DATA)
    if "://" not in data_root:
        data_root = os.path.abspath(data_root)
    pattern = spans.split_data_path(data_root)
    # Before anything reads the data: a span asked of data in no spans is a mistake.
    spans.check_span_settings(data_root, pattern, span=args.span, window=args.window)
    dialect = {"delimiter": args.delimiter, "encoding": args.encoding}
    if pattern is None:
        source = data_source.open_source(data_root, args.format, **dialect)
    else:
        span = pattern.find(spans.parse_span(args.span))
        source = data_source.open_source(span.path, args.format, **dialect)
        source = dataclasses.replace(source, spans=pattern)
    if args.data and not args.label and not source.is_images:
        raise UsageError("--label is required with --data: name the column to predict.")
    return source


def _task(args: argparse.Namespace, source):
    from tfrecord_pipelines.components import data_source
    from tfrecord_pipelines.components.data_source import image_folder
    from tfrecord_pipelines.components.task import Task

    inputs = tuple(f.strip() for f in args.inputs.split(",") if f.strip()) if args.inputs else None
    if not source.is_images:
        label = args.label or DEFAULT_LABEL
        columns = data_source.tabular_columns(source)
        data_source.check_label(source, label, columns)
        unknown = [f for f in inputs or () if f not in columns]
        if unknown:
            raise UsageError(
                f"--inputs {', '.join(unknown)}: not a column of {source.root}; "
                f"columns are: {', '.join(columns)}."
            )
        return Task(
            label=label,
            problem=args.problem,
            inputs=inputs,
            multi_valued=tuple(name for name, is_list in columns.items() if is_list),
        )
    if args.problem != CLASSIFICATION:
        raise UsageError("Image data trains a classifier: --problem must be classification.")
    # The class by name: what a folder or labels.csv names, and what every record holds.
    label = image_folder.CLASS_NAME_KEY
    if args.label not in (None, label):
        raise UsageError(
            f"--label {args.label}: an image folder's label is its class, named by its "
            f"folder or {image_folder.LABELS_FILE} (the records' {label}); leave --label out."
        )
    data_source.check_label(source, label)
    copies = {label, image_folder.DEFAULT_LABEL_KEY, image_folder.FILENAME_KEY}
    leaks = copies & set(inputs or ())
    if leaks:
        raise UsageError(
            f"--inputs {', '.join(sorted(leaks))}: the class name is the label, its id "
            f"({image_folder.DEFAULT_LABEL_KEY}) the same class by number and the file name "
            "describes the file; none may feed the model."
        )
    if inputs and image_folder.IMAGE_KEY not in inputs:
        inputs = (image_folder.IMAGE_KEY, *inputs)
    return Task(
        label=label, problem=args.problem, image_feature=image_folder.IMAGE_KEY, inputs=inputs
    )


def _module_file(args: argparse.Namespace):
    """The --module-file, imported, or None."""
    if not args.module_file:
        return None
    from tfrecord_pipelines.definition.module_file import load_module_file

    path = args.module_file
    return load_module_file(path if "://" in path else os.path.abspath(path))


def _image_settings(args: argparse.Namespace, is_images: bool) -> dict:
    """The TrainingOptions fields the image options set."""
    given = {
        "--image-size": args.image_size,
        "--image-channels": args.image_channels,
        "--augment": args.augment,
        "--image-model": args.image_model,
    }
    if not is_images:
        used = [name for name, value in given.items() if value is not None]
        if used:
            raise UsageError(f"{', '.join(used)}: only for image data.")
        return {}
    settings = {}
    if args.image_size is not None:
        settings["image_size"] = args.image_size
    if args.image_channels is not None:
        settings["image_channels"] = args.image_channels
    if args.image_model is not None:
        settings["image_model"] = args.image_model
    if args.augment is not None:
        names = [a.strip() for a in args.augment.split(",") if a.strip()]
        settings["image_augment"] = () if names == [_NO_AUGMENTATION] else tuple(names)
    return settings


def config_from_args(args: argparse.Namespace, serving_dir: str | None = None):
    """Validates the task arguments and returns a PipelineConfig; what ``--data`` names is
    listed once in a bucket (``filesystem.one_listing``)."""
    from tfrecord_pipelines.components.storage import filesystem

    with filesystem.one_listing(args.data):
        return _config_from_args(args, serving_dir)


def _config_from_args(args: argparse.Namespace, serving_dir: str | None):
    from tfrecord_pipelines.components import spans
    from tfrecord_pipelines.components.example_gen.spark.session import parse_conf
    from tfrecord_pipelines.components.trainer.options import CACHE_MODES
    from tfrecord_pipelines.definition.config import DriftOptions, IngestOptions, PipelineConfig
    from tfrecord_pipelines.definition.schema_file import check_schema

    sharding_from_args(args)  # a size and a count together: a usage error, before any build
    source = _source(args)
    task = _task(args, source)
    training = TrainingOptions(
        batch_size=args.batch_size,
        cache=args.cache if args.cache in CACHE_MODES else os.path.abspath(args.cache),
        mixed_precision=args.mixed_precision,
        epochs=args.epochs,
        epoch_steps=args.epoch_steps,
        steps_per_call=args.steps_per_call,
        data_service=args.data_service,
        **_image_settings(args, source.is_images),
    )
    dataset = dataset_name(args.data or str(DEFAULT_DATA))
    thresholds = thresholds_from_args(args, task)
    slice_by = slice_features(args, source)
    module_file = _module_file(args)
    schema_path = _resolve_schema(args, dataset)
    schema = (
        check_schema(schema_path, task.label, task.inputs or (), slice_by) if schema_path else None
    )
    evaluation = evaluation_options(args, source, task, slice_by, schema, module_file)
    name = args.name or dataset
    return PipelineConfig(
        name=name,
        source=source,
        task=task,
        serving_dir=serving_dir or f"/pipeline/serving_model/{name}",
        schema_path=schema_path,
        train_steps=args.train_steps,
        eval_steps=args.eval_steps,
        thresholds=thresholds,
        evaluation=evaluation,
        training=training,
        # What the user set: IngestOptions.sharding() resolves the defaults as `sharding` did.
        ingest=IngestOptions(
            num_readers=args.readers,
            target_shard_bytes=args.shard_size,
            num_shards=args.num_shards,
            compression=args.compression,
            encoding=args.encoding,
            engine=args.example_gen_engine,
            spark_master=args.spark_master,
            spark_conf=tuple(parse_conf(args.spark_conf).items()),
        ),
        module_file=module_file,
        # None: the latest (also what `--span latest` asks for).
        span=spans.parse_span(args.span),
        window=args.window,
        drift=DriftOptions(
            max_js=args.max_drift_js, max_linf=args.max_drift_linf, on_drift=args.on_drift
        ),
        warm_start=args.warm_start,
    )


def check_java_for_spark() -> None:
    """Raises UsageError naming the package to install if Spark would find no Java runtime."""
    from tfrecord_pipelines.components.example_gen.spark.session import check_java

    try:
        check_java()
    except RuntimeError as e:
        raise UsageError(str(e)) from None


def check_writable(folder: str) -> None:
    """Raises UsageError unless files can be written in ``folder`` (made if missing)."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"Output folder {folder} is a file; pass a folder.")
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, ".write-probe")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise UsageError(f"Output folder {folder} is not writable: {e.strerror}.") from e
