"""Sliding-window (local) attention: which keys a query sees, and the attention computed within that window.

Shapes: B batch, N heads, Q queries, T tokens (keys), D head size.

ModernBERT's sliding-window layers let token i attend to token j when
`|i - j| <= local_attention // 2` (Hugging Face transformers' bidirectional
sliding-window mask, inclusive on both sides: a window of `local_attention`
tokens plus the token itself). `sliding_window_context` is the one function
that computes such a layer's attention; it is written as a banded mask on the
full `[T, T]` scores for now, so its memory grows with `T^2` (a blocked form,
growing with `T x window`, can replace it without touching its callers).
"""

import tensorflow as tf

from bert_tf.layers.bert_self_attention import MASK_BIAS


def in_window(query_positions, key_positions, local_attention):
    """bool `[Q, T]`: whether each query position sees each key position (`|i - j| <= local_attention // 2`)."""
    distance = tf.abs(query_positions[:, None] - key_positions[None, :])
    return distance <= local_attention // 2


def sliding_window_context(query, key, value, padding_bias, local_attention, softmax, query_positions=None):
    """Attention of `query` over the keys within the sliding window: `[B, N, Q, D]`.

    Args:
        query: `[B, N, Q, D]`, scaled by `1 / sqrt(D)` and rotated.
        key, value: `[B, N, T, D]`.
        padding_bias: float32 `[B, T]`, 0 at real keys and `MASK_BIAS` at padding.
        local_attention: the window's width (each side sees `local_attention // 2` tokens).
        softmax: `(scores float32 [B, N, Q, T], padding_bias [B, T]) -> probabilities [B, N, Q, T]` in the
            compute dtype (the caller's softmax, with its attention dropout).
        query_positions: int `[Q]`, the queries' positions; None: `0 .. T - 1` (every token a query).
    """
    length = tf.shape(key)[2]
    key_positions = tf.range(length)
    query_positions = key_positions if query_positions is None else tf.cast(query_positions, tf.int32)
    window = in_window(query_positions, key_positions, local_attention)  # [Q, T]
    scores = tf.cast(tf.matmul(query, key, transpose_b=True), tf.float32)  # [B, N, Q, T]
    scores += tf.where(window, 0.0, MASK_BIAS)[None, None]
    return tf.matmul(softmax(scores, padding_bias), value)  # [B, N, Q, D]
