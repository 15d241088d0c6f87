"""A tf.data input pipeline over sharded TFRecord files of tf.Example records.

Usable without TFX: give it file patterns and a feature spec (derive the spec
from a schema with ``feature_spec_from_schema``; never write it by hand).

What it does, and why each step:

1. lists the shard files; when training, reshuffles their order each epoch;
2. interleaves one TFRecord reader per shard, in parallel (tf.data tunes the
   parallelism), so reads of different shards overlap; out of order when
   training, deterministic for evaluation;
3. each reader hands over blocks of ``read_block_size`` consecutive records:
   tf.data's cost per element, not reading, bounds a per-record pipeline
   (benchmarks/input_pipeline.py, 2 cores: 311k against 141k examples/s);
   when training, the blocks are shuffled, still as bytes;
4. rebatches the blocks into batches of serialized records (exactly
   ``batch_size``) and parses each batch with one vectorized
   ``tf.io.parse_example`` in a parallel map: parsing record by record costs
   more than reading CSV;
5. caches the parsed batches in memory or in a file when asked, so later
   epochs skip reading and parsing; batches are then reshuffled each epoch
   (an example keeps its batch-mates across epochs: shuffling single
   examples again would cost more than the cache saves);
6. repeats, and prefetches so the next batches are ready while the model
   computes; onto the GPU when one is present.

With ``image`` (an ``ImageDecoding``), step 4 changes for images: each block
is parsed and its images decoded and resized, blocks in parallel, one image
at a time within a block (decoding each image costs 1-1.3 ms of CPU at
224x224; decoding whole batches with ``tf.map_fn`` ran 1.9-2.5x slower for
the same CPU); an image that does not decode is skipped, logged and
counted, never a crash mid-epoch. The cache then holds the decoded uint8
pixels, so later epochs decode nothing; the decoded blocks are rebatched,
then cropped and flipped (training) a batch at a time after it.

``transform`` runs on each parsed batch or block before the label is taken
out: a tf.Transform graph applied to raw examples, for instance.

With ``data_service``, steps 1-5 (and the image decoding) run on tf.data
service workers, and only step 6 on the trainer (see ``data_service.py``).

Without a cache, records are repeated before the shuffle buffer, so the
last records of one epoch may be shuffled among the first of the next:
count steps, not epochs. A training batch holds runs of ``read_block_size``
records that were consecutive in a shard (as with interleave's
``block_length``); for shards sorted by something the model should not see
together, use smaller blocks, down to 1 (record-level shuffling, slower).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence

import tensorflow as tf

from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.components.trainer import image_stage
from tfrecord_pipelines.components.trainer.data_service import WORKER_READS, DataService, distribute
from tfrecord_pipelines.components.trainer.image_decoding import ImageDecoding
from tfrecord_pipelines.components.trainer.input_options import AUTO, InputOptions

# Shards read at once, at most: enough to hide storage latency on a GPU node
# (object stores included) while each open reader keeps only a small buffer.
MAX_PARALLEL_READS = 64
# Cached batches are reshuffled within a window of this many batches.
CACHED_BATCH_SHUFFLE_WINDOW = 64

FeatureSpec = Mapping[str, tf.io.FixedLenFeature | tf.io.VarLenFeature | tf.io.RaggedFeature]
Features = dict[str, tf.Tensor | tf.SparseTensor | tf.RaggedTensor]


def list_files(file_pattern: str | Sequence[str]) -> list[str]:
    """Returns the sorted files matching one pattern or a list of patterns.

    Raises:
      ValueError: if no pattern is given, or a pattern matches no file.
    """
    patterns = [file_pattern] if isinstance(file_pattern, str) else list(file_pattern)
    if not patterns or not all(patterns):
        raise ValueError(f"file_pattern is empty ({file_pattern!r}): name the TFRecord shards.")
    files = []
    for pattern in patterns:
        # The project's glob: in a bucket, wildcards in folder levels too (Split-*/*.gz).
        matched = filesystem.glob(pattern)
        if not matched:
            raise ValueError(f"No TFRecord files match {pattern!r}.")
        files.extend(matched)
    return sorted(set(files))


def infer_compression(files: Sequence[str]) -> str:
    """Returns "GZIP" if every file ends in .gz, "" if none does.

    Raises:
      ValueError: if some do and some do not.
    """
    gzipped = [f.endswith(".gz") for f in files]
    if all(gzipped):
        return "GZIP"
    if not any(gzipped):
        return ""
    raise ValueError(
        "Some files end in .gz and some do not; pass compression= explicitly or "
        f"read them separately: {files[gzipped.index(True)]}, {files[gzipped.index(False)]}."
    )


def _compression_type(compression: str | None, files: Sequence[str]) -> str:
    """TFRecordDataset's compression type: the one asked for (checked by InputOptions), or
    the files'."""
    if compression is None:
        return infer_compression(files)
    return "" if compression.upper() == "NONE" else compression.upper()


