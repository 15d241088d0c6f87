"""Trainer module code: the input pipeline, the Keras model, ``run_fn``.

``tfrecord_pipelines.components.trainer.make_dataset`` is the project's tf.data input pipeline
over sharded TFRecords; it needs only TensorFlow, so other pipelines can
reuse it, tuned by an ``InputOptions``. ``feature_spec_from_schema`` derives
its feature spec from a schema. ``DataService`` moves its work onto tf.data
service workers.
"""

__all__ = ["DataService", "InputOptions", "feature_spec_from_schema", "make_dataset"]


def __getattr__(name: str):
    # Loaded on first use: the options module is imported by the CLI, which
    # should not pay for TensorFlow's import to validate its arguments.
    if name == "DataService":
        from tfrecord_pipelines.components.trainer.data_service import DataService

        return DataService
    if name == "InputOptions":
        from tfrecord_pipelines.components.trainer.input_options import InputOptions

        return InputOptions
    if name in __all__:
        from tfrecord_pipelines.components.trainer import dataset

        return getattr(dataset, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
