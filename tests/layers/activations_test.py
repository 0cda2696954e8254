"""The GELUs with written-out gradients equal the formulas and their automatic derivatives."""

import math

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import ACTIVATIONS
from bert_tf.layers import gelu_erf, gelu_tanh, get_activation


def _erf_reference(x):
    return 0.5 * x * (1.0 + tf.math.erf(x / math.sqrt(2.0)))


def _tanh_reference(x):
    return 0.5 * x * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))


@pytest.mark.parametrize(
    "ours, reference", [(gelu_erf, _erf_reference), (gelu_tanh, _tanh_reference)], ids=["erf", "tanh"]
)
@pytest.mark.parametrize("dtype, atol", [(tf.float64, 1e-12), (tf.float32, 1e-6)])
def test_value_and_gradient_match_automatic_differentiation(ours, reference, dtype, atol):
    x = tf.constant(np.concatenate([np.linspace(-8, 8, 401), [0.0, -1e-3, 1e-3, 30.0, -30.0]]), dtype)
    upstream = tf.constant(np.random.default_rng(0).normal(size=x.shape), dtype)
    grads = []
    for fn in (ours, reference):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        grads.append((y, tape.gradient(y, x, output_gradients=upstream)))
    np.testing.assert_allclose(grads[0][0], grads[1][0], atol=atol)
    np.testing.assert_allclose(grads[0][1], grads[1][1], atol=atol * 10)


def test_gelu_erf_matches_tf_nn_gelu_and_works_in_bfloat16_under_a_function():
    x = tf.random.stateless_normal((64,), seed=(1, 2)) * 3
    np.testing.assert_allclose(gelu_erf(x), tf.nn.gelu(x, approximate=False), atol=1e-6)
    np.testing.assert_allclose(gelu_tanh(x), tf.nn.gelu(x, approximate=True), atol=1e-6)

    @tf.function(jit_compile=True)
    def grad_bf16(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = tf.reduce_sum(get_activation("gelu")(v))
        return tape.gradient(y, v)

    result = grad_bf16(tf.cast(x, tf.bfloat16))
    assert result.dtype == tf.bfloat16
    np.testing.assert_allclose(tf.cast(result, tf.float32), tf.cast(grad_bf16(x), tf.float32), atol=0.05)


@pytest.mark.parametrize("name", ["gelu", "gelu_new"])
def test_bfloat16_gradient_kernel_rounds_once(name):
    """The XLA gradient kernel computes bfloat16 in float32 (`float32_inside`): the float32 gradient of the same
    bfloat16 inputs, rounded once to bfloat16."""
    x = tf.cast(tf.random.stateless_normal((4, 256), seed=(3, 4)) * 3, tf.bfloat16)
    upstream = tf.cast(tf.random.stateless_normal((4, 256), seed=(5, 6)), tf.bfloat16)

    def grad(v, dy):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = get_activation(name)(v)
        return tape.gradient(y, v, output_gradients=dy)

    static = tf.function(grad)(x, upstream)  # static shapes: the XLA kernel
    want = tf.cast(grad(tf.cast(x, tf.float32), tf.cast(upstream, tf.float32)), tf.bfloat16)
    assert static.dtype == tf.bfloat16
    np.testing.assert_array_equal(tf.cast(static, tf.float32), tf.cast(want, tf.float32))


def test_unknown_activation_names_the_value():
    with pytest.raises(ValueError, match="hidden_act='gelu_fast'"):
        get_activation("gelu_fast")


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_every_config_activation_name_selects_a_function(name):
    x = tf.constant([-2.0, 0.0, 3.0])
    expected = {"gelu": gelu_erf(x), "gelu_new": gelu_tanh(x), "relu": tf.nn.relu(x), "swish": tf.nn.silu(x)}
    y = get_activation(name)(x)
    assert y.shape == x.shape
    if name in expected:
        np.testing.assert_allclose(y, expected[name], atol=1e-7)
