"""The TFX Trainer's entry point: trains the model and exports it for serving."""

from __future__ import annotations

import tensorflow as tf
import tensorflow_transform as tft
from tfx import v1 as tfx
from tfx_bsl.public import tfxio

from components.task import Task, transformed_name
from components.trainer.model import build_model
from components.trainer.signatures import make_signatures

TRAIN_BATCH_SIZE = 64
EVAL_BATCH_SIZE = 64


def _dataset(
    file_pattern: list[str],
    data_accessor: tfx.components.DataAccessor,
    tf_transform_output: tft.TFTransformOutput,
    task: Task,
    batch_size: int,
) -> tf.data.Dataset:
    return data_accessor.tf_dataset_factory(
        file_pattern,
        tfxio.TensorFlowDatasetOptions(
            batch_size=batch_size, label_key=transformed_name(task.label)
        ),
        tf_transform_output.transformed_metadata.schema,
    ).repeat()


# TFX entry point: the Trainer calls run_fn(fn_args).
def run_fn(fn_args: tfx.components.FnArgs) -> None:
    """Trains on the transformed train split and saves the serving model.

    Args:
      fn_args: the Trainer's arguments: transformed example files, the
        Transform output, step counts, output directories and custom_config
        (which carries the ``Task``).
    """
    task = Task.from_custom_config(fn_args.custom_config)
    tf_transform_output = tft.TFTransformOutput(fn_args.transform_output)
    train = _dataset(
        fn_args.train_files, fn_args.data_accessor, tf_transform_output, task, TRAIN_BATCH_SIZE
    )
    evaluation = _dataset(
        fn_args.eval_files, fn_args.data_accessor, tf_transform_output, task, EVAL_BATCH_SIZE
    )
    model = build_model(tf_transform_output, task)
    model.fit(
        train,
        steps_per_epoch=fn_args.train_steps,
        validation_data=evaluation,
        validation_steps=fn_args.eval_steps,
        callbacks=[tf.keras.callbacks.TensorBoard(log_dir=fn_args.model_run_dir)],
        verbose=2,
    )
    model.save(
        fn_args.serving_model_dir,
        save_format="tf",
        signatures=make_signatures(model, tf_transform_output, task),
    )
