"""Beam's source transforms: a source plan's units as Beam elements, converted by its converter.

The converters (``csv_source.BlockConverter``, ``parquet_source.RowGroupConverter``,
``image_source.ImageConverter``) know nothing of an engine: each turns a unit
of input into ``(split, [serialized tf.Example])`` batches and
QuarantineRecords. Here Beam gets the batches on its main output and the
QuarantineRecords on ``QUARANTINE_TAG``; the Spark engine (``spark/``) runs
the same converters in its tasks.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable

import apache_beam as beam

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.data_source import IMAGES, PARQUET
from tfrecord_pipelines.components.example_gen.csv_blocks import plan_blocks
from tfrecord_pipelines.components.example_gen.image_source import CHECK_BATCH
from tfrecord_pipelines.components.example_gen.parquet_source import plan_row_groups
from tfrecord_pipelines.components.example_gen.quarantine import QUARANTINE_TAG, QuarantineRecord
from tfrecord_pipelines.components.example_gen.sources import SourcePlan, list_input_files


def tag_quarantine(outputs: Iterable):
    """Yields the outputs, QuarantineRecords tagged for Beam's quarantine output."""
    for output in outputs:
        if isinstance(output, QuarantineRecord):
            yield beam.pvalue.TaggedOutput(QUARANTINE_TAG, output)
        else:
            yield output


class _ConvertUnits(beam.DoFn):
    """Runs a converter on each element (a CSV block, a row group, a batch of images)."""

    def __init__(self, converter):
        self._converter = converter

    def setup(self):
        # TensorFlow and Beam leave millions of long-lived objects; every full
        # garbage collection walks them all. Frozen objects are skipped.
        gc.freeze()
        self._converter.setup()

    def process(self, unit):
        yield from tag_quarantine(self._converter.convert(unit))


class _ConvertImages(beam.DoFn):
    """Runs an image converter's queue across a bundle's batches of files.

    Files are read and checked ahead on threads while earlier ones become
    records (``image_source.ConversionQueue``); the queue runs from the
    bundle's first batch to its last, so both cores stay busy between
    batches, and the last files' outputs come at the bundle's end.
    """

    def __init__(self, converter):
        self._converter = converter

    def setup(self):
        gc.freeze()  # see _ConvertUnits
        self._converter.setup()

    def start_bundle(self):
        self._queue = self._converter.queue()

    def process(self, files):
        self._queue.add(files)
        yield from tag_quarantine(self._queue.ready())

    def finish_bundle(self):
        window = beam.transforms.window.GlobalWindow()
        for output in tag_quarantine(self._queue.drain()):
            if isinstance(output, beam.pvalue.TaggedOutput):
                yield beam.pvalue.TaggedOutput(
                    output.tag, beam.utils.windowed_value.WindowedValue(output.value, 0, [window])
                )
            else:
                yield beam.utils.windowed_value.WindowedValue(output, 0, [window])

    def teardown(self):
        queue = getattr(self, "_queue", None)
        if queue is not None:
            queue.close()


def _plan_units(source_format: str, block_bytes: int):
    if source_format == PARQUET:
        return lambda path: tag_quarantine(plan_row_groups(path))
    return lambda path: plan_blocks(path, block_bytes)


@beam.ptransform_fn
def ReadSource(pipeline: beam.Pipeline, plan: SourcePlan):  # noqa: N802 - Beam transforms are named like classes
    """Reads a source plan's files; returns ``{"examples": ..., QUARANTINE_TAG: ...}``.

    ``examples`` holds ``(split_name, [serialized tf.Example])`` elements,
    ``quarantine`` QuarantineRecords. Tabular files are cut into units (CSV
    blocks, row groups) by the workers; images are read in batches.
    """
    # Listed again in the pipeline: a Create of 50,000 images' paths is pickled
    # and compressed into the job's description many times (0.13 ms of CPU per image).
    files = (
        pipeline
        | "Input" >> beam.Create([(plan.source_format, plan.input_base, plan.pattern)])
        | "ListFiles" >> beam.FlatMapTuple(list_input_files)
    )
    quarantines = []
    if plan.source_format == IMAGES:
        # Batched before the shuffle: a Beam element per file cost more than its conversion.
        units = (
            files
            | "Batch" >> beam.BatchElements(min_batch_size=CHECK_BATCH, max_batch_size=CHECK_BATCH)
            | "Distribute" >> beam.Reshuffle()
        )
        convert = _ConvertImages(plan.converter)
    else:
        planned = files | "PlanUnits" >> beam.FlatMap(
            _plan_units(plan.source_format, plan.block_bytes)
        ).with_outputs(QUARANTINE_TAG, main="units")
        quarantines.append(planned[QUARANTINE_TAG])
        units = planned.units | "Distribute" >> beam.Reshuffle()
        convert = _ConvertUnits(plan.converter)
    converted = units | "Convert" >> beam.ParDo(convert).with_outputs(
        QUARANTINE_TAG, main=keys.EXAMPLES_TAG
    )
    quarantines.append(converted[QUARANTINE_TAG])
    quarantine = quarantines | "Quarantine" >> beam.Flatten()
    return {keys.EXAMPLES_TAG: converted.examples, QUARANTINE_TAG: quarantine}
