"""Spark's shard stage: spilled records dealt to their planned shards, then joined.

The driver plans each split's shards from the spill files' counts, sizes
and samples (``sharded_writer.plan_split``, as on Beam). One task per spill
file writes one compressed piece per shard (``sharded_writer.PieceWriter``);
one task per shard joins that shard's pieces byte for byte
(``sharded_writer.merge_pieces``). Pieces and merged shards are named by
their task's attempt, and only the paths the successful attempts return are
used, so a retried task replaces, never joins, a failed one's output.
"""

from __future__ import annotations

import collections
import os

from tfrecord_pipelines.components.example_gen.shard_plan import ShardPlan
from tfrecord_pipelines.components.example_gen.sharded_writer import (
    TEMP_SHARD_PREFIX,
    PieceWriter,
    merge_pieces,
    pieces_dir,
    temp_shard_name,
)
from tfrecord_pipelines.components.example_gen.spark.tasks import run_tasks
from tfrecord_pipelines.components.example_gen.spill import Spilled
from tfrecord_pipelines.components.storage import filesystem


def _attempt() -> str:
    from pyspark import TaskContext

    return f"a{TaskContext.get().attemptNumber()}"


def _write_pieces(job: tuple[str, str, str, ShardPlan, str]):
    split, split_dir, spill_path, plan, compression = job
    name = f"{os.path.basename(spill_path).removesuffix('.tfrecord')}-{_attempt()}"
    writer = PieceWriter(pieces_dir(split_dir), compression, name)
    writer.write(spill_path, plan)
    return [(split, shard, piece) for shard, piece in writer.close()]


def _merge_shard(job: tuple[str, str, int, list[tuple[str, int]], str]):
    split, split_dir, index, pieces, compression = job
    filesystem.make_folder(split_dir)
    path = os.path.join(split_dir, f"{temp_shard_name(index, compression)}.{_attempt()}")
    return split, {
        "index": index,
        "path": path,
        "records": merge_pieces(pieces, path, remove=False),
    }


def write_shards(
    spark,
    spilled: list[Spilled],
    plans: dict[str, ShardPlan | None],
    split_dirs: dict[str, str],
    compression: str,
) -> dict[str, list[dict]]:
    """Writes each split's planned shards; returns its merged shards by split.

    Returns:
      ``{split: [{"index", "path", "records"}, ...]}``, shard files under their
      temporary names in the split's folder, for ``sharded_writer.write_outcome``.
    """
    jobs = [
        (s.split, split_dirs[s.split], s.path, plans[s.split], compression)
        for s in spilled
        if s.records
    ]
    shards: dict[str, list[dict]] = {name: [] for name in split_dirs}
    if not jobs:
        return shards
    written = run_tasks(spark, jobs, _write_pieces, "ShardedExampleGen: write shard pieces")
    by_shard = collections.defaultdict(list)
    for split, shard, piece in (piece for pieces in written for piece in pieces):
        by_shard[(split, shard)].append(piece)
    merges = [
        (split, split_dirs[split], shard, pieces, compression)
        for (split, shard), pieces in sorted(by_shard.items())
    ]
    for split, shard in run_tasks(
        spark, merges, _merge_shard, "ShardedExampleGen: join pieces into shards"
    ):
        shards[split].append(shard)
    kept = {shard["path"] for merged in shards.values() for shard in merged}
    for split_dir in split_dirs.values():
        _remove_failed_attempts(split_dir, kept)
    return shards


def _remove_failed_attempts(split_dir: str, kept: set[str]) -> None:
    """Removes merged shards of attempts Spark did not keep (a killed executor's, say)."""
    if not filesystem.exists(split_dir):
        return
    for name in filesystem.listdir(split_dir):
        path = os.path.join(split_dir, name)
        if name.startswith(TEMP_SHARD_PREFIX) and path not in kept:
            filesystem.remove(path)
