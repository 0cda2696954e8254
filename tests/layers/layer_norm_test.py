"""LayerNorm equals keras.layers.LayerNormalization in outputs and gradients, fused (static shapes) or not."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.layers.layer_norm import LayerNorm


def _pair(shape, epsilon=1e-12):
    ours, theirs = LayerNorm(epsilon=epsilon), keras.layers.LayerNormalization(epsilon=epsilon)
    for layer in (ours, theirs):
        layer.build(shape)
    rng = np.random.default_rng(0)
    for variable, other in zip(ours.weights, theirs.weights):
        value = rng.normal(1.0 if "gamma" in variable.path else 0.0, 0.3, variable.shape).astype("float32")
        variable.assign(value)
        other.assign(value)
    return ours, theirs


def _outputs_and_gradients(layer, x, dy):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = tf.reduce_sum(y * dy)
    return [y] + tape.gradient(loss, [x] + layer.trainable_weights)


@pytest.mark.parametrize("shape", [(6, 16), (2, 5, 16)])
@pytest.mark.parametrize("static", [True, False])
def test_matches_keras_layer_normalization(shape, static):
    ours, theirs = _pair(shape)
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(0.5, 2.0, shape).astype("float32"))
    dy = tf.constant(rng.normal(size=shape).astype("float32"))
    if static:
        got = _outputs_and_gradients(ours, x, dy)
    else:  # unknown shapes at trace time: TensorFlow's ops, not the XLA kernels
        spec = tf.TensorSpec([None] * len(shape), tf.float32)
        got = tf.function(lambda a, b: _outputs_and_gradients(ours, a, b), input_signature=[spec, spec])(x, dy)
    want = _outputs_and_gradients(theirs, x, dy)
    for name, a, b in zip(("y", "dx", "dgamma", "dbeta"), got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=name)


def test_gradient_is_right_in_float64():
    x = tf.constant(np.random.default_rng(2).normal(size=(3, 7)), tf.float64)
    gamma = tf.constant(np.linspace(0.5, 1.5, 7), tf.float64)
    beta = tf.constant(np.linspace(-1, 1, 7), tf.float64)
    from bert_tf.layers.layer_norm import layer_norm

    theoretical, numerical = tf.test.compute_gradient(
        lambda a, g, b: layer_norm(a, g, b, tf.constant(1e-6, tf.float64)), [x, gamma, beta]
    )
    for t, n in zip(theoretical, numerical):
        np.testing.assert_allclose(t, n, atol=1e-6)


def test_other_configurations_fall_back_to_keras():
    layer = LayerNorm(axis=0, epsilon=1e-6)
    x = tf.constant(np.random.default_rng(3).normal(size=(4, 3)).astype("float32"))
    reference = keras.layers.LayerNormalization(axis=0, epsilon=1e-6)
    np.testing.assert_allclose(layer(x), reference(x), atol=1e-6)
