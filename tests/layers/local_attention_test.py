"""Blocked sliding-window attention and chunked global attention equal plain masked attention over `[T, T]`.

The reference here is the textbook form, written in NumPy: every score, the window and padding masked out, softmax,
probabilities times values. Memory (the point of the blocked forms) is measured by `tools/benchmark_long_context.py`.
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.layers import global_context, sliding_window_context
from bert_tf.layers.bert_self_attention import MASK_BIAS


def _softmax(scores, padding_bias):
    return tf.nn.softmax(scores + padding_bias[:, None, None, :], axis=-1)


def _inputs(length, lengths, seed):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(len(lengths), 2, length, 4)).astype(np.float32) for _ in range(3))
    mask = (np.arange(length)[None] < np.array(lengths)[:, None]).astype(np.float32)
    return q, k, v, (1.0 - mask) * MASK_BIAS, mask


def _reference(q, k, v, padding_bias, local_attention=None):
    """NumPy: softmax over the keys a query may see, `[B, N, T, D]`."""
    scores = q @ np.swapaxes(k, -1, -2) + padding_bias[:, None, None, :]  # [B, N, T, T]
    if local_attention is not None:
        positions = np.arange(q.shape[2])
        far = np.abs(positions[:, None] - positions[None, :]) > local_attention // 2
        scores = np.where(far, -np.inf, scores)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    return (scores / scores.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize(
    "length, local_attention, lengths",
    [
        (9, 4, [9, 5, 2, 7]),  # blocks of 2, the last one half padding
        (16, 8, [16, 3]),  # blocks of 4 exactly
        (5, 128, [5, 1]),  # one block, much wider than the text
        (37, 6, [37, 20, 36]),
        (11, 3, [11]),  # an odd width: 1 token each side
    ],
)
def test_sliding_window_blocks_equal_the_masked_full_attention(length, local_attention, lengths):
    q, k, v, bias, mask = _inputs(length, lengths, seed=length)
    got = sliding_window_context(*(tf.constant(t) for t in (q, k, v, bias)), local_attention, _softmax).numpy()
    want = _reference(q, k, v, bias, local_attention)
    real = mask[:, None, :, None].astype(bool)  # padding queries' rows are read by nothing
    np.testing.assert_allclose(np.where(real, got, 0), np.where(real, want, 0), atol=2e-6)


# One piece; chunks of 400 // 2 // (B N T) = 3 queries; one query; None: one piece without the chunks' loop (LiteRT).
@pytest.mark.parametrize("budget", [2**24, 400, 1, None])
def test_global_attention_in_query_chunks_equals_the_whole(budget):
    q, k, v, bias, mask = _inputs(13, [13, 6], seed=1)
    args = [tf.constant(t) for t in (q, k, v, bias)]
    want = _reference(q, k, v, bias)
    real = mask[:, None, :, None].astype(bool)
    got = global_context(*args, _softmax, budget=budget).numpy()
    np.testing.assert_allclose(np.where(real, got, 0), np.where(real, want, 0), atol=2e-6)
    graph = tf.function(lambda *a: global_context(*a, _softmax, budget=budget))  # the SavedModel's form
    np.testing.assert_allclose(np.where(real, graph(*args).numpy(), 0), np.where(real, want, 0), atol=2e-6)


def test_sliding_window_gradients_equal_the_masked_full_attention():
    q, k, v, bias, _ = _inputs(10, [10, 7], seed=4)
    positions = np.arange(10)
    far = np.abs(positions[:, None] - positions[None, :]) > 2
    tensors = [tf.constant(t) for t in (q, k, v)]

    def full(q, k, v):
        scores = tf.matmul(q, k, transpose_b=True) + tf.where(far, MASK_BIAS, 0.0)
        return tf.matmul(_softmax(scores, tf.constant(bias)), v)

    def blocked(q, k, v):
        return sliding_window_context(q, k, v, tf.constant(bias), 4, _softmax)

    weights = tf.constant(np.random.default_rng(0).normal(size=q.shape).astype(np.float32))
    grads = []
    for form in (full, blocked):
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            loss = tf.reduce_sum(
                form(*tensors) * weights * tf.constant(np.array([1.0, 0.0])[:, None, None, None], tf.float32)
            )
        grads.append(tape.gradient(loss, tensors))
    for got, want in zip(grads[1], grads[0], strict=True):
        np.testing.assert_allclose(got, want, atol=2e-5)
