"""Arguments shared by the run, compile and submit commands, and the PipelineConfig they make."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = _REPO_ROOT / "data" / "penguins"
DEFAULT_LABEL = "species"
SCHEMAS_DIR = _REPO_ROOT / "schemas"


class UsageError(Exception):
    """A bad command-line argument; printed as one line, exit status 2."""


def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the data, schema, training and evaluation options."""
    parser.add_argument(
        "--data",
        help=f"folder of CSV files with a header row (default: the bundled {DEFAULT_DATA.name})",
    )
    parser.add_argument(
        "--label", help=f"column to predict (required with --data; default: {DEFAULT_LABEL})"
    )
    parser.add_argument(
        "--problem", choices=("classification", "regression"), default="classification"
    )
    parser.add_argument("--name", help="pipeline name (default: the data folder's name)")
    schema = parser.add_mutually_exclusive_group()
    schema.add_argument(
        "--schema",
        help="curated schema.pbtxt (default: schemas/<data folder name>/schema.pbtxt if present)",
    )
    schema.add_argument(
        "--infer-schema", action="store_true", help="infer the schema even if a curated one exists"
    )
    parser.add_argument("--train-steps", type=int, default=1000)
    parser.add_argument("--eval-steps", type=int, default=20)
    parser.add_argument(
        "--min-accuracy", type=float, default=0.6, help="classification: accuracy that blesses"
    )
    parser.add_argument(
        "--max-mae", type=float, help="regression: mean absolute error that blesses"
    )
    parser.add_argument(
        "--batch-size", type=int, default=64, help="Trainer's global batch (default: 64)"
    )
    parser.add_argument(
        "--cache",
        default="auto",
        metavar="auto|none|memory|FOLDER",
        help="cache the parsed train split: auto (in memory when small), none, memory, or a "
        "local folder for a file cache (default: auto)",
    )
    parser.add_argument(
        "--mixed-precision", action="store_true", help="train in mixed_float16 (GPUs)"
    )
    parser.add_argument("--verbose", action="store_true", help="show all library logs")


def dataset_name(data_root: str) -> str:
    """The pipeline name a data folder gives: its base name, lower-case, dashes."""
    return re.sub(r"[^a-z0-9-]+", "-", os.path.basename(data_root.rstrip("/")).lower()).strip("-")


def _resolve_schema(args: argparse.Namespace, dataset: str) -> str | None:
    if args.infer_schema:
        return None
    if args.schema:
        return os.path.abspath(args.schema) if "://" not in args.schema else args.schema
    curated = SCHEMAS_DIR / dataset / "schema.pbtxt"
    return str(curated) if curated.is_file() else None


def config_from_args(args: argparse.Namespace, serving_dir: str | None = None):
    """Validates the task arguments and returns a PipelineConfig."""
    from components.task import Task
    from components.trainer.options import CACHE_MODES, TrainingOptions
    from pipelines import csv_source
    from pipelines.config import EvaluationThresholds, PipelineConfig

    if args.data and not args.label:
        raise UsageError("--label is required with --data: name the column to predict.")
    data_root = args.data or str(DEFAULT_DATA)
    if "://" not in data_root:
        data_root = os.path.abspath(data_root)
    label = args.label or DEFAULT_LABEL
    csv_source.check_label(data_root, label)
    dataset = dataset_name(data_root)
    schema_path = _resolve_schema(args, dataset)
    if schema_path:
        csv_source.check_schema(schema_path, label)
    name = args.name or dataset
    return PipelineConfig(
        name=name,
        data_root=data_root,
        task=Task(label=label, problem=args.problem),
        serving_dir=serving_dir or f"/pipeline/serving_model/{name}",
        schema_path=schema_path,
        train_steps=args.train_steps,
        eval_steps=args.eval_steps,
        thresholds=EvaluationThresholds(
            min_accuracy=args.min_accuracy, max_mean_absolute_error=args.max_mae
        ),
        training=TrainingOptions(
            batch_size=args.batch_size,
            cache=args.cache if args.cache in CACHE_MODES else os.path.abspath(args.cache),
            mixed_precision=args.mixed_precision,
        ),
    )


def check_writable(folder: str) -> None:
    """Raises UsageError unless files can be written in ``folder`` (made if missing)."""
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, ".write-probe")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise UsageError(f"Output folder {folder} is not writable: {e.strerror}.") from e
