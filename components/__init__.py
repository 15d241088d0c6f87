"""Reusable TFX components and the module code they run.

Each sub-package holds one pipeline stage's code, importable on its own so
that other pipelines can reuse it:

- ``components.task``: the learning task (label column, problem kind) shared by
  Transform and Trainer through their ``custom_config``.
- ``components.transform``: the tf.Transform ``preprocessing_fn``.
- ``components.trainer``: the Keras model and the Trainer's ``run_fn``.
"""
