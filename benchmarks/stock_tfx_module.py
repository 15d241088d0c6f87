"""The stock TFX pipeline's module file (benchmarks/stock_tfx_pipeline.py).

The same preprocessing and model as the project's, so that only the pipeline
around them differs: the Trainer reads Transform's materialized examples
with TFX's own ``data_accessor.tf_dataset_factory``, as TFX's templates do.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_transform as tft
from tfx import v1 as tfx
from tfx_bsl.public import tfxio

from tfrecord_pipelines.components.task import Task, transformed_name
from tfrecord_pipelines.components.trainer.input_stall import InputStallReport
from tfrecord_pipelines.components.trainer.model import build_model
from tfrecord_pipelines.components.trainer.signatures import make_signatures
from tfrecord_pipelines.components.transform.preprocessing import (  # noqa: F401 - Transform's
    preprocessing_fn,
)

EPOCH_STEPS = 200
# custom_config key of the batch size (the project's run gives the one it chose).
BATCH_SIZE_KEY = "batch_size"


def run_fn(fn_args: tfx.components.FnArgs) -> None:
    """Trains fn_args.train_steps batches on the transformed examples; saves the model."""
    task = Task.from_custom_config(fn_args.custom_config)
    transform_output = tft.TFTransformOutput(fn_args.transform_output)
    label = transformed_name(task.label)
    batch_size = fn_args.custom_config[BATCH_SIZE_KEY]

    def dataset(files):
        return fn_args.data_accessor.tf_dataset_factory(
            files,
            tfxio.TensorFlowDatasetOptions(batch_size=batch_size, label_key=label),
            transform_output.transformed_metadata.schema,
        ).repeat()

    model = build_model(transform_output, task)
    epochs = max(1, fn_args.train_steps // EPOCH_STEPS)
    model.fit(
        dataset(fn_args.train_files),
        epochs=epochs,
        steps_per_epoch=fn_args.train_steps // epochs,
        validation_data=dataset(fn_args.eval_files),
        validation_steps=fn_args.eval_steps,
        callbacks=[InputStallReport(fn_args.model_run_dir)],
        verbose=2,
    )
    serving_model = tf.keras.Model(model.inputs, model.outputs)
    serving_model.save(
        fn_args.serving_model_dir,
        save_format="tf",
        signatures=make_signatures(serving_model, transform_output, task, None),
    )
