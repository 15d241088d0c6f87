"""The TFX Trainer's entry point: trains the model and exports it for serving."""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import os
import tempfile
from collections.abc import Callable

import tensorflow as tf
import tensorflow_transform as tft
from tfx.components.trainer.fn_args_utils import FnArgs

from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.components.task import Task, transformed_name
from tfrecord_pipelines.components.trainer import warm_start
from tfrecord_pipelines.components.trainer.caches import (
    held,
    holds_validation,
    resolve_cache,
    tensor_bytes,
)
from tfrecord_pipelines.components.trainer.data_service import DataService, wait_for_workers
from tfrecord_pipelines.components.trainer.dataset import list_files, make_dataset
from tfrecord_pipelines.components.trainer.image_decoding import ImageDecoding
from tfrecord_pipelines.components.trainer.image_sizing import sample_images
from tfrecord_pipelines.components.trainer.input_stall import InputStallReport
from tfrecord_pipelines.components.trainer.model import build_model
from tfrecord_pipelines.components.trainer.options import CACHE_MEMORY, TrainingOptions
from tfrecord_pipelines.components.trainer.resume import (
    backup_dir,
    epochs_done,
    write_resume_report,
)
from tfrecord_pipelines.components.trainer.signatures import make_signatures
from tfrecord_pipelines.components.trainer.training_length import (
    TrainingLength,
    auto_batch_size,
    plan_training,
    split_records,
    write_training_report,
)
from tfrecord_pipelines.components.trainer.workers import Workers


def choose_strategy(workers: Workers | None = None) -> tf.distribute.Strategy:
    """MultiWorkerMirroredStrategy when several workers train (``TF_CONFIG``);
    MirroredStrategy across the visible GPUs when there are several; else the default."""
    if workers and workers.count > 1:
        # Before anything lists devices: that starts TensorFlow's runtime, after which
        # the strategy can no longer configure the collectives.
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if len(gpus) > 1:
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


@dataclasses.dataclass(frozen=True)
class _Reading:
    """How the Trainer reads its examples."""

    feature_spec: dict
    transform: Callable | None
    image: ImageDecoding | None
    cached_bytes_per_record: int  # what an "auto" cache would hold a record in, roughly


def _reading(
    fn_args: FnArgs,
    task: Task,
    options: TrainingOptions,
    tf_transform_output: tft.TFTransformOutput,
) -> _Reading:
    if options.raw_examples:
        # ExampleGen's records: parse what the model's inputs and label need,
        # then apply the Transform graph in the input pipeline.
        raw_spec = tf_transform_output.raw_feature_spec()
        needed = {*task.model_inputs(raw_spec), task.label}
        spec = {k: v for k, v in raw_spec.items() if k in needed}
        transform = tf_transform_output.transform_features_layer()
        stored_image = task.image_feature
    else:
        spec = tf_transform_output.transformed_feature_spec()
        transform = None
        stored_image = task.image_feature and transformed_name(task.image_feature)
    if not task.image_feature:
        # The cache holds what the model takes: the transformed features and the label.
        return _Reading(
            spec, transform, None, tensor_bytes(tf_transform_output.transformed_feature_spec())
        )
    sample = sample_images(fn_args.train_files, stored_image)
    image = ImageDecoding(
        feature=transformed_name(task.image_feature),
        size=options.image_size or sample.auto_size,
        channels=options.image_channels,
        augment=options.image_augment,
    )
    logging.info(
        "Images: median shorter side %d px in a sample of the train split; the model takes "
        "%dx%dx%d (%s); about %d training images.",
        sample.median_side,
        image.size,
        image.size,
        image.channels,
        "chosen" if options.image_size else "auto",
        sample.estimated_records,
    )
    return _Reading(spec, transform, image, image.decoded_bytes)


def _model_settings(task: Task, options: TrainingOptions, reading: _Reading) -> dict:
    """The settings besides the Transform output that shape the model's weights."""
    image = reading.image
    return {
        "task": task.to_custom_config(),
        "image": [image.size, image.channels, options.image_model] if image else None,
    }


