"""The project's command line: ``python -m tfrecord_pipelines`` (or ``tfrecord-pipelines``)."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import time
import traceback
import warnings

from tfrecord_pipelines.cli import data_commands, kubeflow_commands, report_command
from tfrecord_pipelines.cli.task_arguments import (
    DEFAULT_DATA,
    UsageError,
    add_no_cache_argument,
    add_task_arguments,
    check_java_for_spark,
    check_writable,
    config_from_args,
    dataset_name,
)
from tfrecord_pipelines.local.disk_space import (
    DiskFull,
    check_disk_full,
    estimated_run_bytes,
    human,
    tree_bytes,
)
from tfrecord_pipelines.local.output_lock import OutputInUse


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command (also read by the docs site's CLI reference)."""
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_pipelines",
        description="Run the TFX pipeline locally or compile it for Kubeflow Pipelines v2.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

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


def _coverage(training, warm_started: bool = False) -> str:
    """Examples and epochs the model saw; a warning when part of the data never was."""
    text = (
        f"{training.examples:,} examples ({training.steps:,} steps of {training.batch_size}): "
        f"{training.epochs:.2f} epochs of the {training.train_records:,}-example train split"
    )
    if training.epochs < 1 and warm_started:
        text += ", warm-started from a model of the earlier spans"
    elif training.epochs < 1:
        text += (
            f"; WARNING: {100 * (1 - training.epochs):.0f}% of it was never seen "
            "(train longer: --epochs or more --train-steps)"
        )
    return text


def _cost_lines(costs) -> list[str]:
    """A small table: each component's wall and CPU seconds and records per second."""
    width = max(len(c.node_id) for c in costs)
    lines = [f"{'component':<{width}}  wall s   CPU s   records/s"]
    for cost in costs:
        rate = cost.records_per_second
        rate_text = f"{rate:>11,.0f}  {cost.records_meaning}" if rate else ""
        times = f"{cost.wall_seconds:6.1f}  {cost.cpu_seconds:6.1f}"
        lines.append(f"{cost.node_id:<{width}}  {times} {rate_text}".rstrip())
    total_wall = sum(c.wall_seconds for c in costs)
    total_cpu = sum(c.cpu_seconds for c in costs)
    lines.append(f"{'all':<{width}}  {total_wall:6.1f}  {total_cpu:6.1f}")
    return lines


_POSITIVE_CLASS_METRICS = ("auc", "precision", "recall")


def _headline_metrics(metrics: dict[str, float], intervals: dict, classes=None) -> str:
    """The overall metrics (per-class ones are in the report), each with its 95% interval,
    and the eval rows behind them. Of two classes, the positive class's AUC, precision and
    recall, named by its value, instead of macro averages."""
    from tfrecord_pipelines.components.evaluator.metric_values import is_shown_metric

    positive = classes.positive_id if classes else None
    headline = {f"{m} (class {positive})" for m in _POSITIVE_CLASS_METRICS}
    shown = []
    for name, value in sorted(metrics.items()):
        if positive is not None:
            if name not in headline and ("(class " in name or "(macro)" in name):
                continue
        elif "(class " in name:
            continue
        if not is_shown_metric(name):
            continue
        text = f"{classes.display(name) if classes else name}={value:.4g}"
        if name in intervals:
            (low, high), _ = intervals[name]
            text += f" [{low:.4g}, {high:.4g}]"
        shown.append(text)
    rows = metrics.get("example_count")
    ending = f" on {int(rows):,} eval rows ([95% interval])" if rows is not None else ""
    return ", ".join(shown) + ending


# Class names listed in the summary; the report lists them all.
_CLASSES_NAMED = 10


def _classes_line(classes) -> str:
    """The classes the model tells apart, by name, and the positive one of two."""
    names = ", ".join(sorted(classes.names)[:_CLASSES_NAMED])
    more = len(classes.names) - _CLASSES_NAMED
    text = f"{len(classes.names)}: {names}" + (f" and {more:,} more" if more > 0 else "")
    return text + (f" (positive: {classes.positive})" if classes.positive else "")


def _span_line(summary, source) -> str:
    """The span a run on data in spans converted, as a person reads it."""
    span, version, pattern = summary.span
    text = source.spans.describe(span)
    if version is not None:
        text += f", version {version}"
    return f"{text} ({source.input_base}/{pattern})" if pattern else text


def _spans_text(spans) -> str:
    """Span numbers as ranges: ``1-3, 7``."""
    if not spans:
        return "none"
    runs, start = [], spans[0]
    for previous, span in zip(spans, [*spans[1:], None], strict=True):
        if span != previous + 1:
            runs.append(str(start) if start == previous else f"{start}-{previous}")
            start = span
    return ", ".join(runs)


def _window_line(window) -> str:
    """The window's spans and rows, and what Transform analyzed or took from its cache."""
    spans = [s.span for s in window.spans]
    return (
        f"{len(spans)} span(s) ({_spans_text(spans)}), {window.rows('train'):,} train "
        f"rows; Transform analyzed {_spans_text(list(window.analyzed))}, its analyzer "
        f"cache served {_spans_text(list(window.from_cache))}"
    )


