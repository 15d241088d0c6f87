"""GZIP or no compression: size on disk and read speed of the same TFRecord shards.

Takes a folder of GZIP shards (for example ``Split-train`` written by
``python -m tfrecord_pipelines convert``), writes an uncompressed copy of each shard,
and reads both with tf.data (sequentially, then 4 shards interleaved in
parallel), in one run. Not a test: it prints figures.

    .venv/bin/python benchmarks/compression.py output/bench/sharded/Split-train
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402 - the environment above must be set first


def _read(files: list[str], compression: str, parallel: bool) -> tuple[int, float]:
    if parallel:
        dataset = tf.data.Dataset.from_tensor_slices(files).interleave(
            lambda f: tf.data.TFRecordDataset(f, compression_type=compression),
            cycle_length=4,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=False,
        )
    else:
        dataset = tf.data.TFRecordDataset(files, compression_type=compression)
    started = time.monotonic()
    count = 0
    for batch in dataset.batch(4096).prefetch(2):
        count += int(batch.shape[0])
    return count, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("split_dir", help="folder of .gz TFRecord shards")
    args = parser.parse_args()
    gzip_files = sorted(glob.glob(os.path.join(args.split_dir, "*.gz")))
    if not gzip_files:
        sys.exit(f"error: no .gz shards in {args.split_dir}")
    plain_dir = args.split_dir.rstrip("/") + "-uncompressed"
    shutil.rmtree(plain_dir, ignore_errors=True)
    os.makedirs(plain_dir)
    plain_files = []
    for path in gzip_files:
        target = os.path.join(plain_dir, os.path.basename(path)[: -len(".gz")])
        with tf.io.TFRecordWriter(target) as writer:
            for record in tf.data.TFRecordDataset(path, compression_type="GZIP"):
                writer.write(record.numpy())
        plain_files.append(target)

    print("| compression | MiB on disk | read | records/s | MB/s (on disk) |")
    print("| --- | ---: | --- | ---: | ---: |")
    rates = {}
    for name, files, compression in (("gzip", gzip_files, "GZIP"), ("none", plain_files, "")):
        size = sum(os.path.getsize(f) for f in files)
        for parallel in (False, True):
            count, seconds = _read(files, compression, parallel)
            mode = "4 interleaved" if parallel else "sequential"
            rates[name, parallel] = count / seconds
            print(
                f"| {name} | {size / 2**20:,.0f} | {mode} | {count / seconds:,.0f} "
                f"| {size / seconds / 1e6:,.0f} |"
            )
    gzip_mib = sum(os.path.getsize(f) for f in gzip_files) / 2**20
    plain_mib = sum(os.path.getsize(f) for f in plain_files) / 2**20
    print(f"\nuncompressed / gzip size: {plain_mib / gzip_mib:.2f}x")
    for parallel in (False, True):
        mode = "interleaved" if parallel else "sequential"
        print(
            f"uncompressed / gzip read speed ({mode}): "
            f"{rates['none', parallel] / rates['gzip', parallel]:.2f}x"
        )
    shutil.rmtree(plain_dir)


if __name__ == "__main__":
    main()