# TFX entry point: the Trainer calls run_fn(fn_args).
def run_fn(fn_args: FnArgs) -> None:
    """Trains on the train split and saves the serving model.

    Reads the examples with ``make_dataset`` (feature spec from the Transform
    output; for raw examples the Transform graph runs in the input pipeline,
    and images are decoded there), trains under MirroredStrategy when several
    GPUs are visible, or MultiWorkerMirroredStrategy when ``TF_CONFIG`` names several
    workers (a TFJob's: each reads its own share of the train shards, worker 0 alone
    writes the model and the reports, the others write to a scratch folder they
    remove), reports the input stall of every epoch (TensorBoard and
    ``input_stall.json`` in the model run folder) and saves the model with
    its serving signatures. Given a ``base_model`` whose inputs and
    vocabularies are this model's, it starts from its weights and trains for
    the new data's share of the steps (``warm_start``).

    Args:
      fn_args: the Trainer's arguments: example files, the Transform output, the base model,
        step counts, output directories and custom_config (which carries the
        ``Task`` and the ``TrainingOptions``).
    """
    task = Task.from_custom_config(fn_args.custom_config)
    options = TrainingOptions.from_custom_config(fn_args.custom_config)
    workers = Workers.from_environment()
    train_files = _own_train_files(fn_args, workers)
    if options.mixed_precision:
        tf.keras.mixed_precision.set_global_policy("mixed_float16")
    strategy = choose_strategy(workers)
    backup = backup_dir(fn_args)
    fn_args, scratch = _outputs_of(fn_args, workers)
    tf_transform_output = tft.TFTransformOutput(fn_args.transform_output)
    reading = _reading(fn_args, task, options, tf_transform_output)
    train_records = split_records(fn_args.train_files)
    batch_size = options.batch_size or auto_batch_size(train_records)
    length = plan_training(
        train_records, batch_size, train_steps=fn_args.train_steps, epochs=options.epochs
    )
    inputs = warm_start.model_inputs(
        tf_transform_output, _model_settings(task, options, reading), list(fn_args.train_files)
    )
    with strategy.scope():
        model = build_model(
            tf_transform_output,
            task,
            image=reading.image,
            image_architecture=options.image_model,
            steps_per_call=options.steps_a_call,
        )
    # The serving model is the trained layers alone, without the training metrics: the
    # weights a warm start loads are this view's.
    serving_model = tf.keras.Model(model.inputs, model.outputs)
    length = _start_from_base_model(fn_args, serving_model, inputs, length, train_records)
    service = _data_service(options)
    # The service's workers read each epoch anew: a cache there would hold only some shards.
    cache = None if service else _cache(options, reading, fn_args, length)
    train, evaluation = _datasets(
        fn_args, train_files, task, reading, options, batch_size, cache, service
    )
    if workers.count > 1:
        train = _without_sharding(train)
    validation = _validation(fn_args, evaluation, options, reading, batch_size, cache, length)
    _log_plan(length, strategy, batch_size, options, cache, validation.in_memory)
    _fit(model, fn_args, train, validation, length.steps, options, service, backup)
    if cache and cache != CACHE_MEMORY:
        filesystem.remove_tree(os.path.dirname(cache))
    _save(serving_model, fn_args.serving_model_dir, tf_transform_output, task, reading, inputs)
    if scratch:
        filesystem.remove_tree(scratch)


def _cache(options: TrainingOptions, reading: _Reading, fn_args: FnArgs, length) -> str | None:
    """``resolve_cache`` for this run's records and its model run folder."""
    return resolve_cache(
        options.cache,
        reading.cached_bytes_per_record,
        os.path.basename(fn_args.model_run_dir),
        length,
    )


def _log_plan(
    length: TrainingLength,
    strategy: tf.distribute.Strategy,
    batch_size: int,
    options: TrainingOptions,
    cache: str | None,
    holding: bool,
) -> None:
    """Logs how the Trainer is about to train: steps, replicas, batch, calls, caches."""
    logging.info(
        "Training %d steps (%s: %d examples, %.2f epochs of the %d-example train split) "
        "with %s on %d replica(s), batch %d, %d steps a call, cache %s, validation batches "
        "%s.",
        length.steps,
        length.asked,
        length.examples,
        length.epochs,
        length.train_records,
        type(strategy).__name__,
        strategy.num_replicas_in_sync,
        batch_size,
        options.steps_a_call,
        cache or "none",
        "held in memory" if holding else "read each epoch",
    )


