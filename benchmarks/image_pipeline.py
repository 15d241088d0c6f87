"""The image pipeline at real size: tens of thousands of photo-like JPEGs through convert and run.

Generates ``--images`` photo-like JPEGs (benchmarks/photos.py: 256-640 px,
nine classes, about 18 KiB each), then in one run measures:

1. Ingest with every image checked completely, per image after start-up
   (the difference between the whole folder and a small folder of its first
   ``--small`` images, each measured in a fresh process):
   - the complete check alone (``image_source.image_shapes`` on batches of
     256 files read in Python),
   - the plain loop (read each file, wrap it in a tf.Example, write it),
   - ``convert`` on Beam (the default engine) and on Spark ``local[2]``;
   CPU is user + sys of the whole process tree (Spark's JVM and Python
   workers included).
2. ``run`` on the folder with its defaults but the training length,
   ``--epochs`` (default 1: on this machine's CPU the default 1,000 steps
   of 224x224 images take over 20 minutes): each
   component's wall and CPU seconds, images/s of ingest, of the Trainer's
   input alone (``make_dataset`` over the shards, decoding as the Trainer
   does, no model) and of training; the last epoch's input stall.
3. The same run with ``--data-service`` (a dispatcher and one worker on
   127.0.0.1): the Trainer again, and its input stall.
4. The seeds' race at this size: the pipeline's image network trained from
   the JPEG files and from the shards, ``--race-epochs`` epochs each.

Not a test: it prints figures and ratios measured in one run.

    .venv/bin/python benchmarks/image_pipeline.py --work output/bench-image-pipeline
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
PIPELINE_NAME = "photos"
BATCH_READ = 256


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tree_cpu() -> float:
    """CPU of this process, its live descendants and what they reaped."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for process in [me, *me.children(recursive=True)]:
        try:
            t = process.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            continue
    return total


def _image_paths(folder: str) -> list[str]:
    return sorted(os.path.join(root, name) for root, _, names in os.walk(folder) for name in names)


# --- what each measuring child process runs --------------------------------------------


def _check_alone(folder: str) -> int:
    from tfrecord_pipelines.components.example_gen.image_source import image_shapes

    paths = _image_paths(folder)
    for start in range(0, len(paths), BATCH_READ):
        batch = []
        for path in paths[start : start + BATCH_READ]:
            with open(path, "rb") as f:
                batch.append(f.read())
        image_shapes(batch)
    return len(paths)


def _plain_loop(folder: str, dest: str) -> int:
    import tensorflow as tf

    os.makedirs(dest, exist_ok=True)
    count = 0
    with tf.io.TFRecordWriter(os.path.join(dest, "images.tfrecord")) as writer:
        for path in _image_paths(folder):
            with open(path, "rb") as f:
                encoded = f.read()
            feature = {
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[encoded])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[0])),
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )
            count += 1
    return count


def _convert(folder: str, dest: str, engine: str) -> int:
    from tfrecord_pipelines.components.example_gen.convert import convert
    from tfrecord_pipelines.components.example_gen.settings import (
        ExampleGenSettings,
        SparkOptions,
    )
    from tfrecord_pipelines.components.example_gen.shard_compression import default_compression
    from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
    from tfrecord_pipelines.local.beam_args import local_beam_args

    settings = ExampleGenSettings(
        source_format="images",
        sharding=ShardingOptions(num_readers=10),
        compression=default_compression(True),
        engine=engine,
        spark=SparkOptions(master="local[2]"),
    )
    report = convert(folder, dest, settings, beam_pipeline_args=local_beam_args(), overwrite=True)
    return report.records_written


def _child(how: str, folder: str, dest: str) -> None:
    # Imported before the clocks start: start-up every process pays once.
    import tensorflow  # noqa: F401

    from tfrecord_pipelines.components.example_gen import convert  # noqa: F401
    from tfrecord_pipelines.components.example_gen.image_source import image_shapes

    image_shapes([])
    if how == "spark":
        from tfrecord_pipelines.components.example_gen.spark.session import spark_session

        # Measured while the session lives: its Python workers' CPU is lost
        # once the JVM stops them. convert() runs in this session.
        with spark_session("local[2]"):
            result = _timed(how, folder, dest)
    else:
        result = _timed(how, folder, dest)
    print(json.dumps(result))


