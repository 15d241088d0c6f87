"""``report``: one HTML page of a local run, from its ML Metadata store and artifacts."""

from __future__ import annotations

import argparse
import os

from tfrecord_pipelines.cli.usage import UsageError
from tfrecord_pipelines.local.layout import LocalLayout

LATEST = "latest"
_RUNS_LISTED = 5


def add_parser(commands) -> None:
    """Adds the report sub-command to the CLI's sub-parsers."""
    report = commands.add_parser(
        "report", help="write one self-contained HTML page about a run (default: the latest)"
    )
    report.add_argument(
        "--output",
        default="output",
        help="the runs' output folder, as given to run (default: ./output)",
    )
    report.add_argument("--name", help="pipeline name (default: the only pipeline under --output)")
    report.add_argument(
        "--run",
        default=LATEST,
        metavar="latest|ID",
        help="run id as run printed it (default: latest)",
    )
    report.add_argument("--verbose", action="store_true", help="show all library logs")


def _pipeline_name(output: str, name: str | None) -> str:
    metadata = os.path.join(output, "metadata")
    names = sorted(os.listdir(metadata)) if os.path.isdir(metadata) else []
    if not names:
        raise UsageError(
            f"No pipeline runs under {output}: run `python -m tfrecord_pipelines run` first."
        )
    if name is None:
        if len(names) > 1:
            raise UsageError(
                f"{output} holds several pipelines; pick one with --name: {', '.join(names)}."
            )
        return names[0]
    if name not in names:
        raise UsageError(f"No pipeline {name!r} under {output}; it holds: {', '.join(names)}.")
    return name


def _run_id(store, requested: str) -> str:
    from tfrecord_pipelines.local.run_record import PIPELINE_RUN_CONTEXT

    runs = sorted(
        store.get_contexts_by_type(PIPELINE_RUN_CONTEXT), key=lambda c: c.create_time_since_epoch
    )
    if not runs:
        raise UsageError("Its metadata store holds no run.")
    if requested == LATEST:
        return runs[-1].name
    if requested not in {c.name for c in runs}:
        latest = ", ".join(c.name for c in runs[-_RUNS_LISTED:])
        raise UsageError(f"No run {requested!r}; the latest are: {latest}.")
    return requested


def write_run_report(layout: LocalLayout, run_id: str, store=None) -> str:
    """Writes the report of run ``run_id`` under ``<output>/reports/``; returns its path."""
    from tfrecord_pipelines.local.run_record import open_store
    from tfrecord_pipelines.report.render import report_path, write_report
    from tfrecord_pipelines.report.run_report import build_run_report

    store = store or open_store(layout.metadata_path)
    report = build_run_report(store, layout.name, run_id)
    return write_report(report, report_path(layout.output_dir, layout.name, run_id))


def run_report(args: argparse.Namespace) -> None:
    """Finds the run, writes its report and prints the path."""
    output = os.path.abspath(args.output)
    layout = LocalLayout(output_dir=output, name=_pipeline_name(output, args.name))
    if not os.path.isfile(layout.metadata_path):
        raise UsageError(f"No metadata store at {layout.metadata_path}.")
    from tfrecord_pipelines.local.run_record import open_store

    store = open_store(layout.metadata_path)
    run_id = _run_id(store, args.run)
    print(f"Writing the report of {layout.name!r} run {run_id} ...", flush=True)
    print(f"Report: {write_run_report(layout, run_id, store)}")