def _default_device() -> str | None:
    # Under a multi-replica strategy Keras distributes the dataset and fetches
    # each replica's batches onto its device itself; a dataset already on a GPU
    # cannot be split.
    if tf.distribute.has_strategy() and tf.distribute.get_strategy().num_replicas_in_sync > 1:
        return None
    gpus = tf.config.list_logical_devices("GPU")
    return gpus[0].name if gpus else None


def make_dataset(
    file_pattern: str | Sequence[str],
    feature_spec: FeatureSpec,
    batch_size: int,
    *,
    training: bool = True,
    label_key: str | None = None,
    num_epochs: int | None = None,
    cache: str | None = None,
    options: InputOptions | None = None,
    transform: Callable[[Features], Features] | None = None,
    image: ImageDecoding | None = None,
    data_service: DataService | None = None,
) -> tf.data.Dataset:
    """Returns a dataset of parsed batches read from TFRecord shards.

    Args:
      file_pattern: a glob pattern or a list of them (local, gs://, s3://).
      feature_spec: feature name → tf.io.FixedLenFeature / VarLenFeature /
        RaggedFeature, as ``tf.io.parse_example`` takes it.
      batch_size: examples per batch (the global batch under a distribution
        strategy).
      training: True: shard order reshuffled each epoch, records shuffled,
        parallel stages free to deliver out of order (faster). False: every
        pass yields the same batches in the same order.
      label_key: if given, elements are ``(features, label)`` with the label
        taken out of the features; otherwise the features dict alone.
      num_epochs: passes over the data; None repeats forever (give Keras
        ``steps_per_epoch``).
      cache: None: no cache, every epoch reads and parses again. "memory":
        keep the parsed batches in memory after the first pass (for data
        that fits). Any other string: a file path prefix on fast local disk
        for a cache that outlives memory; it must not hold a cache of other
        data. The first pass must run to its end for the cache to be kept.
      options: compression, shuffling, read blocks, the last batch, the seed
        and the prefetch device (``input_options.InputOptions``); None: its defaults.
      transform: applied to each batch of parsed features (a dict) before
        the label is taken out, in the parallel parse stage: e.g. a
        ``TFTransformOutput.transform_features_layer()`` over raw examples.
      image: decode this image feature into uint8 pixels (see the module
        docstring); ``cache`` then holds decoded images.
      data_service: read, parse, transform and decode on these tf.data
        service workers; the trainer only prefetches. Training only, without
        ``cache`` (each worker would cache the shards it happened to get).

    Returns:
      A ``tf.data.Dataset`` of feature dicts, or ``(features, label)`` pairs.

    Raises:
      ValueError: if the pattern is empty or matches no file, the compression
        cannot be inferred, batch_size or num_epochs is below 1, label_key (or
        the image feature) is not in feature_spec (checked only without a
        transform), or data_service is given for evaluation, with a cache, or
        for a pipeline that calls Python.
    """
    options = options or InputOptions()
    _check_arguments(
        feature_spec, batch_size, num_epochs, label_key, image, transform, cache, training,
        data_service,
    )  # fmt: skip
    files = list_files(file_pattern)
    batching = _Batching(
        batch_size,
        label_key,
        options,
        training,
        None if not cache else "" if cache == "memory" else _cache_path(cache),
        num_epochs,
    )
    compression = _compression_type(options.compression, files)
    dataset = record_blocks(
        files, compression, options, training=training, on_workers=data_service is not None
    )
    dataset = _repeated_and_shuffled(dataset, batching)
    parse = _parser(feature_spec, transform)
    if image:
        dataset = _decoded_images(dataset, parse, image, batching)
    else:
        dataset = _parsed_batches(dataset, parse, batching)
    return _prefetch(_served(dataset, data_service, num_epochs), options.device)