def _timed(how: str, folder: str, dest: str) -> dict:
    started, cpu = time.monotonic(), _tree_cpu()
    if how == "check":
        images = _check_alone(folder)
    elif how == "loop":
        images = _plain_loop(folder, dest)
    else:
        images = _convert(folder, dest, how)
    return {"images": images, "seconds": time.monotonic() - started, "cpu": _tree_cpu() - cpu}


# --- the parent --------------------------------------------------------------------------


def _measure(how: str, folder: str, work: str) -> dict:
    dest = os.path.join(work, "out")
    shutil.rmtree(dest, ignore_errors=True)
    command = [sys.executable, os.path.abspath(__file__), "--child", how, folder, dest]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "TF_CPP_MIN_LOG_LEVEL": "3"}
    with open(os.path.join(work, f"{how}.log"), "a") as log:
        done = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=log, text=True, env=env, check=False
        )
    if done.returncode:
        raise SystemExit(f"{how} on {folder} failed (exit {done.returncode}): {log.name}")
    shutil.rmtree(dest, ignore_errors=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _small_folder(folder: str, count: int, work: str) -> str:
    """A folder of the first ``count`` images (hard links), in the same class folders."""
    small = os.path.join(work, f"photos-{count}")
    if os.path.isdir(small):
        return small
    for path in _image_paths(folder)[:count]:
        target = os.path.join(small, os.path.relpath(path, folder))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.link(path, target)
    return small


def _ingest(folder: str, small: str, work: str) -> dict:
    print("\n1. Ingest, per image after start-up (whole folder minus small folder)", flush=True)
    print("| step | images | wall s | CPU s | per image after start-up: wall ms | CPU ms "
          "| images/s | wall / CPU |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rates = {}
    for how, name in (
        ("check", "complete check alone"),
        ("loop", "plain read-and-wrap loop"),
        ("beam", "convert, Beam"),
        ("spark", "convert, Spark local[2]"),
    ):
        low, high = _measure(how, small, work), _measure(how, folder, work)
        count = high["images"] - low["images"]
        wall = (high["seconds"] - low["seconds"]) / count
        cpu = (high["cpu"] - low["cpu"]) / count
        rates[how] = {"wall_ms": 1000 * wall, "cpu_ms": 1000 * cpu}
        for run in (low, high):
            print(f"| {name} | {run['images']:,} | {run['seconds']:.1f} | {run['cpu']:.1f} "
                  f"| {1000 * wall:.3f} | {1000 * cpu:.3f} | {1 / wall:,.0f} "
                  f"| {wall / cpu:.2f} |", flush=True)  # fmt: skip
    ceiling = rates["check"]["cpu_ms"] + rates["loop"]["cpu_ms"]
    for how in ("beam", "spark"):
        r = rates[how]
        print(
            f"{how}: CPU per image {r['cpu_ms']:.3f} ms = {r['cpu_ms'] / ceiling:.2f}x "
            f"(check + loop = {ceiling:.3f} ms; target <= 1.5x); wall / CPU "
            f"{r['wall_ms'] / r['cpu_ms']:.2f} (target <= 0.6)"
        )
    return rates


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(folder: str, output: str, extra: list[str]) -> tuple[float, float, object]:
    """``run`` on the folder; returns wall, CPU (the whole process tree) and its RunSummary."""
    command = [sys.executable, "-m", "tfrecord_pipelines", "run", "--data", folder,
               "--name", PIPELINE_NAME, "--output", output, *extra]  # fmt: skip
    started, cpu = time.monotonic(), _children_cpu()
    with open(output + ".log", "w") as log:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True, check=False)
    seconds, cpu = time.monotonic() - started, _children_cpu() - cpu
    if done.returncode:
        raise SystemExit(f"run failed (exit {done.returncode}): {output}.log")
    print(done.stdout, flush=True)
    from tfrecord_pipelines.local.layout import LocalLayout
    from tfrecord_pipelines.local.run_record import PIPELINE_RUN_CONTEXT, open_store
    from tfrecord_pipelines.report.run_summary import summarize_run

    store = open_store(LocalLayout(output, PIPELINE_NAME).metadata_path)
    run_id = store.get_contexts_by_type(PIPELINE_RUN_CONTEXT)[-1].name
    return seconds, cpu, summarize_run(store, PIPELINE_NAME, run_id)


def _input_rate(output: str) -> tuple[float, float]:
    """Images/s and CPU ms per image of the Trainer's input alone over the train shards."""
    import glob

    import tensorflow as tf

    from tfrecord_pipelines.components.trainer import InputOptions, make_dataset
    from tfrecord_pipelines.components.trainer.image_decoding import ImageDecoding
    from tfrecord_pipelines.components.trainer.image_sizing import sample_images

    (split,) = glob.glob(
        f"{output}/pipeline_root/{PIPELINE_NAME}/ShardedExampleGen/examples/*/Split-train"
    )
    spec = {"image": tf.io.FixedLenFeature([1], tf.string)}
    # The side the Trainer chose for these images (the median side, at most 224).
    decoding = ImageDecoding(
        "image", size=sample_images(os.path.join(split, "*"), "image").auto_size
    )
    dataset = make_dataset(
        os.path.join(split, "*"), spec, 64, training=False, num_epochs=1, image=decoding,
        options=InputOptions(device=None),
    )  # fmt: skip
    started, cpu = time.monotonic(), time.process_time()
    images = int(dataset.reduce(tf.constant(0, tf.int64), lambda n, b: n + tf.shape(
        b["image"], out_type=tf.int64)[0]))  # fmt: skip
    seconds = time.monotonic() - started
    print(f"the Trainer's input alone ({decoding.size}x{decoding.size}): ", end="")
    return images / seconds, 1000 * (time.process_time() - cpu) / images


def _print_run(label: str, seconds: float, cpu: float, summary) -> dict:
    costs = {c.node_id: c for c in summary.costs}
    total = sum(c.wall_seconds for c in summary.costs)
    print(f"\n{label}: {seconds:.0f} s wall, {cpu:.0f} CPU s (the process tree)")
    print("| component | wall s | CPU s | share of wall | records/s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for c in summary.costs:
        rate = f"{c.records_per_second:,.0f} {c.records_meaning}" if c.records_per_second else ""
        print(f"| {c.node_id} | {c.wall_seconds:.1f} | {c.cpu_seconds:.1f} "
              f"| {100 * c.wall_seconds / total:.1f}% | {rate} |")  # fmt: skip
    training = summary.training
    trainer = costs.get("Trainer")
    if training and trainer:
        print(f"training: {training.steps:,} steps, {training.examples:,} images "
              f"({training.epochs:.2f} epochs) at {training.examples / trainer.wall_seconds:,.0f}"
              " images/s of the Trainer's wall")  # fmt: skip
    if summary.input_stall is not None:
        print(f"last epoch's input stall: {100 * summary.input_stall:.1f}%")
    accuracy = summary.metrics.get("sparse_categorical_accuracy")
    print(f"accuracy {accuracy:.4f} on {int(summary.metrics['example_count']):,} eval images")
    example_gen = costs.get("ShardedExampleGen")
    if example_gen:
        print(f"ShardedExampleGen: {100 * example_gen.wall_seconds / total:.1f}% of the "
              f"components' wall (target <= 15%)")  # fmt: skip
    return {"stall": summary.input_stall}


def _data_service(work: str) -> tuple[list[subprocess.Popen], str]:
    dispatcher_port, worker_port = _free_port(), _free_port()
    module = [sys.executable, "-m", "tfrecord_pipelines.cli.data_service"]
    log = open(os.path.join(work, "data-service.log"), "w")  # noqa: SIM115 - lives with them
    servers = [
        subprocess.Popen([*module, "dispatcher", "--port", str(dispatcher_port)],
                         stdout=log, stderr=log),
        subprocess.Popen([*module, "worker", "--dispatcher", f"127.0.0.1:{dispatcher_port}",
                          "--port", str(worker_port)], stdout=log, stderr=log),
    ]  # fmt: skip
    time.sleep(20)  # both import TensorFlow before they listen
    return servers, f"127.0.0.1:{dispatcher_port}"


def _race(folder: str, output: str, epochs: int) -> None:
    import glob

    sys.path.insert(0, _HERE)
    from image_input import _SPEC, _files_dataset, _train

    from tfrecord_pipelines.components.trainer import make_dataset
    from tfrecord_pipelines.components.trainer.image_decoding import ImageDecoding

    (split,) = glob.glob(
        f"{output}/pipeline_root/{PIPELINE_NAME}/ShardedExampleGen/examples/*/Split-train"
    )
    images = len(_image_paths(folder))
    batch, size = 64, 64
    steps = images // batch
    decoding = ImageDecoding("image", size=size)
    print(f"\n4. The seeds' race: the pipeline's image network ({size}x{size}), {steps} steps "
          f"of {batch} per epoch ({images:,} images: all of them from the files, the train "
          "split's repeated from the shards), warm page cache")  # fmt: skip
    print("| source | epoch | seconds | input stall | accuracy |")
    print("| --- | ---: | ---: | ---: | ---: |")
    sources = {
        "JPEG files": lambda: _files_dataset(
            os.path.join(folder, "*", "*.jpg"), batch, decoding, True
        ).repeat(),
        "shards (make_dataset)": lambda: make_dataset(
            os.path.join(split, "*"), _SPEC, batch, label_key="label", image=decoding, cache=None
        ),
    }
    last = {}
    for name, make in sources.items():
        for number, epoch in enumerate(_train(make(), steps, decoding, epochs), 1):
            print(f"| {name} | {number} | {epoch['seconds']:.1f} "
                  f"| {100 * epoch['input_stall']:.1f}% | {epoch['accuracy']:.3f} |",
                  flush=True)  # fmt: skip
            last[name] = epoch["seconds"]
    files, shards = last["JPEG files"], last["shards (make_dataset)"]
    print(f"Last epoch: files {files:.1f} s, shards {shards:.1f} s ({files / shards:.2f}x)")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(*sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="output/bench-image-pipeline")
    parser.add_argument("--images", type=int, default=50_000, help="photo-like JPEGs")
    parser.add_argument("--small", type=int, default=5_000, help="the small folder's images")
    parser.add_argument(
        "--epochs", default="1", help="run's --epochs: the training length (default 1 epoch)"
    )
    parser.add_argument("--race-epochs", type=int, default=2)
    parser.add_argument("--skip", action="append", default=[],
                        choices=["ingest", "run", "data-service", "race"])  # fmt: skip
    args = parser.parse_args()
    if not 0 < args.small < args.images:
        parser.error("--small must be between 0 and --images")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, _HERE)
    from photos import write_photos

    work = os.path.abspath(args.work)
    folder = os.path.join(work, "photos")
    if len(_image_paths(folder)) != args.images:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(os.path.join(work, f"photos-{args.small}"), ignore_errors=True)
        print(f"Generating {args.images:,} photo-like JPEGs ...", flush=True)
        write_photos(folder + ".partial", args.images)
        os.rename(folder + ".partial", folder)
    total = sum(os.path.getsize(p) for p in _image_paths(folder))
    print(
        f"{os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}; {args.images:,} JPEGs, "
        f"{total / 1e6:,.0f} MB ({total / args.images / 1024:.1f} KiB each) in {folder}"
    )
    small = _small_folder(folder, args.small, work)
    if "ingest" not in args.skip:
        _ingest(folder, small, work)
    output = os.path.join(work, "run")
    if "run" not in args.skip:
        shutil.rmtree(output, ignore_errors=True)
        print(f"\n2. run with its defaults, --epochs {args.epochs}", flush=True)
        seconds, cpu, summary = _run(folder, output, ["--epochs", args.epochs])
        _print_run("run", seconds, cpu, summary)
        rate, cpu_ms = _input_rate(output)
        print(f"{rate:,.0f} images/s, {cpu_ms:.2f} CPU ms per image")
    if "data-service" not in args.skip:
        servers, address = _data_service(work)
        try:
            print(f"\n3. run --data-service {address} (one worker on this machine)", flush=True)
            seconds, cpu, summary = _run(
                folder, output, ["--epochs", args.epochs, "--data-service", address]
            )
            _print_run("run --data-service", seconds, cpu, summary)
        finally:
            for server in servers:
                server.terminate()
    if "race" not in args.skip:
        _race(folder, output, args.race_epochs)
    print(f"\nGenerated data and runs: {work}")


if __name__ == "__main__":
    main()