@dataclasses.dataclass(frozen=True)
class _Validation:
    """What each epoch validates on: the dataset, its steps, and whether its batches are
    held in memory after the first validation."""

    dataset: tf.data.Dataset
    steps: int
    in_memory: bool


def _validation(
    fn_args: FnArgs,
    evaluation: tf.data.Dataset,
    options: TrainingOptions,
    reading: _Reading,
    batch_size: int,
    cache: str | None,
    length: TrainingLength,
) -> _Validation:
    """The Trainer's eval_steps of ``evaluation``, held when ``holds_validation`` says;
    without eval_steps, a pass over the whole eval split each time."""
    eval_steps = fn_args.eval_steps
    eval_batch = options.eval_batch(batch_size)
    holding = holds_validation(
        options.cache,
        reading.cached_bytes_per_record,
        eval_steps * eval_batch if eval_steps else None,
        _epochs(length.steps, options),
        cache,
        length,
    )
    if holding:
        return _Validation(held(evaluation, eval_steps), eval_steps, in_memory=True)
    steps = eval_steps or _whole_split_steps(fn_args, eval_batch)
    return _Validation(evaluation, steps, in_memory=False)


def _whole_split_steps(fn_args: FnArgs, eval_batch: int) -> int:
    """The steps of one pass over the eval split, in batches of ``eval_batch``."""
    records = split_records(fn_args.eval_files)
    steps = max(1, math.ceil(records / eval_batch))
    logging.info(
        "No eval_steps: each validation reads the whole eval split, %d examples in %d steps of %d.",
        records,
        steps,
        eval_batch,
    )
    return steps


def _epochs(steps: int, options: TrainingOptions) -> int:
    """Keras epochs of ``steps``: reporting periods of ``epoch_steps`` (validation, input
    stall, TensorBoard), not passes over the data."""
    return math.ceil(steps / options.epoch_steps)


def _without_sharding(train: tf.data.Dataset) -> tf.data.Dataset:
    """The train split as this worker dealt it out: tf.distribute must not shard it again."""
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return train.with_options(options)


def _save(serving_model, serving_model_dir: str, tf_transform_output, task, reading, inputs):
    """Saves the serving model with its signatures, and what a warm start reads of it."""
    # Without save_traces Keras does not trace every layer's call functions again beside
    # the signatures (4 of the Trainer's 7 CPU-s on a 100-step day); tf.keras loading
    # rebuilds the layers from their configs instead, which every built-in layer has.
    serving_model.save(
        serving_model_dir,
        save_format="tf",
        signatures=make_signatures(serving_model, tf_transform_output, task, reading.image),
        save_traces=False,
    )
    warm_start.save(serving_model, serving_model_dir, inputs)


def _own_train_files(fn_args: FnArgs, workers: Workers) -> list[str]:
    """What this worker trains on: one worker the split's patterns (no look-up per file in a
    bucket); several each their own shards, dealt out before any collective starts: every
    worker sees the same files and refuses alike, none is left waiting for another."""
    if workers.count == 1:
        return list(fn_args.train_files)
    every_file = list_files(fn_args.train_files)
    own = workers.own_files(every_file)
    logging.info(
        "Trainer worker %d of %d%s: %d of the %d train shards.",
        workers.index,
        workers.count,
        " (the chief)" if workers.is_chief else "",
        len(own),
        len(every_file),
    )
    logging.info("Trainer worker %d's train shards: %s", workers.index, " ".join(own))
    return own


def _outputs_of(fn_args: FnArgs, workers: Workers) -> tuple[FnArgs, str | None]:
    """The arguments this worker writes by, and its scratch folder to remove at the end
    (None for the chief): every worker saves (the save runs collectives), the chief alone
    where it counts."""
    if workers.is_chief:
        return fn_args, None
    scratch = tempfile.mkdtemp(prefix=f"trainer-worker-{workers.index}-")
    own = copy.copy(fn_args)
    own.serving_model_dir = os.path.join(scratch, "serving_model")
    own.model_run_dir = os.path.join(scratch, "model_run")
    return own, scratch