@dataclasses.dataclass(frozen=True)
class _Batching:
    """How blocks of records become batches (``make_dataset``'s arguments); ``cache_path``
    ``""`` caches in memory, None not at all."""

    batch_size: int
    label_key: str | None
    options: InputOptions
    training: bool
    cache_path: str | None
    num_epochs: int | None

    def split(self, features: Features):
        return split_label(features, self.label_key)


def _repeated_and_shuffled(dataset: tf.data.Dataset, batching: _Batching) -> tf.data.Dataset:
    """Blocks repeated for the epochs (unless cached: the cache repeats) and, when training,
    shuffled as bytes."""
    if batching.cache_path is None:
        # Repeated here, not on the shard list: an endless shard list halved
        # the interleave's throughput (measured: 71k against 110k examples/s).
        dataset = dataset.repeat(batching.num_epochs)
    if batching.training:
        options = batching.options
        blocks = options.shuffle_records(batching.batch_size) // options.read_block_size
        dataset = dataset.shuffle(max(blocks, 2), seed=options.seed)
    return dataset


def _parser(feature_spec: FeatureSpec, transform) -> Callable[[tf.Tensor], Features]:
    """Parses a batch of serialized records with one ``tf.io.parse_example``, then
    ``transform``s it."""
    spec = dict(feature_spec)

    # Plain graph code, not converted by AutoGraph (a transform layer's code with it).
    @tf.autograph.experimental.do_not_convert
    def parse(serialized: tf.Tensor) -> Features:
        features = tf.io.parse_example(serialized, spec)
        return transform(features) if transform else features

    return parse


