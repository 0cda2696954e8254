"""RotarySelfAttention: ModernBERT's self-attention: one fused query/key/value projection, rotary positions,
global or sliding-window attention.

Shapes: B batch, T tokens, H hidden, N heads, D = H / N head size.
"""

import functools
import math

import keras
import tensorflow as tf
from keras import ops

from bert_tf.layers.bert_self_attention import head_dim, masked_probabilities, padding_bias
from bert_tf.layers.configured_layer import ConfiguredLayer
from bert_tf.layers.local_attention import GLOBAL_SCORES_BUDGET, global_context, sliding_window_context
from bert_tf.layers.rotary_embedding import RotaryEmbedding


class RotarySelfAttention(ConfiguredLayer):
    """Multi-head self-attention with rotary position embeddings on queries and keys.

    One `[H, 3H]` projection gives queries, keys and values (Hugging Face's
    `Wqkv`, whose output is laid out `[3, N, D]`); queries and keys are
    rotated by their positions (`RotaryEmbedding`, the layer's `rope_theta`);
    a global layer (`local_attention` None) attends to every real token
    (`local_attention.global_context`: in query chunks when the scores would
    be large), a sliding-window layer only to those at most
    `local_attention // 2` positions away, in blocks whose memory grows
    linearly with T (`local_attention.sliding_window_context`); the heads'
    outputs go through `Wo`. Positions are the columns `0 .. T - 1` (rows are
    right-padded), so no position table bounds the length. Softmax runs in
    float32.

    Args:
        num_heads, hidden_dim: N and H.
        rope_theta: the rotary frequencies' base.
        rope_scaling: None, or `RotaryEmbedding`'s scaling arguments as a dict (`rope_type`, `factor`,
            `max_positions`: NomicBERT's and GTE's long-context scaling).
        local_attention: the sliding window's width; None: global attention.
        use_bias: biases on both projections (ModernBERT's `attention_bias`).
        dropout: attention-probability dropout, and dropout after `Wo`
            (Hugging Face's `attention_dropout` does both).
    Call args:
        x: `[B, T, H]`.
        padding_mask: int or bool `[B, T]`, 1 for real tokens.
    Returns:
        `[B, T, H]`.
    """

    CONFIG = "num_heads hidden_dim rope_theta local_attention use_bias dropout initializer_range rope_scaling"
    # The most scores a global layer builds at once at inference (`global_context`'s `budget`); None: the whole
    # `[B, N, T, T]` matrix in one piece (the LiteRT export sets it on the model it converts).
    scores_budget = GLOBAL_SCORES_BUDGET

    def __init__(
        self,
        num_heads,
        hidden_dim,
        rope_theta=10000.0,
        local_attention=None,
        use_bias=False,
        dropout=0.0,
        initializer_range=0.02,
        rope_scaling=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.head_dim = head_dim(num_heads, hidden_dim)
        if local_attention is not None and local_attention < 2:
            raise ValueError(
                f"`local_attention` must be None (global) or >= 2. Received: local_attention={local_attention}"
            )
        self.keep_config(locals())
        self.rope_theta = float(rope_theta)

        # === Layers ===
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.qkv_dense = keras.layers.Dense(
            3 * hidden_dim, use_bias=use_bias, kernel_initializer=initializer, dtype=self.dtype_policy, name="qkv"
        )
        self.output_dense = keras.layers.Dense(
            hidden_dim,
            use_bias=use_bias,
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="attention_output",
        )
        self.rotary = RotaryEmbedding(
            self.head_dim, rope_theta, **(rope_scaling or {}), dtype=self.dtype_policy, name="rotary"
        )
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="attention_dropout")
        self.output_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="output_dropout")

    def build(self, x_shape, padding_mask_shape=None):
        self.qkv_dense.build(x_shape)
        self.output_dense.build(x_shape)
        self.built = True

    def call(self, x, padding_mask, training=None):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        qkv = tf.reshape(self.qkv_dense(x), (batch, length, 3, self.num_heads, self.head_dim))
        query, key, value = tf.unstack(tf.transpose(qkv, (2, 0, 3, 1, 4)), num=3)  # each [B, N, T, D]
        positions = tf.range(length)
        scale = ops.cast(1.0 / math.sqrt(self.head_dim), self.compute_dtype)
        query = self.rotary(query, positions) * scale
        key = self.rotary(key, positions)
        bias = padding_bias(padding_mask)  # [B, T]
        softmax = functools.partial(self._probabilities, training=training)
        if self.local_attention is None:
            context = global_context(
                query, key, value, bias, softmax, training=bool(training), budget=self.scores_budget
            )
        else:
            context = sliding_window_context(query, key, value, bias, self.local_attention, softmax)
        context = tf.reshape(tf.transpose(context, (0, 2, 1, 3)), (batch, length, self.hidden_dim))  # [B, T, H]
        return self.output_dropout(self.output_dense(context), training=training)

    def _probabilities(self, scores, bias, training=None):
        """Attention probabilities `[B, N, Q, T]` (compute dtype) of float32 scores, padding keys masked out."""
        return ops.cast(masked_probabilities(self, scores, bias, training), self.compute_dtype)

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return x_shape
