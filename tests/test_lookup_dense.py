"""LookupDense is Dense over the one-hot concatenation of its inputs, gradients included."""

import numpy as np
import pytest
import tensorflow as tf

from tfrecord_pipelines.components.trainer.lookup_dense import LookupDense

WIDTHS = [None, 5, None, 1001]


def _inputs(rows: int = 8):
    rng = np.random.default_rng(3)
    return [
        tf.constant(rng.normal(size=(rows, 2)), tf.float32),
        tf.constant(rng.integers(0, 5, (rows, 1))),
        tf.constant(rng.normal(size=(rows, 1)), tf.float32),
        tf.constant(rng.integers(0, 1001, (rows, 1))),
    ]


def _dense_twin(layer: LookupDense, inputs) -> tuple[tf.Tensor, tf.Variable]:
    """The same layer as a Dense kernel over the one-hot concatenation, in input order."""
    tables, rows = iter(layer.tables), []
    kernel = iter(tf.split(layer.kernel, [2, 1]))
    for width in WIDTHS:
        rows.append(next(kernel) if width is None else next(tables))
    kernel = tf.Variable(tf.concat(rows, 0))
    encoded = [
        x if width is None else tf.one_hot(x[:, 0], width)
        for x, width in zip(inputs, WIDTHS, strict=True)
    ]
    return tf.concat(encoded, 1), kernel


def test_it_computes_the_dense_layer_over_one_hots_and_its_gradients():
    inputs = _inputs()
    layer = LookupDense(4, WIDTHS, activation="relu")
    layer(inputs)
    layer.bias.assign([0.1, -0.2, 0.3, 0.0])
    concatenated, kernel = _dense_twin(layer, inputs)
    with tf.GradientTape(persistent=True) as tape:
        looked_up = layer(inputs)
        multiplied = tf.nn.relu(concatenated @ kernel + layer.bias)
        loss, twin_loss = tf.reduce_sum(looked_up**2), tf.reduce_sum(multiplied**2)
    np.testing.assert_allclose(looked_up, multiplied, rtol=1e-5, atol=1e-6)
    assert (looked_up.numpy() > 0).any() and (looked_up.numpy() == 0).any()

    twin = tape.gradient(twin_loss, kernel).numpy()
    table_gradient = tape.gradient(loss, layer.tables[1])
    # Dense, as Dense's kernel's: MultiWorkerMirroredStrategy all-reduces it whatever the
    # workers' batch sizes (a sparse one fails there).
    assert isinstance(table_gradient, tf.Tensor)
    np.testing.assert_allclose(table_gradient, twin[2 + 5 + 1 :], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tape.gradient(loss, layer.tables[0]), twin[2:7], rtol=1e-5)
    np.testing.assert_allclose(
        tape.gradient(loss, layer.kernel), np.concatenate([twin[:2], twin[7:8]]), rtol=1e-5
    )


def test_its_weights_are_scaled_as_dense_over_the_whole_concatenation():
    layer = LookupDense(64, [None, 1000])
    layer([tf.zeros([1, 140]), tf.zeros([1, 1], tf.int64)])
    limit = np.sqrt(6 / (140 + 1000 + 64))
    weights = np.concatenate([layer.kernel.numpy().ravel(), layer.tables[0].numpy().ravel()])
    assert np.abs(weights).max() <= limit
    assert np.abs(weights).max() > 0.95 * limit
    # Each weight drawn apart: one Keras initializer gives the same values every call.
    twins = LookupDense(4, [None, 1])
    twins([tf.zeros([1, 1]), tf.zeros([1, 1], tf.int64)])
    assert not np.allclose(twins.kernel, twins.tables[0])


def test_it_runs_in_mixed_precision_and_reloads_from_a_saved_model(tmp_path):
    inputs = [tf.keras.Input((1,)), tf.keras.Input((1,), dtype=tf.int64)]
    half = LookupDense(3, [None, 7], dtype=tf.keras.mixed_precision.Policy("mixed_float16"))
    assert half([tf.ones([2, 1]), tf.constant([[1], [6]], tf.int64)]).dtype == tf.float16
    model = tf.keras.Model(inputs, LookupDense(3, [None, 7], activation="relu")(inputs))
    batch = [tf.constant([[0.5], [-1.0]]), tf.constant([[2], [6]], tf.int64)]
    # As the Trainer saves it: without traces, rebuilt from its config.
    model.save(tmp_path / "model", save_traces=False)
    reloaded = tf.keras.models.load_model(tmp_path / "model")
    assert isinstance(reloaded.layers[-1], LookupDense)
    np.testing.assert_allclose(reloaded(batch), model(batch))
    # One input alone, as the image model's output layer takes its features.
    index = tf.keras.Input((1,), dtype=tf.int64)
    alone = tf.keras.Model(index, LookupDense(2, [7])(index))
    alone.save(tmp_path / "alone", save_traces=False)
    np.testing.assert_allclose(
        tf.keras.models.load_model(tmp_path / "alone")(batch[1]), alone(batch[1])
    )


def test_an_index_out_of_its_width_fails_the_step_on_a_cpu():
    layer = LookupDense(2, [4])
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"indices\[1\] = 4 is not in \[0, 4\)"
    ):
        layer([tf.constant([[3], [4]], tf.int64)])


@pytest.mark.parametrize(
    ("units", "widths", "message"),
    [
        (0, [None], "units must be at least 1, got 0"),
        (2, [], r"one_hot_widths must be one entry per input.*got \[\]"),
        (2, [None, 0], r"each None or at least 1; got \[None, 0\]"),
    ],
)
def test_bad_settings_are_refused_in_one_line(units, widths, message):
    with pytest.raises(ValueError, match=message):
        LookupDense(units, widths)


def test_inputs_must_match_the_widths():
    with pytest.raises(ValueError, match="LookupDense got 1 inputs for 2 widths"):
        LookupDense(2, [None, 3])([tf.zeros([1, 1])])