def _parsed_batches(dataset: tf.data.Dataset, parse, batching: _Batching) -> tf.data.Dataset:
    """Blocks of records rebatched, parsed a batch at a time in parallel, cached when asked."""
    options = batching.options
    dataset = dataset.rebatch(batching.batch_size, drop_remainder=options.drop_remainder)
    dataset = dataset.map(
        lambda serialized: batching.split(parse(serialized)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=not batching.training,
    )
    if batching.cache_path is not None:
        dataset = _cached(
            dataset,
            batching.cache_path,
            training=batching.training,
            seed=options.seed,
            epochs=batching.num_epochs,
        )
    return dataset


def _decoded_images(
    dataset: tf.data.Dataset, parse, image: ImageDecoding, batching: _Batching
) -> tf.data.Dataset:
    """Blocks of records parsed and their images decoded (``image_stage``), then batched."""
    options = batching.options
    return image_stage.decoded_batches(
        dataset,
        parse,
        image,
        batching.batch_size,
        training=batching.training,
        split=batching.split,
        num_epochs=batching.num_epochs,
        cache=batching.cache_path,
        shuffle_buffer_size=options.shuffle_records(batching.batch_size),
        block_size=options.read_block_size,
        drop_remainder=options.drop_remainder,
        seed=options.seed,
    )


def _check_arguments(
    feature_spec: FeatureSpec,
    batch_size: int,
    num_epochs: int | None,
    label_key: str | None,
    image: ImageDecoding | None,
    transform,
    cache: str | None,
    training: bool,
    data_service: DataService | None,
) -> None:
    """``make_dataset``'s argument checks (its Raises)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    if num_epochs is not None and num_epochs < 1:
        raise ValueError(f"num_epochs must be at least 1 or None (forever), got {num_epochs}.")
    for role, key in (("label_key", label_key), ("image feature", image and image.feature)):
        if transform is None and key is not None and key not in feature_spec:
            raise ValueError(
                f"{role} {key!r} is not in the feature spec; it has: "
                f"{', '.join(sorted(feature_spec))}."
            )
    if data_service and (cache or not training):
        raise ValueError(
            "data_service is for training without cache: "
            + (
                f"cache={cache!r} would cache on each worker only the shards it was given."
                if cache
                else "evaluation must see each example once in a fixed order; read it locally."
            )
        )


def record_blocks(
    files: list[str],
    compression_type: str,
    options: InputOptions,
    *,
    training: bool,
    on_workers: bool,
) -> tf.data.Dataset:
    """Blocks of ``read_block_size`` serialized records, read from the shards in parallel
    (the shard order reshuffled each epoch when training)."""
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if training:
        dataset = dataset.shuffle(len(files), seed=options.seed, reshuffle_each_iteration=True)
    return dataset.interleave(
        lambda path: tf.data.TFRecordDataset(path, compression_type=compression_type).batch(
            options.read_block_size
        ),
        cycle_length=min(len(files), WORKER_READS if on_workers else MAX_PARALLEL_READS),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=not training,
    )


def _cached(
    dataset: tf.data.Dataset, path: str, *, training: bool, seed: int | None, epochs: int | None
) -> tf.data.Dataset:
    """The parsed batches cached (in memory for ``""``), shuffled by batch when training."""
    dataset = dataset.cache(path)
    if training:
        dataset = dataset.shuffle(
            CACHED_BATCH_SHUFFLE_WINDOW, seed=seed, reshuffle_each_iteration=True
        )
    return dataset.repeat(epochs)


def _served(
    dataset: tf.data.Dataset, service: DataService | None, num_epochs: int | None
) -> tf.data.Dataset:
    """The dataset from the service's workers, when there is one."""
    if service is None:
        return dataset
    dataset = distribute(dataset, service)
    # With TF 2.16 a job can end early after a worker restarts (measured: up
    # to 6,180 of 6,400 examples never served): an endless input asks for a
    # new job then instead of ending training.
    return dataset.repeat() if num_epochs is None else dataset


def _prefetch(dataset: tf.data.Dataset, device: str | None) -> tf.data.Dataset:
    # prefetch_to_device must stay the last step: nothing may follow it on a GPU.
    dataset = dataset.prefetch(tf.data.AUTOTUNE)
    target = _default_device() if device == AUTO else device
    if target:
        dataset = dataset.apply(tf.data.experimental.prefetch_to_device(target))
    return dataset


def split_label(features: Features, label_key: str | None):
    """Returns ``(features, label)`` with the label taken out, or the features alone."""
    if label_key is None:
        return features
    features = dict(features)
    label = features.pop(label_key)
    return features, label


def _cache_path(prefix: str) -> str:
    folder = os.path.dirname(prefix)
    if folder:
        filesystem.make_folder(folder)
    return prefix


def feature_spec_from_schema(schema) -> dict:
    """Returns the ``tf.io.parse_example`` spec a TFX/TFMD schema describes.

    Args:
      schema: a ``tensorflow_metadata`` Schema proto, or the path of a
        schema.pbtxt (as SchemaGen and ImportSchemaGen write it).
    """
    from google.protobuf import text_format
    from tensorflow_metadata.proto.v0 import schema_pb2
    from tensorflow_transform.tf_metadata import schema_utils

    if isinstance(schema, str):
        with filesystem.open_file(schema) as f:
            schema = text_format.Parse(f.read(), schema_pb2.Schema())
    return schema_utils.schema_as_feature_spec(schema).feature_spec
