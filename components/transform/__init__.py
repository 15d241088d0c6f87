"""tf.Transform module code: the ``preprocessing_fn`` TFX's Transform runs."""

from tfrecord_pipelines.components.transform.preprocessing import preprocessing_fn

__all__ = ["preprocessing_fn"]
