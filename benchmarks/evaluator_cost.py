"""What the Evaluator costs per eval row, against the model's own serving signature.

Takes a finished run (its ExampleGen examples and its Trainer's model) and,
in one process, one after the other, measures CPU (all threads) and wall time of:

1. the serving signature alone on the eval rows, already in memory, in
   batches of 1,024: what predicting costs;
2. the batched Evaluator's steps: loading the model, reading and scoring the
   rows (serving and Transform signatures), computing the metrics, writing;
3. the whole batched executor, and TFMA's path (TFX's executor), on the
   same model and rows with the same EvalConfig.

    .venv/bin/python benchmarks/evaluator_cost.py --run output/bench/out --pipeline table-800k \\
        --label label --classes 2
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))


def _latest(pattern: str) -> str:
    found = sorted(glob.glob(pattern), key=lambda p: int(os.path.basename(p)))
    if not found:
        raise SystemExit(f"Nothing matches {pattern}: give a finished run's --run and --pipeline.")
    return found[-1]


class _Clock:
    def __init__(self):
        self.cpu, self.wall = time.process_time(), time.perf_counter()

    def lap(self) -> tuple[float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        spent = (cpu - self.cpu, wall - self.wall)
        self.cpu, self.wall = cpu, wall
        return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="the run's --output folder")
    parser.add_argument("--pipeline", required=True, help="the pipeline's name")
    parser.add_argument("--label", required=True)
    parser.add_argument("--classes", type=int, required=True, help="the label's classes")
    args = parser.parse_args()
    root = os.path.join(args.run, "pipeline_root", args.pipeline)
    examples = _latest(os.path.join(root, "ShardedExampleGen", "examples", "*"))
    model = _latest(os.path.join(root, "Trainer", "model", "*"))

    import numpy as np
    import tensorflow as tf
    from evaluator_paths import TfmaPathExecutor, evaluate

    from tfrecord_pipelines.components.evaluator import batched_metrics, evaluation_files
    from tfrecord_pipelines.components.evaluator.executor import Executor, eval_config_from
    from tfrecord_pipelines.components.evaluator.predictions import ModelScorer, read_batches
    from tfrecord_pipelines.components.task import Task, transformed_name
    from tfrecord_pipelines.components.trainer.signatures import SCORES_OUTPUT
    from tfrecord_pipelines.definition.config import EvaluationOptions, EvaluationThresholds
    from tfrecord_pipelines.definition.evaluation import make_eval_config

    config = make_eval_config(
        Task(label=args.label),
        EvaluationThresholds(min_accuracy=0.5),
        EvaluationOptions(num_classes=args.classes),
    )
    files = sorted(glob.glob(os.path.join(examples, "Split-eval", "*")))
    serving = os.path.join(model, "Format-Serving")
    batches = list(read_batches(files))
    rows = sum(int(b.shape[0]) for b in batches)
    print(f"{rows:,} eval rows in {len(files)} shards; model {serving}", flush=True)

    signature = tf.saved_model.load(serving).signatures["serving_default"]
    signature(examples=batches[0])  # traced once, not counted
    clock = _Clock()
    for batch in batches:
        signature(examples=batch)
    serve_cpu, serve_wall = clock.lap()

    from google.protobuf import json_format

    full = eval_config_from({"eval_config": json_format.MessageToJson(config)}, has_baseline=False)
    clock.lap()
    scorer = ModelScorer(
        serving,
        "serving_default",
        transformed_name(args.label),
        "transform_features",
        SCORES_OUTPUT,
    )
    load = clock.lap()
    for batch in read_batches(files):
        scorer.score(batch)
    score = clock.lap()
    outputs = {
        "": batched_metrics.ModelOutputs(
            np.concatenate(scorer.labels), np.concatenate(scorer.predictions)
        )
    }
    sliced = [((), batched_metrics.slice_metrics(batched_metrics.computations_for(full), outputs))]
    metrics = clock.lap()
    with tempfile.TemporaryDirectory() as scratch:
        validation = evaluation_files.validate(sliced, full, rubber_stamp=False)
        evaluation_files.write(scratch, sliced, validation, full, ",".join(files), {"": serving})
        write = clock.lap()
        whole = {}
        for executor in (Executor, TfmaPathExecutor):
            clock.lap()
            evaluate(executor, examples, model, config, Path(scratch, executor.__name__))
            whole[executor.__name__] = clock.lap()

    def row(name: str, spent: tuple[float, float], per_row: bool = True) -> None:
        cpu, wall = spent
        per = f"{1e6 * cpu / rows:10.1f} {cpu / serve_cpu:8.1f}x" if per_row else ""
        print(f"| {name:<44} | {wall:7.2f} | {cpu:7.2f} | {per} |")

    print("| step | wall s | CPU s | CPU µs/row, x serving |")
    print("| --- | ---: | ---: | ---: |")
    row("serving signature alone (rows in memory)", (serve_cpu, serve_wall))
    row("batched: load the model", load, per_row=False)
    row("batched: read, serve, transform the label", score)
    row("batched: metrics (TFMA's computations)", metrics, per_row=False)
    row("batched: validate and write", write, per_row=False)
    row("batched executor, whole", whole["Executor"])
    row("TFMA's path (TFX's executor), whole", whole["TfmaPathExecutor"])
    print(
        f"TFMA / batched: {whole['TfmaPathExecutor'][0] / whole['Executor'][0]:.1f}x CPU; "
        f"batched executor per row {whole['Executor'][0] / serve_cpu:.1f}x the serving "
        f"signature's CPU, its reading and scoring alone {score[0] / serve_cpu:.1f}x."
    )


if __name__ == "__main__":
    main()
