"""The project's command line: ``python -m tfrecord_pipelines`` (or ``tfrecord-pipelines``)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
import warnings

from tfrecord_pipelines.cli import data_commands, kubeflow_commands, report_command, run_command
from tfrecord_pipelines.cli.usage import UsageError
from tfrecord_pipelines.components import deferred_inits
from tfrecord_pipelines.components.storage import object_stores
from tfrecord_pipelines.local.disk_space import DiskFull
from tfrecord_pipelines.local.output_lock import OutputInUse


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command (also read by the docs site's CLI reference)."""
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_pipelines",
        description="Run the TFX pipeline locally or compile it for Kubeflow Pipelines v2.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run_command.add_parser(commands)
    kubeflow_commands.add_parsers(commands)
    data_commands.add_parsers(commands)
    report_command.add_parser(commands)
    # Last: a maintainer's and a KFP user's command, not one a run needs.
    kubeflow_commands.add_components_parser(commands)
    return parser


class _ComponentProgress(logging.Filter):
    """Lets through errors and LocalDagRunner's 'Component X is running/finished' lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        return record.pathname.endswith("local_dag_runner.py") and "Component" in str(record.msg)


# A warning issued outside the project's own modules: a dependency's notice about
# itself (google.api_core's Python 3.11 end of life, a deprecation inside TFX), which
# a user cannot act on. The project's own warnings are kept.
_NOT_THE_PROJECTS = r"(?!tfrecord_pipelines\.)"


def filter_warnings(verbose: bool) -> None:
    """Quiets the libraries' warnings (--verbose: all but their deprecation notices)."""
    # In the environment too, so that Beam's worker processes inherit it.
    quiet = "ignore::FutureWarning,ignore::DeprecationWarning" if verbose else "ignore"
    os.environ.setdefault("PYTHONWARNINGS", quiet)
    if not verbose:
        warnings.filterwarnings("ignore", module=_NOT_THE_PROJECTS)
        return
    for category in (FutureWarning, DeprecationWarning):
        warnings.filterwarnings("ignore", category=category, module=_NOT_THE_PROJECTS)


def _configure_logging(verbose: bool) -> None:
    # Set in the environment so that Beam's worker processes inherit them too.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1" if verbose else "3")
    filter_warnings(verbose)
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


def main(argv: list[str] | None = None) -> int:
    """Runs the CLI; returns the exit status."""
    # The command's own process (python -m tfrecord_pipelines, or the tfrecord-pipelines
    # script): the package inits of TFX's components, KFP and Kubernetes run only when used.
    deferred_inits.defer_package_inits()
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

    def body() -> int:
        _configure_logging(args.verbose)
        return _run(args)

    return object_stores.run_entry_point(argv, body)


def _run(args: argparse.Namespace) -> int:
    try:
        {
            "run": run_command.run_run,
            "compile": kubeflow_commands.run_compile,
            "submit": kubeflow_commands.run_submit,
            "components": kubeflow_commands.run_components,
            "convert": data_commands.run_convert,
            "inspect": data_commands.run_inspect,
            "report": report_command.run_report,
        }[args.command](args)
    except (UsageError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (OutputInUse, DiskFull) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
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
