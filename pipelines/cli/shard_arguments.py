"""The shard options of run, compile, submit and convert, and the argument types they use."""

from __future__ import annotations

import argparse

from tfrecord_pipelines.cli.usage import UsageError
from tfrecord_pipelines.components.example_gen.shard_compression import parse_compression
from tfrecord_pipelines.components.example_gen.shard_plan import (
    DEFAULT_NUM_READERS,
    DEFAULT_TARGET_SHARD_BYTES,
    parse_size,
    requested_sharding,
)


def compression_argument(text: str) -> str:
    """Checks a --compression value for argparse (gzip, gzip:LEVEL or none)."""
    try:
        parse_compression(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def size_argument(text: str) -> int:
    """Checks a byte size for argparse (128MiB, 64KiB, 1GB, 4096) and returns its bytes."""
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def positive_int_argument(text: str) -> int:
    """Checks a count for argparse: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number.") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}.")
    return value


def add_sharding_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds --shard-size, --num-shards and --readers (``shard_plan.requested_sharding``)."""
    parser.add_argument(
        "--shard-size",
        type=size_argument,
        help=f"target bytes per shard file, e.g. 64MiB (default: "
        f"{DEFAULT_TARGET_SHARD_BYTES // 2**20}MiB, raised to --readers shards)",
    )
    parser.add_argument(
        "--num-shards",
        type=positive_int_argument,
        help="shards per split, instead of a target size",
    )
    parser.add_argument(
        "--readers",
        type=positive_int_argument,
        help="parallel readers of the data: each split gets at least this many shards, "
        f"data allowing (default: {DEFAULT_NUM_READERS}, unless --shard-size or "
        "--num-shards is set: what is set wins)",
    )


def sharding_from_args(args: argparse.Namespace):
    """The ShardingOptions the sharding arguments ask for.

    Raises:
      UsageError: if both --shard-size and --num-shards are given.
    """
    try:
        return requested_sharding(args.shard_size, args.num_shards, args.readers)
    except ValueError as e:
        raise UsageError(f"--shard-size and --num-shards: {e}") from None
