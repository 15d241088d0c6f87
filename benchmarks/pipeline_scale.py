"""The whole tabular pipeline at real size, against a stock TFX pipeline, in one run.

For each table size (benchmarks/scale_table.py: 15 feature columns and a
yes/no label), runs the project's pipeline as a user would
(``python -m tfrecord_pipelines run --data ... --label label --no-cache``,
every default), then reads back from its ML Metadata what each component's
executor cost (wall, CPU = user + sys) and processed, the Trainer's input
stall in its last epoch and how many epochs of the train split it saw.
At the sizes given to ``--stock-rows``, runs the same table through a stock
TFX pipeline (benchmarks/stock_tfx_pipeline.py) training the same number of
steps. Each pipeline runs in its own process; its total CPU includes the
~15 s of importing TensorFlow and TFX. Not a test: it prints tables and ratios.

    .venv/bin/python benchmarks/pipeline_scale.py --rows 1500000 10000000 \\
        --stock-rows 1500000 --work output/bench-pipeline-scale
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import warnings

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("PYTHONWARNINGS", "ignore")
_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path.insert(0, _ROOT)
sys.path.insert(0, _HERE)

PIPELINE_NAME = "scale"
# The project's pipeline before the eval split was sized and ExampleGen described its
# records (commit 2282d5f, docs/benchmarks/pipeline-scale.md's earlier table): the
# process's CPU seconds, the eval rows and the accuracy, by table size.
BEFORE = {1_500_000: (258, 500_431, 0.8149), 10_000_000: (1_566, 3_333_680, 0.8167)}
COMPONENTS = (
    ("ShardedExampleGen", "CsvExampleGen"),
    (None, "StatisticsGen"),
    ("SchemaGen", "SchemaGen"),
    ("ExampleValidator", None),
    ("Transform", "Transform"),
    ("Trainer", "Trainer"),
    ("Evaluator", "Evaluator"),
    ("Pusher", None),
)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(command: list[str], log_path: str) -> tuple[float, float, str]:
    """Runs a command; returns its wall and CPU seconds and its stdout."""
    started, cpu_started = time.monotonic(), _children_cpu()
    with open(log_path, "w") as log:
        process = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=log, text=True, check=False
        )
    seconds, cpu = time.monotonic() - started, _children_cpu() - cpu_started
    if process.returncode:
        raise SystemExit(
            f"{' '.join(command[:4])}... failed (exit {process.returncode}): {log_path}"
        )
    return seconds, cpu, process.stdout


def _table(rows: int, work: str, binary: bool) -> str:
    from scale_table import write_table

    folder = os.path.join(work, f"table-{rows}{'-binary' if binary else ''}")
    if not os.path.isdir(folder):
        print(f"writing {rows:,} rows to {folder} ...", flush=True)
        write_table(rows, folder + ".partial", binary=binary)
        os.rename(folder + ".partial", folder)
    return folder


def _ours(table: str, rows: int, work: str) -> dict:
    output = os.path.join(work, f"ours-{rows}")
    shutil.rmtree(output, ignore_errors=True)
    command = [sys.executable, "-m", "tfrecord_pipelines", "run", "--data", table]
    command += ["--label", "label", "--name", PIPELINE_NAME, "--output", output, "--no-cache"]
    print(f"project pipeline, {rows:,} rows ...", flush=True)
    seconds, cpu, _ = _run(command, output + ".log")

    from tfrecord_pipelines.local.layout import LocalLayout
    from tfrecord_pipelines.local.run_record import PIPELINE_RUN_CONTEXT, open_store
    from tfrecord_pipelines.report.run_summary import summarize_run

    store = open_store(LocalLayout(output, PIPELINE_NAME).metadata_path)
    run_id = store.get_contexts_by_type(PIPELINE_RUN_CONTEXT)[-1].name
    summary = summarize_run(store, PIPELINE_NAME, run_id)
    (plan_path,) = glob.glob(
        f"{output}/pipeline_root/{PIPELINE_NAME}/ShardedExampleGen/examples/*/shard_plan.json"
    )
    with open(plan_path) as f:
        plan = json.load(f)
    classes = summary.classes
    positive = classes.names.index(classes.positive) if classes and classes.positive else 1
    return {
        "sizing": plan.get("split_sizing"),
        "eval_rows": int(summary.metrics["example_count"]),
        "interval": summary.intervals.get("sparse_categorical_accuracy", ((None, None), 0))[0],
        # The positive class's ("yes", or 1) AUC, by its class id.
        "auc": summary.metrics.get(f"auc (class {positive})"),
        "positive": classes.positive if classes and classes.positive else "class 1",
        "seconds": seconds,
        "cpu": cpu,
        "costs": {c.node_id: (c.wall_seconds, c.cpu_seconds, c.records) for c in summary.costs},
        "input_stall": summary.input_stall,
        "training": summary.training,
        "accuracy": summary.metrics.get("sparse_categorical_accuracy"),
    }


def _stock(table: str, rows: int, work: str, train_steps: int, batch_size: int) -> dict:
    output = os.path.join(work, f"stock-{rows}")
    shutil.rmtree(output, ignore_errors=True)
    command = [sys.executable, os.path.join(_HERE, "stock_tfx_pipeline.py"), "--data", table]
    command += ["--label", "label", "--output", output, "--train-steps", str(train_steps)]
    command += ["--batch-size", str(batch_size), "--num-classes", "2"]
    print(f"stock TFX, {rows:,} rows, {train_steps:,} steps of {batch_size} ...", flush=True)
    seconds, cpu, stdout = _run(command, output + ".log")
    result = json.loads(stdout.strip().splitlines()[-1])
    return {"seconds": seconds, "cpu": cpu, **result}


def _input_child(raw: str, graph: str, copy: str, batch_size: str) -> None:
    """One pass of the Trainer's input over ExampleGen's shards (the Transform graph in
    tf.data) and over Transform's materialized copy; prints examples/s and CPU per example."""
    import tensorflow_transform as tft

    from tfrecord_pipelines.components.task import transformed_name
    from tfrecord_pipelines.components.trainer.dataset import list_files, make_dataset
    from tfrecord_pipelines.components.trainer.input_options import InputOptions
    from tfrecord_pipelines.local.component_costs import process_cpu_seconds

    output = tft.TFTransformOutput(graph)
    label = transformed_name("label")
    sources = {
        "ExampleGen's shards, Transform graph in tf.data": dict(
            file_pattern=raw,
            feature_spec=output.raw_feature_spec(),
            transform=output.transform_features_layer(),
        ),
        "Transform's materialized copy": dict(
            file_pattern=copy, feature_spec=output.transformed_feature_spec()
        ),
    }
    results = {}
    for name, source in sources.items():
        dataset = make_dataset(
            batch_size=int(batch_size),
            num_epochs=1,
            label_key=label,
            options=InputOptions(device=None),
            **source,
        )
        started, cpu_started, examples = time.monotonic(), process_cpu_seconds(), 0
        for _, labels in dataset:
            examples += int(labels.shape[0])
        seconds, cpu = time.monotonic() - started, process_cpu_seconds() - cpu_started
        results[name] = {
            "files": len(list_files(source["file_pattern"])),
            "examples_per_second": examples / seconds,
            "cpu_us_per_example": 1e6 * cpu / examples,
        }
    print(json.dumps(results))


