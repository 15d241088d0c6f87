"""The Trainer's input on tf.data service workers against on the trainer, the trainer on one core.

Pins this process (the trainer) to core 0 and, for two input shapes that are
bound by CPU (a wide table of 200 features: parsing; 224x224 JPEGs:
decoding), measures in one run:

(a) make_dataset on the trainer's core;
(b) the same pipeline through the tf.data service, one worker on core 1;
(c) the same with two workers, both on core 1 (this machine has 2 cores: it
    shows the overhead of a second worker, not its gain).

For each: examples/s of a second pass (the first starts the job), the waiting share of a simulated
accelerator (benchmarks/input_pipeline.py's consumer: a step that sleeps,
overlapping the next batch) whose step time is set so that it needs twice
what (a) delivers; CPU seconds of the trainer and of the workers. Not a test:
it prints figures and ratios measured in one run.

    .venv/bin/python benchmarks/data_service.py --work output/bench-data-service
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

# The trainer's core, before TensorFlow sizes its thread pools.
os.sched_setaffinity(0, {0})
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path.insert(0, _ROOT)
sys.path.insert(0, _HERE)

import numpy as np  # noqa: E402 - the environment above must be set first
import tensorflow as tf  # noqa: E402
from image_input import _draw  # noqa: E402
from input_pipeline import _consume_on_accelerator, _count, _schema, _write  # noqa: E402

from tfrecord_pipelines.components.trainer import (  # noqa: E402
    InputOptions,
    feature_spec_from_schema,
    make_dataset,
)
from tfrecord_pipelines.components.trainer.data_service import DataService, registered_workers  # noqa: E402
from tfrecord_pipelines.components.trainer.image_decoding import ImageDecoding  # noqa: E402

# Batches stay on the host: the benchmark's consumer stands in for the accelerator.
ON_HOST = InputOptions(device=None)

WORKER_CORE = 1
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def _on_worker_core() -> None:
    os.sched_setaffinity(0, {WORKER_CORE})


class _Servers:
    """A dispatcher and n workers on the worker core, as processes."""

    def __init__(self, workers: int, logs: str):
        self.processes = []
        port = 45050 + workers
        self._start(logs, "dispatcher", "--port", str(port))
        self.service = DataService(f"127.0.0.1:{port}")
        for _ in range(workers):
            self._start(logs, "worker", "--dispatcher", self.service.address, "--port", "0")
        deadline = time.monotonic() + 60
        while True:
            try:
                if len(registered_workers(self.service, timeout_s=2)) == workers:
                    break
            except RuntimeError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the servers did not start; see {logs}")
            time.sleep(0.5)

    def _start(self, logs: str, *args: str) -> None:
        with open(os.path.join(logs, f"{args[0]}-{len(self.processes)}.log"), "w") as out:
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "tfrecord_pipelines.cli.data_service", *args],
                    cwd=_ROOT,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_on_worker_core,
                )
            )

    def cpu(self) -> float:
        return sum(_cpu_seconds(p.pid) for p in self.processes)

    def stop(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait()


def _write_images(folder: str, count: int, shards: int) -> str:
    os.makedirs(folder)
    rng = np.random.default_rng(7)
    writers = [tf.io.TFRecordWriter(os.path.join(folder, f"data-{s:05d}")) for s in range(shards)]
    for i in range(count):
        example = tf.train.Example(
            features=tf.train.Features(
                feature={
                    "image": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[_draw(rng, i % 10)])
                    ),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 10])),
                }
            )
        )
        writers[i % shards].write(example.SerializeToString())
    for writer in writers:
        writer.close()
    return os.path.join(folder, "data-*")


def _measure(name, make, servers, batch_size, step_seconds, batches) -> dict:
    """One configuration: a pass's examples/s, then the accelerator's waiting share."""
    service = servers.service if servers else None
    # The first pass starts the job: the workers build and tune the pipeline.
    _count(make(service, num_epochs=1))
    trainer_cpu, workers_cpu = time.process_time(), servers.cpu() if servers else 0.0
    examples, seconds = _count(make(service, num_epochs=1))
    trainer_cpu = time.process_time() - trainer_cpu
    workers_cpu = (servers.cpu() if servers else 0.0) - workers_cpu
    waiting, total, _ = _consume_on_accelerator(make(service, None), step_seconds, batches)
    row = {
        "name": name,
        "rate": examples / seconds,
        "waiting": waiting / total,
        "trainer_cpu_us": 1e6 * trainer_cpu / examples,
        "workers_cpu_us": 1e6 * workers_cpu / examples,
    }
    print(
        f"  {name}: {row['rate']:,.0f} examples/s, accelerator waiting "
        f"{100 * row['waiting']:.0f}%, CPU per example: trainer {row['trainer_cpu_us']:.0f} us, "
        f"workers {row['workers_cpu_us']:.0f} us",
        flush=True,
    )
    return row


def _shape(title: str, make, batch_size: int, args) -> list[dict]:
    print(f"{title}:", flush=True)
    local_examples, local_seconds = _count(make(None, num_epochs=1))  # warm the page cache
    # An accelerator that needs twice what the trainer's own core delivers.
    step_seconds = batch_size / (2 * local_examples / local_seconds)
    rows = [
        _measure("(a) on the trainer's core", make, None, batch_size, step_seconds, args.batches)
    ]
    for workers in (1, 2):
        servers = _Servers(workers, args.logs)
        try:
            rows.append(
                _measure(
                    f"({'bc'[workers - 1]}) service, {workers} worker(s) on core {WORKER_CORE}",
                    make,
                    servers,
                    batch_size,
                    step_seconds,
                    args.batches,
                )
            )
        finally:
            servers.stop()
    for row in rows:
        row["shape"] = title
        row["speedup"] = row["rate"] / rows[0]["rate"]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="output/bench-data-service")
    parser.add_argument("--wide-examples", type=int, default=50_000)
    parser.add_argument("--images", type=int, default=3_000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--batches", type=int, default=150, help="accelerator steps measured")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.logs = os.path.join(args.work, "logs")
    os.makedirs(args.logs)
    print(f"trainer on core {sorted(os.sched_getaffinity(0))}, workers on core {WORKER_CORE}")

    schema = _schema(200)
    wide = _write(os.path.join(args.work, "wide"), schema, args.wide_examples, args.shards)
    spec = feature_spec_from_schema(schema)

    def wide_dataset(service, num_epochs):
        return make_dataset(
            wide["tfrecord"], spec, 256, num_epochs=num_epochs, options=ON_HOST,
            data_service=service,
        )  # fmt: skip

    images = _write_images(os.path.join(args.work, "images"), args.images, args.shards)
    image_spec = {
        "image": tf.io.FixedLenFeature([1], tf.string),
        "label": tf.io.FixedLenFeature([1], tf.int64),
    }
    decoding = ImageDecoding("image", size=224, augment=("crop",))

    def image_dataset(service, num_epochs):
        return make_dataset(
            images,
            image_spec,
            64,
            num_epochs=num_epochs,
            options=ON_HOST,
            image=decoding,
            data_service=service,
        )

    rows = _shape("wide table, 200 features, batch 256", wide_dataset, 256, args)
    rows += _shape("JPEG 224x224, decode + crop, batch 64", image_dataset, 64, args)
    print()
    print(
        "| shape | input from | examples/s | x (a) | accelerator waiting "
        "| trainer CPU us/ex | workers CPU us/ex |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(
            f"| {row['shape']} | {row['name']} | {row['rate']:,.0f} | {row['speedup']:.2f} | "
            f"{100 * row['waiting']:.0f}% | {row['trainer_cpu_us']:.0f} | "
            f"{row['workers_cpu_us']:.0f} |"
        )


if __name__ == "__main__":
    main()
