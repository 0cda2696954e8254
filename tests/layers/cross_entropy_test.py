"""`sparse_softmax_cross_entropy`: TensorFlow's loss and gradient from one XLA kernel each way, bad labels refused.

The XLA kernels are on in every layer test (tests/layers/conftest.py)."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.layers import sparse_softmax_cross_entropy
from tests.layers import compiled_calls


def _reference(labels, logits):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=tf.cast(logits, tf.float32))


def _loss_and_gradient(loss_fn, labels, logits, jit_compile=False):
    weights = tf.random.stateless_uniform(labels.shape, seed=[3, 4])  # a per-example upstream gradient

    @tf.function(jit_compile=jit_compile)
    def run(logits):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = loss_fn(labels, logits)
            total = tf.reduce_sum(loss * weights)
        return loss, tape.gradient(total, logits)

    return run(logits)


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
@pytest.mark.parametrize("jit_compile", [False, True])
def test_loss_and_gradient_equal_tensorflows_to_rounding(dtype, jit_compile):
    logits = tf.cast(tf.random.stateless_normal([3, 7, 501], seed=[1, 2]) * 4.0, dtype)
    labels = tf.random.stateless_uniform([3, 7], seed=[5, 6], maxval=501, dtype=tf.int32)
    assert (
        compiled_calls(sparse_softmax_cross_entropy, labels, logits) == 1
    )  # the forward kernel (the backward is traced with the gradient)
    ours, our_grad = _loss_and_gradient(sparse_softmax_cross_entropy, labels, logits, jit_compile)
    theirs, their_grad = _loss_and_gradient(_reference, labels, logits)
    assert ours.dtype == tf.float32 and ours.shape == [3, 7] and our_grad.dtype == dtype
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)
    ours_g = tf.cast(our_grad, tf.float32).numpy()
    theirs_g = tf.cast(their_grad, tf.float32).numpy()
    if dtype == tf.float32:
        np.testing.assert_allclose(ours_g, theirs_g, rtol=1e-5, atol=1e-8)
    else:  # one rounding to bfloat16 of float32 values that agree to float32 rounding: at most one bfloat16 step
        np.testing.assert_allclose(ours_g, theirs_g, rtol=2**-7, atol=1e-9)
        assert np.mean(ours_g == theirs_g) > 0.99


def test_shapes_known_only_at_run_time_take_tensorflows_op():
    labels = tf.TensorSpec([None], tf.int32)
    logits = tf.TensorSpec([None, 11], tf.float32)
    assert compiled_calls(sparse_softmax_cross_entropy, labels, logits) == 0
    f = tf.function(sparse_softmax_cross_entropy, input_signature=[labels, logits])
    values = tf.random.stateless_normal([5, 11], seed=[7, 8])
    ids = tf.constant([0, 3, 10, 2, 1])
    np.testing.assert_allclose(f(ids, values).numpy(), _reference(ids, values).numpy(), rtol=1e-6)


@pytest.mark.parametrize("bad", [11, -1])
def test_a_label_outside_the_classes_stops_the_step_by_name(bad):
    logits = tf.zeros([2, 11])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"outside the valid range \[0, 11\)"):
        tf.function(sparse_softmax_cross_entropy)(tf.constant([0, bad]), logits)
