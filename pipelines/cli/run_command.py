"""``run``: the whole pipeline on this machine (LocalDagRunner), and its summary."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

from tfrecord_pipelines.cli import report_command
from tfrecord_pipelines.cli.task_arguments import (
    DEFAULT_DATA,
    add_no_cache_argument,
    add_task_arguments,
    check_java_for_spark,
    check_writable,
    config_from_args,
    dataset_name,
)
from tfrecord_pipelines.cli.usage import UsageError
from tfrecord_pipelines.local.disk_space import (
    check_disk_full,
    estimated_run_bytes,
    human,
    tree_bytes,
)


def add_parser(commands) -> None:
    """Adds the run command to the CLI's sub-parsers."""
    run = commands.add_parser("run", help="run the pipeline on this machine (LocalDagRunner)")
    add_task_arguments(run)
    run.add_argument(
        "--output", default="output", help="folder for all outputs (default: ./output)"
    )
    add_no_cache_argument(run)
    run.add_argument(
        "--beam-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="Beam pipeline option, repeatable, e.g. --beam-arg=--direct_num_workers=2",
    )


def _print_recovery(recovery) -> None:
    for found in recovery.interrupted:
        print(
            f"An earlier run was interrupted during {found.node_id} (execution "
            f"{found.execution_id}): marked canceled, {len(found.removed)} partial output "
            "folder(s) removed; what it finished is reused.",
            flush=True,
        )
    for path in recovery.published:
        print(f"Published a push that an interrupted run had recorded: {path}", flush=True)
    for path in recovery.discarded:
        print(f"Discarded a staged model whose push was never recorded: {path}", flush=True)


def _write_report(layout, run_id: str) -> str | None:
    """Writes the run's HTML report; a report that fails is a warning, not a failed run."""
    try:
        return report_command.write_run_report(layout, run_id)
    except LookupError:
        return None  # the run failed before it recorded anything: nothing to show
    except Exception as e:  # noqa: BLE001 - the run's outputs stand without their report
        print(
            f"warning: the run's report could not be written: {type(e).__name__}: {e} "
            f"(python -m tfrecord_pipelines report --output {layout.output_dir} "
            f"--name {layout.name} --run {run_id} --verbose tries again)",
            file=sys.stderr,
            flush=True,
        )
        return None


def _space_needed(config) -> int | None:
    """About the bytes a first run on the config's data writes; None for remote data."""
    from tfrecord_pipelines.components.storage import filesystem

    source = config.source
    if filesystem.is_remote(source.root):
        return None
    return estimated_run_bytes(
        tree_bytes(source.root),
        config.ingest.compression_for(source),
        tabular=not source.is_images,
    )


def _check_data_service(address: str) -> None:
    """Fails in seconds, before any component runs, if the service cannot feed the Trainer."""
    from tfrecord_pipelines.components.trainer.data_service import (
        DataService,
        DataServiceError,
        wait_for_workers,
    )

    service = DataService(address)
    try:
        workers = wait_for_workers(service, wait_s=0)
    except DataServiceError as e:
        raise UsageError(str(e)) from None
    print(
        f"Trainer input: tf.data service at {service.address}, {len(workers)} worker(s)",
        flush=True,
    )


def run_run(args: argparse.Namespace) -> None:
    """Runs the pipeline locally and prints where everything landed."""
    from tfrecord_pipelines.local.layout import LocalLayout
    from tfrecord_pipelines.local.output_lock import output_lock

    output = os.path.abspath(args.output)
    check_writable(output)
    name = args.name or dataset_name(args.data or str(DEFAULT_DATA))
    layout = LocalLayout(output_dir=output, name=name)
    config = config_from_args(args, serving_dir=layout.serving_dir)
    if config.training.data_service:
        _check_data_service(config.training.data_service)
    if config.ingest.engine == "spark":
        check_java_for_spark()
    with output_lock(output):
        source = config.source
        needed = _space_needed(config)
        free = shutil.disk_usage(output).free
        if needed and free < needed:
            print(
                f"warning: {human(free)} free on the disk of {output}; a run on this data "
                f"needs about {human(needed)}",
                file=sys.stderr,
                flush=True,
            )
        where = source.root
        if source.spans:
            span = "the latest" if config.span is None else source.spans.describe(config.span)
            where = f"{source.spans.base}/{source.spans.folder}, span {span}"
        print(
            f"Running pipeline {config.name!r} on {where} ({source.format}, label "
            f"{config.task.label!r}, {config.task.problem}); schema: "
            f"{config.schema_path or 'inferred by SchemaGen'}; "
            f"{'no cache' if args.no_cache else 'reusing unchanged steps'}",
            flush=True,
        )
        if config.module_file:
            print(
                f"Module file {config.module_file.path}: its "
                f"{' and '.join(config.module_file.functions)} replace(s) the built-in one(s)",
                flush=True,
            )
        from tfrecord_pipelines.local.run_record import open_store
        from tfrecord_pipelines.local.runner import new_run_id, run_locally
        from tfrecord_pipelines.report.run_summary import summarize_run
        from tfrecord_pipelines.report.summary_text import print_summary, print_window_plan

        started = time.monotonic()
        run_id = new_run_id()
        try:
            run_locally(
                config,
                layout,
                args.beam_arg,
                enable_cache=not args.no_cache,
                on_recovery=_print_recovery,
                on_window=lambda plan: print_window_plan(plan, source.spans),
                run_id=run_id,
            )
        except Exception as e:
            check_disk_full(e, output, needed)
            # What ran, what failed and what it produced so far, on one page.
            report = _write_report(layout, run_id)
            if report:
                print(f"Report of the failed run: {report}", file=sys.stderr, flush=True)
            raise
        summary = summarize_run(open_store(layout.metadata_path), config.name, run_id)
        seconds = time.monotonic() - started
        report = _write_report(layout, run_id)
        print_summary(summary, layout, config, run_id, seconds, report)
