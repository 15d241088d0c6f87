"""Daily runs over a rolling window of spans against a one-shot run over the same rows.

Writes ``--spans`` daily CSV spans of ``--rows`` rows (4 numbers, 2
categories, a yes/no label that depends on them); the last span alone
shifts ``amount`` (+0.5 sd) and ``channel`` (``web`` from 40% to 55% of
rows). Then, each run a process of its own, as a user would:

1. day N-1 with ``--window W``: a first run, which converts the window's
   earlier spans first (a backfill) and trains from scratch;
2. day N with ``--window W``: converts day N alone, takes Transform's
   analysis from the window's statistics (no record read), starts from day
   N-1's model;
3. day N again, ``--no-warm-start``: the same window trained from scratch
   (Transform and the rest reused), for the warm start's accuracy;
4. days N-1 and N with a window of ``--small-window`` spans, in an output of
   their own: whether a day's cost grows with its window;
5. one shot: the window's W spans' files in one folder, converted, analyzed
   and trained whole;
6. the floor: day N+1 with a window of ``--small-window`` spans, after 4, on a
   span of ``--floor-rows`` rows: what a day costs with next to no new data,
   the part of a day that does not grow with its span.

Prints each run's CPU (user + sys) and wall seconds, what day N read and
analyzed, the drift flagged on days N-1 and N, and every model's accuracy
on the same rows: the one-shot run's eval split. Not a test.

    .venv/bin/python benchmarks/daily_window.py --work output/bench-daily-window
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import shutil
import subprocess
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("PYTHONWARNINGS", "ignore")

NAME = "daily"
CHANNELS = ("web", "store", "phone", "partner")
CHANNEL_SHARES = (0.40, 0.30, 0.20, 0.10)
SHIFTED_CHANNEL_SHARES = (0.55, 0.20, 0.15, 0.10)
REGIONS = ("north", "south", "east", "west", "centre")


def _write_span(path: str, rows: int, seed: int, shifted: bool) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    amount = rng.normal(50.5 if shifted else 50.0, 1.0, rows)
    x1, x2, x3 = rng.normal(0, 1, (3, rows))
    shares = SHIFTED_CHANNEL_SHARES if shifted else CHANNEL_SHARES
    channel = rng.choice(CHANNELS, rows, p=shares)
    region = rng.choice(REGIONS, rows)
    score = (
        1.2 * x1
        - 0.8 * x2
        + 0.5 * (amount - 50.0)
        + np.where(channel == "web", 0.7, 0.0)
        + np.where(region == "north", -0.5, 0.0)
        + rng.logistic(0, 1, rows)
    )
    frame = pd.DataFrame(
        {
            "amount": amount.round(3),
            "x1": x1.round(4),
            "x2": x2.round(4),
            "x3": x3.round(4),
            "channel": channel,
            "region": region,
            "label": np.where(score > 0, "yes", "no"),
        }
    )
    os.makedirs(os.path.dirname(path), exist_ok=True)
    frame.to_csv(path, index=False)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(title: str, args: list[str], log_path: str) -> dict:
    """One CLI run in its own process: its wall and CPU seconds and its run id."""
    print(f"{title} ...", flush=True)
    command = [sys.executable, "-m", "tfrecord_pipelines", "run", "--label", "label", *args]
    started, cpu_started = time.monotonic(), _children_cpu()
    with open(log_path, "w") as log:
        process = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True)
    wall, cpu = time.monotonic() - started, _children_cpu() - cpu_started
    if process.returncode:
        raise SystemExit(f"{title} failed (exit {process.returncode}): {log_path}")
    with open(log_path.replace(".log", ".out"), "w") as f:
        f.write(process.stdout)
    run_id = next(
        line.split()[-1]
        for line in process.stdout.splitlines()
        if line.strip().startswith("run id:")
    )
    print(f"  {wall:,.0f} s wall, {cpu:,.0f} s CPU", flush=True)
    return {"wall": wall, "cpu": cpu, "run_id": run_id}


def _summary(output: str, run_id: str):
    from tfrecord_pipelines.local.layout import LocalLayout
    from tfrecord_pipelines.local.run_record import open_store
    from tfrecord_pipelines.report.run_summary import summarize_run

    store = open_store(LocalLayout(output, NAME).metadata_path)
    return summarize_run(store, NAME, run_id)


def _accuracy(model_dir: str, eval_files: list[str]) -> tuple[float, int]:
    """A trained model's accuracy on the given examples: its serving signature's class
    against its own transform signature's label index."""
    import numpy as np
    import tensorflow as tf

    from tfrecord_pipelines.components.trainer.signatures import SCORES_OUTPUT

    loaded = tf.saved_model.load(os.path.join(model_dir, "Format-Serving"))
    serve = loaded.signatures["serving_default"]
    transform = loaded.signatures["transform_features"]
    compression = "GZIP" if eval_files[0].endswith(".gz") else ""
    right = total = 0
    for batch in tf.data.TFRecordDataset(eval_files, compression_type=compression).batch(8192):
        probabilities = serve(examples=batch)[SCORES_OUTPUT]
        label = transform(examples=batch)["label_xf"].numpy().reshape(-1)
        right += int(np.sum(np.argmax(probabilities.numpy(), axis=1) == label))
        total += len(label)
    return right / total, total