def _start_from_base_model(fn_args: FnArgs, serving_model, inputs, length, train_records: int):
    """Loads the base model's weights when they fit (``warm_start``); returns the training
    length: steps asked for are trained as asked, a plan from the data's size shrinks to
    the new data's share when the model starts from one that saw the rest."""
    base = warm_start.read_base_inputs(fn_args.base_model)
    new_files = warm_start.new_train_files(base, fn_args.train_files)
    warm = warm_start.plan(
        fn_args.base_model,
        base,
        inputs,
        split_records(new_files) if len(new_files) < len(fn_args.train_files) else train_records,
        train_records,
    )
    warm = warm_start.load(serving_model, warm)
    from_scratch = length.steps
    if length.asked != "train_steps":
        length = dataclasses.replace(length, steps=warm.steps(from_scratch))
    warm_start.write_report(fn_args.model_run_dir, warm, length.steps, from_scratch)
    logging.info("Warm start: %s (%s).", "yes" if warm.weights else "no", warm.reason)
    write_training_report(fn_args.model_run_dir, length)
    if length.epochs < 1 and not warm.weights:
        logging.warning(
            "Training on %d examples, %.0f%% of the %d-example train split: part of the data "
            "is never seen. Train longer with epochs (--epochs) or more train_steps.",
            length.examples,
            100 * length.epochs,
            length.train_records,
        )
    return length


def _data_service(options: TrainingOptions) -> DataService | None:
    """The tf.data service that reads the training input, once its workers registered."""
    if not options.data_service:
        return None
    service = DataService(options.data_service)
    workers = wait_for_workers(service)
    logging.info(
        "Training input from the tf.data service at %s: %d worker(s) registered, "
        "sharding %s; evaluation reads locally.",
        service.address,
        len(workers),
        service.sharding,
    )
    return service


def _datasets(
    fn_args: FnArgs,
    train_files: list[str],
    task: Task,
    reading: _Reading,
    options: TrainingOptions,
    batch_size: int,
    cache: str | None,
    service: DataService | None,
):
    """The train and evaluation datasets (``make_dataset``)."""
    common = dict(
        feature_spec=reading.feature_spec,
        label_key=transformed_name(task.label),
        transform=reading.transform,
        image=reading.image,
    )
    train = make_dataset(
        train_files,
        batch_size=batch_size,
        training=True,
        cache=cache,
        data_service=service,
        **common,
    )
    evaluation = make_dataset(
        fn_args.eval_files,
        batch_size=options.eval_batch(batch_size),
        training=False,
        # Without eval_steps each validation is one pass: repeated, its last batch would
        # be topped up from the split's start.
        num_epochs=None if fn_args.eval_steps else 1,
        **common,
    )
    return train, evaluation


def _fit(
    model,
    fn_args: FnArgs,
    train,
    validation: _Validation,
    steps: int,
    options: TrainingOptions,
    service: DataService | None,
    backup: str,
) -> None:
    """Trains ``steps`` steps, going on from an interrupted execution's backup in ``backup``
    if one is there, reporting every ``options.epoch_steps`` (``validation``, input
    stall, TensorBoard)."""
    epochs = _epochs(steps, options)
    steps_per_epoch = math.ceil(steps / epochs)
    resumed_epochs = epochs_done(backup)
    if resumed_epochs:
        logging.info(
            "Resuming from %s: %d of %d epochs (%d steps) were done by an interrupted execution.",
            backup,
            resumed_epochs,
            epochs,
            resumed_epochs * steps_per_epoch,
        )
    write_resume_report(fn_args.model_run_dir, backup, resumed_epochs * steps_per_epoch)
    model.fit(
        train,
        epochs=epochs,
        steps_per_epoch=steps_per_epoch,
        validation_data=validation.dataset,
        validation_steps=validation.steps,
        callbacks=[
            # First, so that the epoch it restores is the one the others see.
            tf.keras.callbacks.BackupAndRestore(backup),
            tf.keras.callbacks.TensorBoard(log_dir=fn_args.model_run_dir),
            InputStallReport(
                fn_args.model_run_dir, data_service=service, steps_per_call=options.steps_a_call
            ),
        ],
        verbose=2,
    )