def _input_rates(ours_output: str, stock_output: str, batch_size: int, work: str) -> dict:
    ours_root = f"{ours_output}/pipeline_root/{PIPELINE_NAME}"
    examples = glob.glob(f"{ours_root}/ShardedExampleGen/examples/*")
    graph = glob.glob(f"{ours_root}/Transform/transform_graph/*")
    copy = glob.glob(f"{stock_output}/pipeline_root/Transform/transformed_examples/*")
    command = [sys.executable, os.path.abspath(__file__), "--input-child"]
    command += [f"{examples[0]}/Split-train/*", graph[0], f"{copy[0]}/Split-train/*"]
    print("the Trainer's input: shards against the materialized copy ...", flush=True)
    _, _, stdout = _run([*command, str(batch_size)], os.path.join(work, "input-rates.log"))
    return json.loads(stdout.strip().splitlines()[-1])


def _print_size(rows: int, ours: dict, stock: dict | None, rates: dict | None) -> None:
    training = ours["training"]
    print(f"\n## {rows:,} rows\n")
    print("| component | wall s | CPU s | records | records/s | stock TFX | wall s | CPU s |")
    print("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for name, stock_name in COMPONENTS:
        wall, cpu, records = ours["costs"].get(name, (None, None, None))
        theirs = (stock or {}).get("costs", {}).get(stock_name) if stock_name else None
        if wall is None and theirs is None:
            continue
        stock_cells = f"{stock_name} | {theirs[0]:.1f} | {theirs[1]:.1f}" if theirs else " | | "
        if wall is None:
            print(f"| (none: in ExampleGen's pass) | | | | | {stock_cells} |")
            continue
        rate = f"{records / wall:,.0f}" if records and wall else ""
        records_cell = f"{records:,}" if records else ""
        print(f"| {name} | {wall:.1f} | {cpu:.1f} | {records_cell} | {rate} | {stock_cells} |")
    stock_cells = f"| {stock['seconds']:.0f} | {stock['cpu']:.0f} |" if stock else "| | |"
    print(f"| whole run (process) | {ours['seconds']:.0f} | {ours['cpu']:.0f} | | | {stock_cells}")
    print()
    sizing = ours["sizing"] or {}
    low, high = ours["interval"]
    print(
        f"- split: {training.train_records:,} train rows, {ours['eval_rows']:,} eval rows "
        f"(estimated input rows {sizing.get('estimated_rows', 0):,}, eval cap "
        f"{sizing.get('eval_rows', 0):,}, capped: {sizing.get('capped')})"
    )
    print(
        f"- trained on {training.examples:,} examples, {training.epochs:.2f} epochs of the "
        f"train split ({training.steps:,} steps of {training.batch_size}); accuracy "
        f"{ours['accuracy']:.4f} [{low:.4f}, {high:.4f}] (95%, +-{50 * (high - low):.2f} "
        f"points) on the {ours['eval_rows']:,} eval rows; "
        f"AUC ({ours['positive']}) {ours['auc'] or float('nan'):.4f}"
    )
    before = BEFORE.get(rows)
    if before:
        print(
            f"- before (2:1 split, separate StatisticsGen): {before[0]:,} CPU s, accuracy "
            f"{before[2]:.4f} on {before[1]:,} eval rows; now {ours['cpu']:.0f} CPU s "
            f"({ours['cpu'] / before[0]:.2f}x)"
        )
    evaluator = ours["costs"].get("Evaluator", (0, 0, 0))[1]
    print(f"- Evaluator: {100 * evaluator / ours['cpu']:.1f}% of the process's CPU")
    if stock:
        print(
            f"- stock TFX's model, same steps, TFX's 2:1 split: accuracy "
            f"{stock['accuracy']:.4f} on {int(stock['eval_rows']):,} eval rows"
        )
    print(f"- input stall, last epoch: {100 * ours['input_stall']:.1f}%", end="")
    print(f" (stock TFX: {100 * stock['input_stall']:.1f}%)" if stock else "")
    if stock:
        print(
            f"- stock TFX / project: {stock['seconds'] / ours['seconds']:.2f}x wall, "
            f"{stock['cpu'] / ours['cpu']:.2f}x CPU"
        )
    for name, rate in (rates or {}).items():
        print(
            f"- the Trainer's input, one pass over the train split at batch "
            f"{training.batch_size}, {name} ({rate['files']} files): "
            f"{rate['examples_per_second']:,.0f} examples/s, "
            f"{rate['cpu_us_per_example']:.1f} us CPU per example"
        )


def main() -> None:
    if sys.argv[1:2] == ["--input-child"]:
        _input_child(*sys.argv[2:])
        return
    warnings.filterwarnings("ignore")  # TFX's imports warn of Python and library versions
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_500_000, 10_000_000])
    parser.add_argument(
        "--stock-rows", type=int, nargs="*", default=[1_500_000], help="sizes to run stock TFX on"
    )
    parser.add_argument("--work", default=os.path.join(_ROOT, "output", "bench-pipeline-scale"))
    parser.add_argument(
        "--binary-label", action="store_true", help="the label 1/0 (integers), not yes/no"
    )
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    print(f"{os.cpu_count()} cores; work folder {args.work}", flush=True)
    for rows in args.rows:
        table = _table(rows, args.work, args.binary_label)
        ours = _ours(table, rows, args.work)
        stock = rates = None
        if rows in args.stock_rows:
            batch_size = ours["training"].batch_size
            stock = _stock(table, rows, args.work, ours["training"].steps, batch_size)
            ours_output = os.path.join(args.work, f"ours-{rows}")
            stock_output = os.path.join(args.work, f"stock-{rows}")
            rates = _input_rates(ours_output, stock_output, batch_size, args.work)
        _print_size(rows, ours, stock, rates)
    print(f"\nlogs and outputs: {args.work}")


if __name__ == "__main__":
    main()
