"""The Trainer on two workers (MultiWorkerMirroredStrategy) against one process, on this machine.

Takes a finished run (``make run``'s ``output/`` by default) and runs the Trainer's own
``run_fn`` on its examples and Transform output, with its custom_config, at the same
global batch:

1. one process, S and 2S steps;
2. two worker processes on 127.0.0.1 with the TF_CONFIG a TFJob's pods get, S and 2S
   steps each;
3. the collective alone: two processes all-reducing, 200 times, a tensor the size of the
   model's trainable weights (what each training step's gradient all-reduce moves).

The cost of a step is the difference between the 2S and the S runs over S, which
cancels the start-up (imports, the first trace, the save). Wall seconds, and CPU
seconds of the processes (user + system). On 2 cores two workers share the cores one
process had: the figures say what the collective costs here, not a speed-up, which
needs a node per worker.

    .venv/bin/python benchmarks/trainer_workers.py --steps 400
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TRAIN = """
import json, logging, os, sys
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
logging.basicConfig(level=logging.WARNING)
from tfx.components.trainer.fn_args_utils import FnArgs
from tfrecord_pipelines.components.trainer.run import run_fn
run_fn(FnArgs(**json.load(open(sys.argv[1]))))
"""
_ALL_REDUCE = """
import json, os, sys, time
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import tensorflow as tf
strategy = tf.distribute.MultiWorkerMirroredStrategy()
size, rounds = int(sys.argv[1]), int(sys.argv[2])
@tf.function
def reduce_once():
    gradient = lambda: tf.random.uniform([size])  # noqa: E731 (a new value each round)
    return strategy.run(
        lambda: tf.distribute.get_replica_context().all_reduce("SUM", gradient())
    )
for _ in range(5):  # trace and warm up
    reduce_once()
start = time.perf_counter()
for _ in range(rounds):  # one call per round, as Keras calls its train step once per step
    reduce_once()
print(json.dumps({"seconds": time.perf_counter() - start}))
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes(program: str, argv: list[str], workers: int) -> tuple[float, float, list[str]]:
    """Runs PROGRAM in WORKERS processes (TF_CONFIG when more than one); wall, CPU, outputs."""
    addresses = [f"127.0.0.1:{_port()}" for _ in range(workers)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    running = []
    for index in range(workers):
        env = dict(os.environ, TF_USE_LEGACY_KERAS="1")
        if workers > 1:
            env["TF_CONFIG"] = json.dumps(
                {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}
            )
        running.append(
            subprocess.Popen(
                [sys.executable, "-c", program, *argv],
                cwd=REPO,
                env=env,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )  # fmt: skip
        )
    outputs = []
    for process in running:
        out, err = process.communicate(timeout=3600)
        if process.returncode:
            raise SystemExit(f"a worker failed:\n{err[-3000:]}")
        outputs.append(out)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, outputs


def _fn_args(run: str, pipeline: str) -> tuple[dict, str]:
    sys.path.insert(0, REPO)
    from tfrecord_pipelines.local.run_record import open_store, read_run

    store = open_store(os.path.join(run, "metadata", pipeline, "metadata.db"))
    runs = sorted(
        store.get_contexts_by_type("pipeline_run"), key=lambda c: c.create_time_since_epoch
    )
    if not runs:
        raise SystemExit(f"No run of {pipeline!r} in {run}: run `make run` first.")
    trainer = read_run(store, pipeline, runs[-1].name)["Trainer"]
    examples = trainer.inputs["examples"][0].uri
    properties = trainer.execution.custom_properties
    model = trainer.outputs["model"][0].uri
    return {
        "train_files": [f"{examples}/Split-train/*"],
        "eval_files": [f"{examples}/Split-eval/*"],
        "transform_output": trainer.inputs["transform_graph"][0].uri,
        "eval_steps": 5,
        "custom_config": json.loads(properties["custom_config"].string_value),
    }, os.path.join(model, "Format-Serving")


def _weights(serving_model: str) -> int:
    """The model's weights: what each step's gradient all-reduce moves (its layers' variables
    in the SavedModel's checkpoint)."""
    import math

    import tensorflow as tf

    listed = tf.train.list_variables(os.path.join(serving_model, "variables", "variables"))
    return sum(math.prod(shape) for name, shape in listed if name.startswith("layer_with_weights"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="output", help="a finished run's --output folder")
    parser.add_argument("--pipeline", default="penguins")
    parser.add_argument("--steps", type=int, default=400, help="S: the shorter run's steps")
    parser.add_argument("--only-collective", action="store_true", help="skip the training runs")
    args = parser.parse_args()
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    fn_args, serving_model = _fn_args(args.run, args.pipeline)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for workers in () if args.only_collective else (1, 2):
            measured = {}
            for steps in (args.steps, 2 * args.steps):
                out = os.path.join(folder, f"{workers}-{steps}")
                arguments = os.path.join(folder, f"{workers}-{steps}.json")
                with open(arguments, "w") as f:
                    json.dump(
                        {
                            **fn_args,
                            "train_steps": steps,
                            "serving_model_dir": f"{out}/Trainer/model/1/Format-Serving",
                            "model_run_dir": f"{out}/Trainer/model_run/1",
                        },
                        f,
                    )
                measured[steps] = _processes(_TRAIN, [arguments], workers)[:2]
                print(f"{workers} worker(s), {steps} steps: {measured[steps][0]:.1f} s wall, "
                      f"{measured[steps][1]:.1f} CPU-s", flush=True)  # fmt: skip
            (wall_s, cpu_s), (wall_2s, cpu_2s) = measured[args.steps], measured[2 * args.steps]
            rows.append((workers, wall_s, cpu_s, (wall_2s - wall_s) / args.steps,
                         (cpu_2s - cpu_s) / args.steps))  # fmt: skip
    size, rounds = _weights(serving_model), 200
    wall, cpu, outputs = _processes(_ALL_REDUCE, [str(size), str(rounds)], 2)
    reduce_ms = max(json.loads(o.strip().splitlines()[-1])["seconds"] for o in outputs) / rounds
    print()
    print(f"| workers | wall, {args.steps} steps | CPU-s | wall ms per step | CPU ms per step |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for workers, wall_s, cpu_s, wall_step, cpu_step in rows:
        print(f"| {workers} | {wall_s:.1f} s | {cpu_s:.1f} | {wall_step * 1e3:.2f} | "
              f"{cpu_step * 1e3:.2f} |")  # fmt: skip
    print()
    print(f"The collective alone: an all-reduce of {size:,} float32 weights between two "
          f"processes takes {reduce_ms * 1e3:.2f} ms ({rounds} rounds).")  # fmt: skip


if __name__ == "__main__":
    main()
