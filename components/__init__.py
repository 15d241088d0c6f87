"""Reusable TFX components and the module code they run: ``tfrecord_pipelines.components``.

Each sub-package holds one pipeline stage's code, importable on its own so
that other pipelines can reuse it:

- ``tfrecord_pipelines.components.task``: the learning task (label column, problem kind) shared by
  Transform and Trainer through their ``custom_config``.
- ``tfrecord_pipelines.components.transform``: the tf.Transform ``preprocessing_fn``.
- ``tfrecord_pipelines.components.trainer``: the Keras model and the Trainer's ``run_fn``.
"""

if __name__ != "tfrecord_pipelines.components":
    # Imported by its folder's name (from the repository's root): the same files
    # under a second name would be second copies of every module and class.
    raise ImportError(
        f"{__name__!r} is a folder of tfrecord-pipelines, not an import name: use "
        "tfrecord_pipelines.components"
    )
