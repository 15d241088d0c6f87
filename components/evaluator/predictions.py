"""The eval rows through the model's signatures, a batch at a time.

What TFMA's extractors get example by example, here for whole batches of
serialized records: the serving signature's predictions, the label through
the model's own Transform signature, and the raw values of the features the
metrics are sliced by.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from tfrecord_pipelines.components.trainer.dataset import infer_compression, record_blocks
from tfrecord_pipelines.components.trainer.input_options import InputOptions

BATCH_SIZE = 1024
_KINDS = {"bytes_list": tf.string, "int64_list": tf.int64, "float_list": tf.float32}


def read_batches(files: Sequence[str], batch_size: int = BATCH_SIZE) -> tf.data.Dataset:
    """Batches of serialized records from the files, read in parallel, in a fixed order.

    Read as the Trainer reads its shards, each file in blocks: an interleave
    of single records costs about 7 µs of CPU a record in tf.data's threads,
    four times the reading itself (docs/benchmarks/pipeline-scale.md).
    """
    return record_blocks(
        list(files),
        infer_compression(files),
        InputOptions(read_block_size=batch_size),
        training=False,
        on_workers=False,
    ).prefetch(tf.data.AUTOTUNE)


def _prediction(outputs, prediction_key: str) -> tf.Tensor:
    """The predictions among the signature's outputs, as TFMA picks them."""
    if not isinstance(outputs, dict):
        return outputs
    if prediction_key in outputs:
        return outputs[prediction_key]
    if len(outputs) != 1:
        raise ValueError(
            f"The serving signature returns {len(outputs)} outputs ({', '.join(outputs)}); "
            "give the model spec a prediction_key."
        )
    return next(iter(outputs.values()))


class ModelScorer:
    """A saved model's predictions and transformed labels for batches of raw records."""

    def __init__(
        self,
        model_path: str,
        signature: str,
        label_key: str,
        transform: str,
        prediction_key: str = "",
    ):
        loaded = tf.saved_model.load(model_path)
        self._loaded = loaded  # the signatures' variables live as long as it does
        self._serve = loaded.signatures[signature]
        self._transform = loaded.signatures[transform]
        self._label_key = label_key
        self._prediction_key = prediction_key
        self.predictions: list[np.ndarray] = []
        self.labels: list[np.ndarray] = []

    def score(self, serialized: tf.Tensor) -> None:
        """Adds one batch's predictions and labels."""
        outputs = self._serve(examples=serialized)
        predictions = _prediction(outputs, self._prediction_key).numpy()
        labels = self._transform(examples=serialized)[self._label_key].numpy()
        self.predictions.append(predictions)
        self.labels.append(labels.reshape(len(predictions), -1)[:, 0])


def _feature_kind(serialized: np.ndarray, name: str) -> tf.DType | None:
    for record in serialized:
        feature = tf.train.Example.FromString(record).features.feature.get(name)
        if feature is not None and feature.WhichOneof("kind"):
            return _KINDS[feature.WhichOneof("kind")]
    return None


class SliceValues:
    """The distinct values of each slicing feature in each row, as TFMA's slicer sees them."""

    def __init__(self, features: Sequence[str]):
        self._features = list(features)
        self._kinds: dict[str, tf.DType] = {}
        self._rows = 0
        # feature -> value -> row indices
        self.rows_by_value: dict[str, dict[object, list[np.ndarray]]] = {
            f: {} for f in self._features
        }

    def add(self, serialized: tf.Tensor) -> None:
        """Adds one batch of records."""
        pending = [f for f in self._features if f not in self._kinds]
        records = serialized.numpy() if pending else None
        for name in pending:
            kind = _feature_kind(records, name)
            if kind is not None:
                self._kinds[name] = kind
        spec = {f: tf.io.VarLenFeature(self._kinds[f]) for f in self._features if f in self._kinds}
        parsed = tf.io.parse_example(serialized, spec) if spec else {}
        for name, sparse in parsed.items():
            rows = (sparse.indices.numpy()[:, 0] + self._rows).tolist()
            by_value = self.rows_by_value[name]
            # One slice per distinct value of a row (np.unique in TFMA's accessor).
            batch: dict[object, list[int]] = {}
            for row, value in sorted(set(zip(rows, sparse.values.numpy().tolist(), strict=True))):
                batch.setdefault(value, []).append(row)
            for value, value_rows in batch.items():
                by_value.setdefault(_slice_value(value), []).append(np.array(value_rows))
        self._rows += int(serialized.shape[0])

    def slices(self) -> list[tuple[tuple, np.ndarray]]:
        """(TFMA slice key, row indices) of every value of every feature."""
        found = []
        for name in self._features:
            for value, parts in sorted(self.rows_by_value[name].items(), key=lambda kv: kv[0]):
                found.append((((name, value),), np.concatenate(parts)))
        if any(name not in self._kinds for name in self._features):
            missing = [name for name in self._features if name not in self._kinds]
            logging.info("No eval row has %s: no slices of them.", ", ".join(missing))
        return found


def _slice_value(value):
    # TFMA's slicer turns bytes into text and keeps numbers as Python numbers.
    return value.decode("utf-8") if isinstance(value, bytes) else value
