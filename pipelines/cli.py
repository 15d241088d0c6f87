"""``python -m pipelines run|compile|convert|inspect``: the project's command line."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
import traceback
import warnings
from pathlib import Path

from pipelines import data_commands

_REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = _REPO_ROOT / "data" / "penguins"
DEFAULT_LABEL = "species"
SCHEMAS_DIR = _REPO_ROOT / "schemas"


class UsageError(Exception):
    """A bad command-line argument; printed as one line, exit status 2."""


def _add_task_arguments(parser: argparse.ArgumentParser) -> None:
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines",
        description="Run the TFX pipeline locally or compile it for Kubeflow Pipelines v2.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the pipeline on this machine (LocalDagRunner)")
    _add_task_arguments(run)
    run.add_argument(
        "--output", default="output", help="folder for all outputs (default: ./output)"
    )
    run.add_argument(
        "--beam-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="Beam pipeline option, repeatable, e.g. --beam-arg=--direct_num_workers=2",
    )

    compile_ = commands.add_parser("compile", help="write a Kubeflow Pipelines v2 YAML")
    _add_task_arguments(compile_)
    compile_.add_argument("--output", help="YAML file (default: output/kubeflow/<name>.yaml)")
    compile_.add_argument("--image", help="container image for the components")
    compile_.add_argument(
        "--gpus", type=int, default=1, help="GPUs the Trainer requests (default: 1; 0 for CPU)"
    )
    compile_.add_argument(
        "--gpu-resource",
        default="nvidia.com/gpu",
        help="Kubernetes resource name of the GPUs (default: nvidia.com/gpu)",
    )
    compile_.add_argument("--trainer-cpu", help="Trainer CPU limit, e.g. 8 or 7500m")
    compile_.add_argument("--trainer-memory", help="Trainer memory limit, e.g. 32Gi")
    compile_.add_argument(
        "--serving-dir",
        help="where pods push blessed models (default: /pipeline/serving_model/<name>)",
    )
    data_commands.add_parsers(commands)
    return parser


def _dataset_name(data_root: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", os.path.basename(data_root.rstrip("/")).lower()).strip("-")


def _resolve_schema(args: argparse.Namespace, dataset: str) -> str | None:
    if args.infer_schema:
        return None
    if args.schema:
        return os.path.abspath(args.schema) if "://" not in args.schema else args.schema
    curated = SCHEMAS_DIR / dataset / "schema.pbtxt"
    return str(curated) if curated.is_file() else None


def _config(args: argparse.Namespace, serving_dir: str | None = None):
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
    dataset = _dataset_name(data_root)
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


def _check_writable(folder: str) -> None:
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, ".write-probe")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise UsageError(f"Output folder {folder} is not writable: {e.strerror}.") from e


class _ComponentProgress(logging.Filter):
    """Lets through errors and LocalDagRunner's 'Component X is running/finished' lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        return record.pathname.endswith("local_dag_runner.py") and "Component" in str(record.msg)


def _configure_logging(verbose: bool) -> None:
    # Set in the environment so that Beam's worker processes inherit them too.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1" if verbose else "3")
    if not verbose:
        os.environ.setdefault("PYTHONWARNINGS", "ignore")
        warnings.simplefilter("ignore")
    from absl import logging as absl_logging

    absl_logging.set_verbosity(absl_logging.INFO)
    if verbose:
        return
    # TFX logs through absl's Python logger; keep only the progress lines, timed.
    absl_logger = logging.getLogger("absl")
    absl_logger.addFilter(_ComponentProgress())
    absl_logger.propagate = False
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
    absl_logger.addHandler(handler)
    # Failures reach the user as one line from main(); --verbose shows them whole.
    for noisy in ("apache_beam", "tensorflow"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)


def _run(args: argparse.Namespace) -> None:
    from pipelines.local_runner import LocalLayout, run_locally
    from pipelines.run_summary import summarize_run

    output = os.path.abspath(args.output)
    _check_writable(output)
    name = args.name or _dataset_name(args.data or str(DEFAULT_DATA))
    layout = LocalLayout(output_dir=output, name=name)
    config = _config(args, serving_dir=layout.serving_dir)
    print(
        f"Running pipeline {config.name!r} on {config.data_root} (label {config.task.label!r}, "
        f"{config.task.problem}); schema: {config.schema_path or 'inferred by SchemaGen'}",
        flush=True,
    )
    started = time.monotonic()
    run_locally(config, layout, args.beam_arg)
    summary = summarize_run(layout.metadata_path)
    metrics = ", ".join(f"{k}={v:.4g}" for k, v in sorted(summary.metrics.items()))
    print(f"\nPipeline {config.name!r} finished in {time.monotonic() - started:.0f} s.")
    if summary.pushed_model:
        print(f"  pushed model:  {summary.pushed_model}")
    else:
        print("  pushed model:  none (the Evaluator did not bless the model)")
    print(f"  metrics:       {metrics}")
    print(f"  evaluation:    {summary.evaluation}")
    print(f"  trained model: {summary.model}")
    if summary.input_stall is not None:
        from components.trainer.input_stall import verdict

        print(
            f"  input stall:   {100 * summary.input_stall:.1f}% of step time waiting for "
            f"batches in the last epoch ({verdict(summary.input_stall)})"
        )
    print(f"  TensorBoard:   tensorboard --logdir {summary.model_run}")
    print(f"  artifacts:     {layout.pipeline_root}")
    print(f"  metadata:      {layout.metadata_path}")


def _compile(args: argparse.Namespace) -> None:
    if args.output and not args.output.endswith((".yaml", ".yml")):
        raise UsageError(f"--output {args.output} must end in .yaml or .yml.")
    from pipelines.trainer_resources import TrainerResources

    config = _config(args, serving_dir=args.serving_dir)
    resources = TrainerResources(
        gpus=args.gpus,
        accelerator=args.gpu_resource,
        cpu=args.trainer_cpu,
        memory=args.trainer_memory,
    )
    from pipelines.kubeflow_runner import DEFAULT_IMAGE, compile_for_kubeflow

    output = args.output or os.path.join("output", "kubeflow", f"{config.name}.yaml")
    _check_writable(os.path.dirname(os.path.abspath(output)))
    compile_for_kubeflow(
        config, output, image=args.image or DEFAULT_IMAGE, trainer_resources=resources
    )
    print(f"Wrote Kubeflow Pipelines v2 spec for {config.name!r} to {os.path.abspath(output)}")


def main(argv: list[str] | None = None) -> int:
    """Runs the CLI; returns the exit status."""
    args = _parser().parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    _configure_logging(args.verbose)
    try:
        {
            "run": _run,
            "compile": _compile,
            "convert": data_commands.run_convert,
            "inspect": data_commands.run_inspect,
        }[args.command](args)
    except (UsageError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the user gets one line; --verbose shows the rest
        if args.verbose:
            traceback.print_exc()
        print(
            f"error: {args.command} failed: {type(e).__name__}: {e} (rerun with --verbose "
            "for the traceback)",
            file=sys.stderr,
        )
        return 1
    return 0
