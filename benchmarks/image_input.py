"""Images from individual JPEG files against the same images as sharded TFRecords.

Generates JPEGs of 224x224 (real JPEG encoding of varied drawn content, 10
classes, one folder per class), converts them with ShardedExampleGen (the
pipeline's defaults: uncompressed shards, at least 10; and once with GZIP
for the size and read cost), then in one run measures:

1. images/s and CPU per image, cold page cache and warm, of
   (a) tf.data over the files: list, read, decode, resize, parallel map, batch, prefetch;
   (b) the shards through ``make_dataset`` with its image decoding stage;
   and reading alone, without decoding, for both (I/O against decode);
2. the simulated accelerator's waiting share (benchmarks/input_pipeline.py's
   consumer: a step that sleeps, overlapping the next batch) fed by (a) and (b);
3. a short real training of the pipeline's image network from (a) and (b):
   wall time per epoch and the input stall.

Both readers decode with the same code (``ImageDecoding``), so only the
storage differs. Not a test: it prints figures and ratios measured in one run.

    .venv/bin/python benchmarks/image_input.py --work output/bench-images
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import statistics
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
sys.path.insert(0, _HERE)

import numpy as np  # noqa: E402 - the environment above must be set first
import tensorflow as tf  # noqa: E402
from input_pipeline import _consume_on_accelerator, _count, _raw_ceiling  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from tfrecord_pipelines.components.example_gen.convert import convert  # noqa: E402
from tfrecord_pipelines.components.example_gen.settings import ExampleGenSettings  # noqa: E402
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions  # noqa: E402
from tfrecord_pipelines.components.trainer import InputOptions, make_dataset  # noqa: E402
from tfrecord_pipelines.components.trainer.image_decoding import ImageDecoding  # noqa: E402
from tfrecord_pipelines.components.trainer.image_model import image_features  # noqa: E402
from tfrecord_pipelines.components.trainer.input_stall import InputStallModel  # noqa: E402
from tfrecord_pipelines.local.beam_args import local_beam_args  # noqa: E402

# Batches stay on the host: the benchmark's consumer stands in for the accelerator.
ON_HOST = InputOptions(device=None)

CLASSES = 10
SIDE = 224
_SPEC = {
    "image": tf.io.FixedLenFeature([1], tf.string),
    "label": tf.io.FixedLenFeature([1], tf.int64),
}


def _draw(rng: np.random.Generator, label: int) -> bytes:
    """A JPEG of a noisy gradient with shapes whose hue depends on the class."""
    ramp = np.linspace(0, 1, SIDE)[None, :, None]
    base = rng.integers(0, 256, 3) * (1 - ramp) + rng.integers(0, 256, 3) * ramp
    image = Image.fromarray(np.broadcast_to(base, (SIDE, SIDE, 3)).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    hue = np.array([label * 25 % 256, 255 - label * 20, (label * 97) % 256])
    for _ in range(rng.integers(3, 8)):
        x, y = rng.integers(0, SIDE, 2)
        w, h = rng.integers(10, 90, 2)
        colour = tuple(int(c) for c in np.clip(hue + rng.integers(-30, 30, 3), 0, 255))
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape([int(x), int(y), int(x + w), int(y + h)], fill=colour)
    noisy = np.asarray(image, np.int16) + rng.normal(0, 6, (SIDE, SIDE, 3)).astype(np.int16)
    buffer = io.BytesIO()
    Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def _generate(folder: str, count: int) -> list[str]:
    rng = np.random.default_rng(7)
    paths = []
    for i in range(count):
        label = i % CLASSES
        os.makedirs(os.path.join(folder, f"class{label}"), exist_ok=True)
        path = os.path.join(folder, f"class{label}", f"{i:06d}.jpg")
        with open(path, "wb") as f:
            f.write(_draw(rng, label))
        paths.append(path)
    return paths


def _evict(paths: list[str]) -> str:
    """Drops the files from the page cache; returns how."""
    os.sync()
    with contextlib.suppress(OSError), open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("1\n")
        return "drop_caches"
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return "posix_fadvise(DONTNEED) per file"


def _files_dataset(pattern: str, batch_size: int, decoding: ImageDecoding | None, training: bool):
    """The per-file pipeline; without ``decoding`` it only reads."""
    classes = tf.constant([f"class{i}" for i in range(CLASSES)])

    def load(path):
        parts = tf.strings.split(path, os.sep)
        label = tf.argmax(tf.cast(tf.equal(classes, parts[-2]), tf.int64))
        encoded = tf.io.read_file(path)
        if decoding is None:
            return {"image": encoded}, label
        pixels = decoding.finish(decoding.decode(encoded)[None], training=training)[0]
        return {decoding.feature: pixels}, label

    files = tf.data.Dataset.list_files(pattern, shuffle=training)
    return (
        files.map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=not training)
        .batch(batch_size)
        .prefetch(tf.data.AUTOTUNE)
    )


def _timed(make, evict_paths: list[str] | None, repeats: int) -> tuple[float, float]:
    """Median images/s and CPU ms per image of reading ``make()`` once, cache cold or warm."""
    rates, cpus = [], []
    for _ in range(repeats):
        if evict_paths is not None:
            _evict(evict_paths)
        else:
            _count(make())  # warm the page cache
        cpu = time.process_time()
        images, seconds = _count(make())
        cpus.append(1000 * (time.process_time() - cpu) / images)
        rates.append(images / seconds)
    return statistics.median(rates), statistics.median(cpus)


def _train(dataset, steps: int, decoding: ImageDecoding, epochs: int) -> list[dict]:
    """Trains the pipeline's image network; returns seconds and input stall per epoch."""
    pixels = tf.keras.Input(
        shape=(decoding.size, decoding.size, decoding.channels), dtype=tf.uint8, name="image"
    )
    outputs = tf.keras.layers.Dense(CLASSES, activation="softmax")(image_features(pixels, "resnet"))
    model = InputStallModel(inputs={"image": pixels}, outputs=outputs)
    model.compile(tf.keras.optimizers.Adam(1e-3), "sparse_categorical_crossentropy", ["accuracy"])
    timings = []

    class Clock(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.started = time.monotonic()

        def on_epoch_end(self, epoch, logs=None):
            timings.append(
                {
                    "seconds": time.monotonic() - self.started,
                    "input_stall": float(logs["input_stall"]),
                    "accuracy": float(logs["accuracy"]),
                }
            )

    model.fit(dataset, epochs=epochs, steps_per_epoch=steps, callbacks=[Clock()], verbose=0)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="output/bench-images", help="folder for generated data")
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--size", type=int, default=224, help="decoded side for the read tests")
    parser.add_argument("--train-size", type=int, default=64, help="model side for training")
    parser.add_argument("--train-epochs", type=int, default=2)
    parser.add_argument("--starvation-batches", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3, help="median of this many runs")
    args = parser.parse_args()
    tf.get_logger().setLevel("ERROR")
    if args.images < CLASSES * 40:
        parser.error(f"--images must be at least {CLASSES * 40}")
    shutil.rmtree(args.work, ignore_errors=True)
    folder = os.path.join(args.work, "jpegs")
    started = time.monotonic()
    paths = _generate(folder, args.images)
    jpeg_bytes = sum(os.path.getsize(p) for p in paths)
    print(
        f"{os.cpu_count()} CPUs; TensorFlow {tf.__version__}; {args.images:,} JPEGs of "
        f"{SIDE}x{SIDE}, {jpeg_bytes / args.images / 1024:.1f} KiB each, written in "
        f"{time.monotonic() - started:.0f} s; batch {args.batch_size}; median of "
        f"{args.repeats} runs",
        flush=True,
    )
    shards = {}
    for compression in ("none", "gzip"):
        dest = os.path.join(args.work, f"shards-{compression}")
        started, cpu = time.monotonic(), time.process_time()
        settings = ExampleGenSettings(
            source_format="images",
            sharding=ShardingOptions(num_readers=10),
            compression=compression,
        )
        report = convert(
            folder, dest, settings, splits={"train": 1}, beam_pipeline_args=local_beam_args()
        ).to_json()
        seconds = time.monotonic() - started
        split = report["splits"]["train"]
        shards[compression] = (os.path.join(dest, "Split-train", "*"), split)
        print(
            f"ShardedExampleGen ({compression}): {split['records']:,} records in "
            f"{len(split['shards'])} shards, {split['bytes'] / 2**20:.1f} MiB, "
            f"{seconds:.0f} s ({split['records'] / seconds:.0f} images/s, "
            f"{1000 * (time.process_time() - cpu) / split['records']:.2f} ms CPU each)",
            flush=True,
        )
    plain, gzip = shards["none"][1]["bytes"], shards["gzip"][1]["bytes"]
    print(f"GZIP shards: {100 * (1 - gzip / plain):.1f}% smaller than uncompressed")

    files_glob = os.path.join(folder, "*", "*.jpg")
    shard_glob, _ = shards["none"]
    gzip_glob, _ = shards["gzip"]
    shard_paths = sorted(tf.io.gfile.glob(shard_glob)) + sorted(tf.io.gfile.glob(gzip_glob))
    every_path = paths + shard_paths
    how = _evict(every_path)
    decoding = ImageDecoding("image", size=args.size, augment=())
    batch = args.batch_size
    readers = {
        "(a) files: read + decode": lambda: _files_dataset(files_glob, batch, decoding, False),
        "(b) shards, make_dataset: read + decode": lambda: make_dataset(
            shard_glob, _SPEC, batch, training=False, num_epochs=1, image=decoding, options=ON_HOST
        ),
        "(b) GZIP shards, make_dataset: read + decode": lambda: make_dataset(
            gzip_glob, _SPEC, batch, training=False, num_epochs=1, image=decoding, options=ON_HOST
        ),
        "(c) files: read only": lambda: _files_dataset(files_glob, batch, None, False),
        "(c) shards: read only": lambda: _raw_ceiling(shard_glob, batch, ""),
        "(c) GZIP shards: read only": lambda: _raw_ceiling(gzip_glob, batch, "GZIP"),
    }
    print(
        f"\nReading all {args.images:,} images once, decoded to {args.size}x{args.size}x3 "
        f"(cold: page cache dropped with {how} before each run)"
    )
    print("| reader | cold images/s | cold CPU ms/image | warm images/s | warm CPU ms/image |")
    print("| --- | ---: | ---: | ---: | ---: |")
    rates = {}
    for name, make in readers.items():
        cold = _timed(make, every_path, args.repeats)
        warm = _timed(make, None, args.repeats)
        rates[name] = (cold, warm)
        print(
            f"| {name} | {cold[0]:,.0f} | {cold[1]:.3f} | {warm[0]:,.0f} | {warm[1]:.3f} |",
            flush=True,
        )
    for i, label in ((0, "cold"), (1, "warm")):
        a = rates["(a) files: read + decode"][i]
        b = rates["(b) shards, make_dataset: read + decode"][i]
        ra, rb = rates["(c) files: read only"][i], rates["(c) shards: read only"][i]
        print(
            f"{label}: shards/files {b[0] / a[0]:.2f}x images/s decoded ({a[1] / b[1]:.2f}x "
            f"less CPU per image), {rb[0] / ra[0]:.2f}x read only ({ra[1] / rb[1]:.2f}x less CPU)"
        )

    # Starvation: both readers feed the simulated accelerator, training-style
    # (endless, shuffled, cropped), the step equal to make_dataset's time per batch.
    train_decoding = ImageDecoding("image", size=args.size)
    per_batch = batch / rates["(b) shards, make_dataset: read + decode"][1][0]

    def files_training():
        return _files_dataset(files_glob, batch, train_decoding, True).repeat()

    def shards_training():
        return make_dataset(
            shard_glob, _SPEC, batch, label_key="label", image=train_decoding, options=ON_HOST
        )

    print(
        f"\nStarvation: a simulated accelerator step (a sleep) per batch of {batch}, "
        f"overlapping the next batch; {args.starvation_batches} steps after warm-up; warm cache"
    )
    print("| step | files: accelerator waits | shards (make_dataset): accelerator waits |")
    print("| ---: | ---: | ---: |")
    for factor in (1.0, 2.0):
        step = factor * per_batch
        shares = []
        for make in (files_training, shards_training):
            waiting, total, _ = _consume_on_accelerator(make(), step, args.starvation_batches)
            shares.append(100 * waiting / total)
        print(f"| {1000 * step:.0f} ms | {shares[0]:.1f}% | {shares[1]:.1f}% |", flush=True)

    # A short real training from each: the pipeline's small ResNet.
    model_decoding = ImageDecoding("image", size=args.train_size)
    steps = args.images // batch
    print(
        f"\nTraining the pipeline's image network ({args.train_size}x{args.train_size}, "
        f"{steps} steps of {batch} per epoch, {args.train_epochs} epochs), warm cache"
    )
    print("| source | epoch | seconds | CPU s | input stall | accuracy |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    sources = {
        "files": lambda: _files_dataset(files_glob, batch, model_decoding, True).repeat(),
        "shards (make_dataset)": lambda: make_dataset(
            shard_glob, _SPEC, batch, label_key="label", image=model_decoding, cache=None
        ),
    }
    epoch_seconds = {}
    for name, make in sources.items():
        cpu = time.process_time()
        epochs = _train(make(), steps, model_decoding, args.train_epochs)
        cpu_per_epoch = (time.process_time() - cpu) / len(epochs)
        epoch_seconds[name] = epochs[-1]["seconds"]
        for number, epoch in enumerate(epochs, 1):
            print(
                f"| {name} | {number} | {epoch['seconds']:.1f} | {cpu_per_epoch:.1f} (mean) "
                f"| {100 * epoch['input_stall']:.1f}% | {epoch['accuracy']:.3f} |",
                flush=True,
            )
    print(
        f"Last epoch: files {epoch_seconds['files']:.1f} s, shards "
        f"{epoch_seconds['shards (make_dataset)']:.1f} s "
        f"({epoch_seconds['files'] / epoch_seconds['shards (make_dataset)']:.2f}x)"
    )
    print(f"\nGenerated data: {os.path.abspath(args.work)}")


if __name__ == "__main__":
    main()
