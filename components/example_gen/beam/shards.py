"""Beam's spill and shard writing: the engine-neutral steps of ``spill`` and
``sharded_writer`` as DoFns and a transform.

Each bundle spills its records to files (``SpillRecords``); the split is
measured (``_MeasureSplit``) and planned; each bundle deals its spill files to
one piece per shard (``_WritePieces``); each shard's pieces are joined by one
worker (``_MergeShard``).
"""

from __future__ import annotations

import os
import uuid

import apache_beam as beam

from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions, ShardPlan
from tfrecord_pipelines.components.example_gen.sharded_writer import (
    PieceWriter,
    add_to_measure,
    merge_pieces,
    new_measure,
    pieces_dir,
    plan_split,
    temp_shard_name,
    write_outcome,
)
from tfrecord_pipelines.components.example_gen.spill import Spilled, SpillWriter, remove_spilled
from tfrecord_pipelines.components.example_gen.split_assignment import SplitRecords
from tfrecord_pipelines.components.storage import filesystem


class SpillRecords(beam.DoFn):
    """Beam's spill: one ``SpillWriter`` per bundle; emits a ``Spilled`` per file."""

    def __init__(self, spill_dir: str):
        self._spill_dir = spill_dir

    def start_bundle(self):
        self._writer = SpillWriter(self._spill_dir, uuid.uuid4().hex)

    def process(self, element: SplitRecords):
        self._writer.add(element.split, element.records)

    def finish_bundle(self):
        for spilled in self._writer.close():
            yield beam.utils.windowed_value.WindowedValue(
                spilled, 0, [beam.transforms.window.GlobalWindow()]
            )


class _MeasureSplit(beam.CombineFn):
    """Counts records and bytes, merging the samples that measure compression."""

    def create_accumulator(self):
        return new_measure()

    def add_input(self, acc, spilled: Spilled):
        return add_to_measure(acc, spilled.records, spilled.bytes, spilled.sample)

    def merge_accumulators(self, accumulators):
        merged = new_measure()
        for measure in accumulators:
            add_to_measure(merged, *measure)
        return merged

    def extract_output(self, acc):
        return acc


class _WritePieces(beam.DoFn):
    """Beam's pieces: one PieceWriter per bundle; each spill file is removed once read."""

    def __init__(self, pieces_dir: str, compression: str):
        self._pieces_dir = pieces_dir
        self._compression = compression

    def start_bundle(self):
        self._writer = PieceWriter(self._pieces_dir, self._compression, uuid.uuid4().hex)

    def process(self, spilled: Spilled, plan: ShardPlan):
        self._writer.write(spilled.path, plan)
        remove_spilled(spilled.path)

    def finish_bundle(self):
        for piece in self._writer.close():
            yield beam.utils.windowed_value.WindowedValue(
                piece, 0, [beam.transforms.window.GlobalWindow()]
            )


class _MergeShard(beam.DoFn):
    """Joins a shard's pieces, byte for byte, into its shard file."""

    def __init__(self, split_dir: str, compression: str):
        self._split_dir = split_dir
        self._compression = compression

    def process(self, element):
        index, pieces = element
        filesystem.make_folder(self._split_dir)
        path = os.path.join(self._split_dir, temp_shard_name(index, self._compression))
        yield {"index": index, "path": path, "records": merge_pieces(pieces, path, remove=True)}


@beam.ptransform_fn
def WriteShardedTFRecords(  # noqa: N802 - Beam transforms are named like classes
    records: beam.PCollection,
    split_dir: str,
    outcome_path: str,
    options: ShardingOptions,
    compression: str,
):
    """Writes one split's spilled records as planned shards into split_dir.

    The shard files keep temporary names until ``finalize_split`` runs; the
    plan and each shard's record count go to outcome_path (JSON).
    """
    plan = (
        records
        | "Measure" >> beam.CombineGlobally(_MeasureSplit())
        | "Plan" >> beam.Map(plan_split, options, compression)
    )
    plan_view = beam.pvalue.AsSingleton(plan)
    return (
        records
        | "WritePieces" >> beam.ParDo(_WritePieces(pieces_dir(split_dir), compression), plan_view)
        | "GroupByShard" >> beam.GroupByKey()
        | "MergeShard" >> beam.ParDo(_MergeShard(split_dir, compression))
        | "Collect" >> beam.combiners.ToList()
        | "WriteOutcome" >> beam.Map(write_outcome, plan_view, outcome_path)
    )
