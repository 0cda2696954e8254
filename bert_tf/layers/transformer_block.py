"""TransformerBlock: one BERT encoder layer, post-LN (original) or pre-LN."""

import keras
import tensorflow as tf
from keras import ops

from bert_tf.layers.activations import get_activation
from bert_tf.layers.bert_self_attention import BertSelfAttention
from bert_tf.layers.dropout import draw_seed, dropout
from bert_tf.layers.layer_norm import LayerNorm
from bert_tf.layers.token_matrix import dense_tokens


class TransformerBlock(keras.layers.Layer):
    """Self-attention and a feed-forward network, each with a residual and LayerNorm.

    Post-LN (BERT): `x = LN(x + Attn(x)); x = LN(x + FFN(x))`.
    Pre-LN: `x = x + Attn(LN(x)); x = x + FFN(LN(x))` (the encoder adds a final LN).
    LayerNorms run in float32 under mixed precision.

    Three entry points, one computation (`_residuals`): `call` on `[B, T, H]`
    (the encoder's functional graph), `call_tokens` on a token matrix
    `[M, H]` (all positions, or the real tokens only: the padding-free
    path) and `call_at` (outputs at some positions only: the last layer
    under `BertEncoder.call_at`).

    Call args:
        x: `[B, T, H]`.
        padding_mask: int `[B, T]`, 1 for real tokens.
    Returns:
        `[B, T, H]` in the compute dtype.
    """

    def __init__(
        self,
        num_heads,
        hidden_dim,
        intermediate_dim,
        hidden_act="gelu",
        dropout=0.1,
        attention_dropout=0.1,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        pre_layer_norm=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.hidden_act = hidden_act
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.pre_layer_norm = pre_layer_norm
        self._activation = get_activation(hidden_act)

        # === Layers ===
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.attention = BertSelfAttention(
            num_heads,
            hidden_dim,
            dropout=attention_dropout,
            initializer_range=initializer_range,
            dtype=self.dtype_policy,
            name="attention",
        )
        self.attention_layer_norm = LayerNorm(epsilon=layer_norm_epsilon, dtype="float32", name="attention_layer_norm")
        self.intermediate_dense = keras.layers.Dense(
            intermediate_dim, kernel_initializer=initializer, dtype=self.dtype_policy, name="intermediate"
        )
        self.output_dense = keras.layers.Dense(
            hidden_dim, kernel_initializer=initializer, dtype=self.dtype_policy, name="output"
        )
        self.output_layer_norm = LayerNorm(epsilon=layer_norm_epsilon, dtype="float32", name="output_layer_norm")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, x_shape, padding_mask_shape=None):
        self.attention.build(x_shape)
        self.attention_layer_norm.build(x_shape)
        self.intermediate_dense.build(x_shape)
        self.output_dense.build(tuple(x_shape[:-1]) + (self.intermediate_dim,))
        self.output_layer_norm.build(x_shape)
        self.built = True

    def _norm(self, layer_norm, x):
        return ops.cast(layer_norm(x), self.compute_dtype)

    def _dropout(self, x, training):
        if not training or not self.dropout:
            return x
        return dropout(x, draw_seed(self.dropout_layer), self.dropout)

    def _feed_forward(self, x, training):
        hidden = self._activation(dense_tokens(self.intermediate_dense, x, self.compute_dtype))  # [M, I]
        return self._dropout(dense_tokens(self.output_dense, hidden, self.compute_dtype), training)

    def call(self, x, padding_mask, training=None):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        tokens = self.call_tokens(tf.reshape(x, (-1, self.hidden_dim)), batch, length, padding_mask, training)
        return tf.reshape(tokens, (batch, length, self.hidden_dim))

    def call_tokens(self, x, batch, length, padding_mask, training=None, token_index=None):
        """The block on a token matrix `[M, H]` -> `[M, H]`.

        `x` holds all `B*T` positions, or with `token_index` (int32 `[M]`,
        flat positions `b * T + t`) only the real tokens: everything but the
        attention scores then costs in proportion to the real tokens.
        """

        def attend(inputs):
            return self.attention.attend(
                inputs, batch, length, padding_mask, training=training, token_index=token_index
            )

        return self._residuals(x, attend, training)

    def call_at(self, x, positions, padding_mask, training=None):
        """The block's outputs only at `positions`: `[B, T, H]`, int `[B, P]` -> `[B, P, H]`.

        Keys and values come from every token; the queries, attention output,
        feed-forward network and LayerNorms run at the P positions only. Equal
        to `call(...)` gathered at `positions`, for the cost of the K/V
        projections plus P/T of the rest: what the last layer needs when only
        the masked positions or `[CLS]` are read.
        """
        batch, length, count = ops.shape(x)[0], ops.shape(x)[1], tf.shape(positions)[1]
        tokens = tf.reshape(x, (-1, self.hidden_dim))  # [B*T, H]
        rows = tf.reshape(ops.cast(positions, "int32") + tf.range(batch)[:, None] * length, [-1])  # [B*P]
        keys = self._norm(self.attention_layer_norm, tokens) if self.pre_layer_norm else tokens

        def attend(queries):
            return self.attention.attend_at(queries, keys, batch, length, count, padding_mask, training=training)

        outputs = self._residuals(tf.gather(tokens, rows), attend, training)  # [B*P, H]
        return tf.reshape(outputs, (batch, count, self.hidden_dim))

    def _residuals(self, x, attend, training):
        """Attention and feed-forward sublayers with their residuals and LayerNorms on rows `x`."""
        if self.pre_layer_norm:
            x = x + self._dropout(attend(self._norm(self.attention_layer_norm, x)), training)
            return x + self._feed_forward(self._norm(self.output_layer_norm, x), training)
        x = self._norm(self.attention_layer_norm, x + self._dropout(attend(x), training))
        return self._norm(self.output_layer_norm, x + self._feed_forward(x, training))

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "hidden_act": self.hidden_act,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "initializer_range": self.initializer_range,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "pre_layer_norm": self.pre_layer_norm,
            }
        )
        return config