def _drifted(summary) -> str:
    if not summary.drift:
        return "no previous span"
    _, report = summary.drift
    return ", ".join(sorted(n for n, r in report.items() if r["drifted"])) or "none"


def _daily_args(data: str, window: int, output: str) -> list[str]:
    """The daily run's arguments over the spans in ``data``, with a window of ``window``."""
    return ["--data", f"{data}/day-{{SPAN}}/", "--window", str(window), "--name", NAME,
            "--output", output]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows per span")
    parser.add_argument("--spans", type=int, default=31, help="daily spans; the last shifts")
    parser.add_argument("--window", type=int, default=30, help="spans the daily run trains on")
    parser.add_argument(
        "--small-window", type=int, default=3, help="the window day N is compared with"
    )
    parser.add_argument(
        "--floor-rows", type=int, default=1_000, help="rows of the floor's span, day N+1"
    )
    parser.add_argument("--work", default="output/bench-daily-window")
    args = parser.parse_args()
    if not 1 < args.window < args.spans + 1:
        parser.error("--window must be between 2 and --spans")
    if not 1 < args.small_window < args.window:
        parser.error("--small-window must be between 2 and --window - 1")
    if args.floor_rows < 1:
        parser.error("--floor-rows must be at least 1")
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    data = os.path.join(work, "events")
    print(f"Writing {args.spans} spans of {args.rows:,} rows to {data} ...", flush=True)
    last = args.spans
    for span in range(1, last + 1):
        _write_span(f"{data}/day-{span}/rows.csv", args.rows, span, shifted=span == last)
    _write_span(f"{data}/day-{last + 1}/rows.csv", args.floor_rows, last + 1, shifted=False)
    window = range(last - args.window + 1, last + 1)
    one_shot_data = os.path.join(work, "one-shot")
    os.makedirs(one_shot_data)
    for span in window:
        os.symlink(f"{data}/day-{span}/rows.csv", f"{one_shot_data}/day-{span:03d}.csv")

    daily = os.path.join(work, "daily")
    common = _daily_args(data, args.window, daily)
    before = _run(f"day {last - 1}, window {args.window} (first run: backfill)",
                  [*common, "--span", str(last - 1)], f"{work}/day-before.log")  # fmt: skip
    warm = _run(f"day {last}, warm start", [*common, "--span", str(last)], f"{work}/day-warm.log")
    cold = _run(f"day {last}, --no-warm-start", [*common, "--span", str(last), "--no-warm-start"],
                f"{work}/day-cold.log")  # fmt: skip
    small_output = os.path.join(work, "daily-small")
    small = _daily_args(data, args.small_window, small_output)
    _run(f"day {last - 1}, window {args.small_window} (first run: backfill)",
         [*small, "--span", str(last - 1)], f"{work}/small-before.log")  # fmt: skip
    small_warm = _run(f"day {last}, window {args.small_window}, warm start",
                      [*small, "--span", str(last)], f"{work}/small-warm.log")  # fmt: skip
    floor = _run(
        f"day {last + 1}, window {args.small_window}, {args.floor_rows:,} rows (the floor)",
        [*small, "--span", str(last + 1)],
        f"{work}/floor.log",
    )
    one_shot_output = os.path.join(work, "one-shot-output")
    one_shot = _run(
        f"one shot over spans {window[0]}-{window[-1]}",
        ["--data", one_shot_data, "--name", NAME, "--output", one_shot_output],
        f"{work}/one-shot.log",
    )

    summaries = {
        "before": _summary(daily, before["run_id"]),
        "warm": _summary(daily, warm["run_id"]),
        "cold": _summary(daily, cold["run_id"]),
        "small_warm": _summary(small_output, small_warm["run_id"]),
        "floor": _summary(small_output, floor["run_id"]),
        "one_shot": _summary(one_shot_output, one_shot["run_id"]),
    }
    eval_files = sorted(
        glob.glob(
            f"{one_shot_output}/pipeline_root/{NAME}/ShardedExampleGen/examples/*/Split-eval/*"
        )
    )
    accuracy = {k: _accuracy(s.model, eval_files) for k, s in summaries.items()}
    interval = summaries["one_shot"].intervals.get("sparse_categorical_accuracy")

    warm_summary = summaries["warm"]
    print("\nDay", last, "after day", last - 1)
    print(f"  span read:      {warm_summary.span}")
    print(f"  analyzed:       {warm_summary.window.analyzed}, cache served "
          f"{len(warm_summary.window.from_cache)} spans, statistics "
          f"{len(warm_summary.window.from_statistics)} spans")  # fmt: skip
    print(f"  warm start:     {warm_summary.warm_start}")
    print(f"  drift day {last - 1}:   {_drifted(summaries['before'])}")
    print(f"  drift day {last}:   {_drifted(warm_summary)}")
    print("\n| run | wall s | CPU s | CPU vs one shot | trained steps | accuracy (same rows) |")
    print("|---|---:|---:|---:|---:|---:|")
    runs = (
        ("before", before),
        ("warm", warm),
        ("cold", cold),
        ("small_warm", small_warm),
        ("floor", floor),
        ("one_shot", one_shot),
    )
    for key, measured in runs:
        steps = summaries[key].training.steps if summaries[key].training else "-"
        print(
            f"| {key} | {measured['wall']:,.0f} | {measured['cpu']:,.0f} | "
            f"{measured['cpu'] / one_shot['cpu']:.2f} | {steps:,} | {accuracy[key][0]:.4f} |"
        )
    print(f"\nSame rows: the one-shot run's eval split, {accuracy['one_shot'][1]:,} rows.")
    print(
        f"Day {last}, window {args.window} against window {args.small_window}: "
        f"{warm['cpu'] / small_warm['cpu']:.2f}x CPU, "
        f"{warm['wall'] / small_warm['wall']:.2f}x wall."
    )
    print(
        f"Day {last + 1} of {args.floor_rows:,} rows (the floor): {floor['cpu']:.1f} CPU-s, "
        f"{floor['cpu'] / one_shot['cpu']:.2f} of the one shot; day {last} of "
        f"{args.rows:,} rows, window {args.small_window}: {small_warm['cpu'] - floor['cpu']:+.1f} "
        f"CPU-s more."
    )
    if interval:
        (low, high), rows = interval
        print(f"One-shot Evaluator accuracy 95% interval: {low:.4f}-{high:.4f} ({rows:,} rows).")
    for key, summary in summaries.items():
        costs = ", ".join(f"{c.node_id} {c.cpu_seconds:.0f}" for c in summary.costs)
        print(f"  {key} components' CPU s: {costs}")


if __name__ == "__main__":
    main()
