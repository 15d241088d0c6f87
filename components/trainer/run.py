"""The TFX Trainer's entry point: trains the model and exports it for serving."""

from __future__ import annotations

import logging
import math
import os

import tensorflow as tf
import tensorflow_transform as tft
from tfx import v1 as tfx

from components.task import Task, transformed_name
from components.trainer.dataset import list_files, make_dataset
from components.trainer.input_stall import InputStallReport
from components.trainer.model import build_model
from components.trainer.options import (
    AUTO_CACHE_MAX_FILE_BYTES,
    CACHE_AUTO,
    CACHE_MEMORY,
    CACHE_NONE,
    TrainingOptions,
)
from components.trainer.signatures import make_signatures


def choose_strategy() -> tf.distribute.Strategy:
    """MirroredStrategy across the visible GPUs when there are several; else the default."""
    gpus = tf.config.list_logical_devices("GPU")
    if len(gpus) > 1:
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def _resolve_cache(cache: str, train_files: list[str], run_id: str) -> str | None:
    """Turns the cache option into make_dataset's cache argument for this run."""
    if cache == CACHE_NONE:
        return None
    if cache == CACHE_MEMORY:
        return CACHE_MEMORY
    if cache == CACHE_AUTO:
        size = sum(tf.io.gfile.stat(f).length for f in list_files(train_files))
        return CACHE_MEMORY if size < AUTO_CACHE_MAX_FILE_BYTES else None
    # A folder: each run caches in its own sub-folder, so no run reads another's cache.
    return os.path.join(cache, run_id, "train")


# TFX entry point: the Trainer calls run_fn(fn_args).
def run_fn(fn_args: tfx.components.FnArgs) -> None:
    """Trains on the transformed train split and saves the serving model.

    Reads the transformed examples with ``make_dataset`` (feature spec from
    the Transform output), trains under MirroredStrategy when several GPUs
    are visible, reports the input stall of every epoch (TensorBoard and
    ``input_stall.json`` in the model run folder) and saves the model with
    its serving signatures.

    Args:
      fn_args: the Trainer's arguments: transformed example files, the
        Transform output, step counts, output directories and custom_config
        (which carries the ``Task`` and the ``TrainingOptions``).
    """
    task = Task.from_custom_config(fn_args.custom_config)
    options = TrainingOptions.from_custom_config(fn_args.custom_config)
    if options.mixed_precision:
        tf.keras.mixed_precision.set_global_policy("mixed_float16")
    strategy = choose_strategy()
    tf_transform_output = tft.TFTransformOutput(fn_args.transform_output)
    feature_spec = tf_transform_output.transformed_feature_spec()
    label_key = transformed_name(task.label)
    cache = _resolve_cache(
        options.cache, fn_args.train_files, os.path.basename(fn_args.model_run_dir)
    )
    train = make_dataset(
        fn_args.train_files,
        feature_spec,
        options.batch_size,
        training=True,
        label_key=label_key,
        cache=cache,
    )
    evaluation = make_dataset(
        fn_args.eval_files,
        feature_spec,
        options.eval_batch_size,
        training=False,
        label_key=label_key,
    )
    epochs = math.ceil(fn_args.train_steps / options.epoch_steps)
    logging.info(
        "Training %d steps (%d epochs) with %s on %d replica(s), batch %d, cache %s.",
        fn_args.train_steps,
        epochs,
        type(strategy).__name__,
        strategy.num_replicas_in_sync,
        options.batch_size,
        cache or "none",
    )
    with strategy.scope():
        model = build_model(tf_transform_output, task)
    model.fit(
        train,
        epochs=epochs,
        steps_per_epoch=math.ceil(fn_args.train_steps / epochs),
        validation_data=evaluation,
        validation_steps=fn_args.eval_steps,
        callbacks=[
            tf.keras.callbacks.TensorBoard(log_dir=fn_args.model_run_dir),
            InputStallReport(fn_args.model_run_dir),
        ],
        verbose=2,
    )
    if cache and cache != CACHE_MEMORY:
        tf.io.gfile.rmtree(os.path.dirname(cache))
    # The serving model is the trained layers alone, without the training metrics.
    serving_model = tf.keras.Model(model.inputs, model.outputs)
    serving_model.save(
        fn_args.serving_model_dir,
        save_format="tf",
        signatures=make_signatures(serving_model, tf_transform_output, task),
    )
