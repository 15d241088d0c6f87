"""The run summary as ``run`` prints it: where everything landed, what the model saw and what
each step cost, in lines a person reads (``run_summary`` reads what they say)."""

from __future__ import annotations

from tfrecord_pipelines.report.verdicts import coverage_text, not_pushed_reasons, warm_started


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
    """The window's spans and rows, and whether Transform analyzed each, took it from its
    cache or from ExampleGen's statistics."""
    spans = [s.span for s in window.spans]
    line = f"{len(spans)} span(s) ({_spans_text(spans)}), {window.rows('train'):,} train rows; "
    if window.from_statistics:
        return f"{line}Transform's analysis from their statistics, no record read"
    return (
        f"{line}Transform analyzed {_spans_text(list(window.analyzed))}, its analyzer "
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


def print_window_plan(plan, pattern) -> None:
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


def print_summary(summary, layout, config, run_id: str, seconds: float, report: str | None) -> None:
    """Prints a finished run's summary (``RunSummary``) and where its outputs are.

    Args:
      summary: the run's RunSummary.
      layout: the run's LocalLayout (its pipeline root and metadata).
      config: the run's PipelineConfig.
      run_id: the run's id.
      seconds: the run's wall time.
      report: the HTML report's path, or None if it was not written.
    """
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
        reasons = not_pushed_reasons(summary.blessed, summary.blocked_by_drift)
        print(f"  pushed model:  none ({'; '.join(reasons)})")
    print(f"  metrics:       {metrics}")
    if summary.against_baseline:
        print(f"  baseline:      {summary.against_baseline.sentence()}")
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
        print(
            f"  input stall:   {100 * summary.input_stall:.1f}% of step time waiting for "
            f"batches in the last epoch ({summary.input_stall_verdict})"
        )
    if summary.host_stall is not None:
        calls = f", {summary.steps_per_call} steps a call" if summary.steps_per_call else ""
        print(
            f"  host stall:    {100 * summary.host_stall:.1f}% of step time waiting for the "
            f"host between calls{calls}"
        )
    if summary.training:
        warm = warm_started(summary.warm_start)
        print(f"  trained on:    {coverage_text(summary.training, warm)}")
    print(f"  TensorBoard:   tensorboard --logdir {summary.model_run}")
    print(f"  quarantined:   {summary.quarantined:,} input records ({summary.quarantine})")
    if summary.skipped_files[0]:
        from tfrecord_pipelines.components.data_source.image_folder import describe_skipped

        print(f"  skipped:       {describe_skipped(*summary.skipped_files)}")
    if summary.shards_adjusted:
        print(f"  shards:        {'; '.join(summary.shards_adjusted)}")
    if summary.costs:
        print("  cost:          " + "\n                 ".join(_cost_lines(summary.costs)))
    print(f"  artifacts:     {layout.pipeline_root}")
    print(f"  metadata:      {layout.metadata_path}")
    if report:
        print(f"  report:        {report}")
