"""A Dense layer over one-hot categories that looks their rows up instead of multiplying.

A Dense layer over one-hot vectors multiplies mostly by zeros: a category of
1,001 values (a vocabulary of 1,000 and its out-of-vocabulary bucket) makes
a [batch, 1001] input and a 1001 x units product, forward and again for the
gradient, at every step. The product's result is the kernel's row at the
category's index. ``LookupDense`` computes that row directly (a gather) and
its gradient by adding the batch's rows into the table's shape. The gradient
stays dense, as Dense's kernel's: a sparse one (an Embedding's) fails
MultiWorkerMirroredStrategy's all-reduce when the workers' batches differ in
rows (tests/test_trainer_across_workers.py), and saved at most 7% in a
trial here. It is the same function as
``Dense(units)(concatenate(one_hots + others))``, initialized the same way
(Glorot uniform over the whole fan-in), so a model trains to the same
accuracy, at a cost that grows far slower with a vocabulary's size (Adam's
update of the table remains): on this machine, 1,000 steps of 256 beside
11 floats and categories of 6, 21 and 101 values took 2.21 CPU-s with a
fourth of 1,001 values multiplied and 1.16 looked up; 25.9 against 6.7 with
one of 20,001 (``benchmarks/first_layer.py``,
docs/benchmarks/trainer-step.md).

Its inputs are indices from Transform's vocabularies, whose out-of-vocabulary
bucket keeps every index below the width; on a CPU an index out of range
fails the step, on a GPU it looks up zeros, as ``tf.one_hot`` gives.

A saved model's signatures need nothing of this module; reloading the Keras
model itself (``tf.keras.models.load_model``) needs it imported first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import tensorflow as tf


def _listed(inputs) -> list:
    """The inputs as a list: one input comes bare (a Keras model reloaded from a SavedModel
    calls a layer of one input with it alone, whatever it was traced with)."""
    return list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]


@tf.custom_gradient
def _rows(table: tf.Tensor, indices: tf.Tensor):
    """``table``'s rows at ``indices``, with the gradient of a one-hot product: dense."""

    def gradient(upstream):
        rows = tf.shape(table, out_type=indices.dtype)[0]
        return tf.math.unsorted_segment_sum(upstream, indices, rows), None

    return tf.gather(table, indices), gradient


# Registered so that a saved model holding it reloads with tf.keras.models.load_model once
# this module is imported: the Trainer saves without traces, so Keras rebuilds layers from
# their configs.
@tf.keras.utils.register_keras_serializable(package="tfrecord_pipelines")
class LookupDense(tf.keras.layers.Layer):
    """``Dense(units, activation)`` over the concatenation of its inputs, each index input
    standing for its one-hot vector.

    Args:
      units: the layer's outputs.
      one_hot_widths: one entry per input, in the order ``call`` takes them (a list, or
        one input alone: give it bare, as a reloaded Keras model passes it): the one-hot
        width of an input of [batch, 1] integer indices, or None for an input of
        [batch, n] numbers, taken as they are.
      activation: as Dense's.
    """

    def __init__(self, units: int, one_hot_widths: Sequence[int | None], activation=None, **kwargs):
        super().__init__(**kwargs)
        if units < 1:
            raise ValueError(f"units must be at least 1, got {units}")
        widths = list(one_hot_widths)
        bad = [w for w in widths if w is not None and w < 1]
        if not widths or bad:
            raise ValueError(
                f"one_hot_widths must be one entry per input, each None or at least 1; got {widths}"
            )
        self.units = units
        self.one_hot_widths = widths
        self.activation = tf.keras.activations.get(activation)

    def build(self, input_shape):
        shapes = [tf.TensorShape(s) for s in _listed(input_shape)]
        if len(shapes) != len(self.one_hot_widths):
            raise ValueError(
                f"LookupDense got {len(shapes)} inputs for {len(self.one_hot_widths)} widths"
            )
        numbers = sum(
            int(s[-1]) for s, w in zip(shapes, self.one_hot_widths, strict=True) if w is None
        )
        fan_in = numbers + sum(w for w in self.one_hot_widths if w is not None)
        # Dense's Glorot uniform over the whole concatenation: the same weights' scale.
        limit = math.sqrt(6.0 / (fan_in + self.units))

        def weight(name: str, rows: int) -> tf.Variable:
            # An initializer each: Keras gives one instance the same values every call.
            initializer = tf.keras.initializers.RandomUniform(-limit, limit)
            return self.add_weight(name, [rows, self.units], initializer=initializer)

        self.kernel = weight("kernel", numbers) if numbers else None
        self.tables = [
            weight(f"table_{i}", width)
            for i, width in enumerate(self.one_hot_widths)
            if width is not None
        ]
        self.bias = self.add_weight("bias", [self.units], initializer="zeros")
        super().build(input_shape)

    def call(self, inputs):
        inputs = _listed(inputs)
        numbers = [x for x, w in zip(inputs, self.one_hot_widths, strict=True) if w is None]
        indices = [x for x, w in zip(inputs, self.one_hot_widths, strict=True) if w is not None]
        terms = [
            _rows(tf.convert_to_tensor(table), x[:, 0])
            for table, x in zip(self.tables, indices, strict=True)
        ]
        if numbers:
            x = tf.concat([tf.cast(n, self.compute_dtype) for n in numbers], axis=-1)
            terms.append(tf.matmul(x, self.kernel))
        # Keras reads the variables in the compute dtype within call: every term is in it.
        outputs = tf.nn.bias_add(tf.add_n(terms), self.bias)
        return self.activation(outputs)

    def compute_output_shape(self, input_shape):
        return tf.TensorShape(_listed(input_shape)[0])[:-1].concatenate([self.units])

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "one_hot_widths": self.one_hot_widths,
            "activation": tf.keras.activations.serialize(self.activation),
        }