def _drift_line(previous_span: int, report: dict[str, dict]) -> str:
    """The features that drifted from the previous span, with their measures."""
    drifted = {name: r for name, r in sorted(report.items()) if r["drifted"]}
    if not drifted:
        return f"none against span {previous_span} ({len(report)} features compared)"
    named = ", ".join(
        f"{name} ({r['measure']} {r['value']:.3g} > {r['threshold']:.3g})"
        for name, r in drifted.items()
    )
    return f"{len(drifted)} of {len(report)} features against span {previous_span}: {named}"


def _warm_start_line(report: dict) -> str:
    """Whether the Trainer started from the base model, why (not), and the steps it saved."""
    if not report["base_model"]:
        return f"no, {report['reason']}"
    if not report["warm_started"]:
        return f"no, {report['reason']} ({report['base_model']})"
    return (
        f"from {report['base_model']}: {report['reason']}; {report['steps']:,} of a fresh "
        f"start's {report['steps_from_scratch']:,} steps"
    )


def _print_window_plan(plan, pattern) -> None:
    """What a windowed run found before it starts: converted, to convert, missing."""
    window = f"{plan.end - len(plan.on_disk) - len(plan.missing) + 1}-{plan.end}"
    converting = [f.span for f in plan.to_convert]
    print(
        f"Window: spans {window}: {len(plan.converted)} converted by earlier runs, "
        f"{len(converting)} to convert first ({_spans_text(converting)}), then span "
        f"{pattern.describe(plan.end)} in the run; not on disk: "
        f"{_spans_text(list(plan.missing))}",
        flush=True,
    )


def _print_summary(
    summary, layout, config, run_id: str, seconds: float, report: str | None
) -> None:
    name = config.name
    metrics = _headline_metrics(summary.metrics, summary.intervals, summary.classes)
    print(f"\nPipeline {name!r} finished in {seconds:.{1 if seconds < 10 else 0}f} s.")
    print(f"  run id:        {run_id}")
    if config.source.spans:
        print(f"  span:          {_span_line(summary, config.source)}")
    if summary.window:
        print(f"  window:        {_window_line(summary.window)}")
    if summary.drift:
        print(f"  drift:         {_drift_line(*summary.drift)}")
    print(f"  ran:           {', '.join(summary.executed) or 'nothing (all reused)'}")
    print(f"  reused:        {', '.join(summary.reused) or 'nothing'}")
    if summary.pushed_model:
        earlier = " (pushed by an earlier run; its Pusher was reused)"
        print(f"  pushed model:  {summary.pushed_model}{earlier if summary.pushed_earlier else ''}")
    else:
        reasons = [] if summary.blessed else ["the Evaluator did not bless the model"]
        if summary.blocked_by_drift:
            reasons.append(
                f"this span drifted from the previous one: {summary.blocked_by_drift}; "
                "--on-drift warn pushes anyway"
            )
        print(f"  pushed model:  none ({'; '.join(reasons)})")
    print(f"  metrics:       {metrics}")
    if summary.classes:
        print(f"  classes:       {_classes_line(summary.classes)}")
    print(f"  evaluation:    {summary.evaluation}")
    print(f"  trained model: {summary.model}")
    if config.source.spans and not config.warm_start:
        print("  warm start:    off (--no-warm-start): trained from scratch")
    elif config.source.spans and summary.warm_start:
        print(f"  warm start:    {_warm_start_line(summary.warm_start)}")
    if summary.resumed_steps:
        print(
            f"  resumed:       training went on from step {summary.resumed_steps:,}, backed up "
            "by an interrupted execution"
        )
    if summary.input_stall is not None:
        from tfrecord_pipelines.components.trainer.input_stall import verdict

        print(
            f"  input stall:   {100 * summary.input_stall:.1f}% of step time waiting for "
            f"batches in the last epoch ({verdict(summary.input_stall)})"
        )
    if summary.training:
        warm = bool(summary.warm_start and summary.warm_start["warm_started"])
        print(f"  trained on:    {_coverage(summary.training, warm)}")
    print(f"  TensorBoard:   tensorboard --logdir {summary.model_run}")
    print(f"  quarantined:   {summary.quarantined:,} input records ({summary.quarantine})")
    if summary.skipped_files[0]:
        from tfrecord_pipelines.components.image_folder import describe_skipped

        print(f"  skipped:       {describe_skipped(*summary.skipped_files)}")
    if summary.shards_adjusted:
        print(f"  shards:        {'; '.join(summary.shards_adjusted)}")
    if summary.costs:
        print("  cost:          " + "\n                 ".join(_cost_lines(summary.costs)))
    print(f"  artifacts:     {layout.pipeline_root}")
    print(f"  metadata:      {layout.metadata_path}")
    if report:
        print(f"  report:        {report}")


def _space_needed(config) -> int | None:
    """About the bytes a first run on the config's data writes; None for remote data."""
    from tfrecord_pipelines.components import filesystem

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


def _run(args: argparse.Namespace) -> None:
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

        started = time.monotonic()
        run_id = new_run_id()
        try:
            run_locally(
                config,
                layout,
                args.beam_arg,
                enable_cache=not args.no_cache,
                on_recovery=_print_recovery,
                on_window=lambda plan: _print_window_plan(plan, source.spans),
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
        _print_summary(summary, layout, config, run_id, seconds, report)


def main(argv: list[str] | None = None) -> int:
    """Runs the CLI; returns the exit status."""
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    _configure_logging(args.verbose)
    try:
        {
            "run": _run,
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
