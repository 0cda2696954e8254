"""TransformerBlock: one BERT encoder layer, post-LN (original) or pre-LN."""

import keras
import tensorflow as tf
from keras import ops

from bert_tf.layers.bert_self_attention import BertSelfAttention
from bert_tf.layers.encoder_block import EncoderBlock
from bert_tf.layers.relative_position_bias import bias_at
from bert_tf.layers.token_matrix import dense_tokens


class TransformerBlock(EncoderBlock):
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
        position_bias: optional float32 `[1, N, T, T]` added to the attention
            scores (MPNet's relative position bias, the same in every layer).
    Returns:
        `[B, T, H]` in the compute dtype.
    """

    CONFIG = EncoderBlock.CONFIG + " pre_layer_norm"

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
        self.keep_config(locals())

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
        self._add_feed_forward(initializer)

    def _feed_forward(self, x, training):
        hidden = self._activation(dense_tokens(self.intermediate_dense, x, self.compute_dtype))  # [M, I]
        return self._dropout(dense_tokens(self.output_dense, hidden, self.compute_dtype), training)

    def build(self, x_shape, padding_mask_shape=None, position_bias_shape=None):
        super().build(x_shape)

    def call(self, x, padding_mask, position_bias=None, training=None):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        tokens = self.call_tokens(
            tf.reshape(x, (-1, self.hidden_dim)), batch, length, padding_mask, training, position_bias=position_bias
        )
        return tf.reshape(tokens, (batch, length, self.hidden_dim))

    def call_tokens(self, x, batch, length, padding_mask, training=None, token_index=None, position_bias=None):
        """The block on a token matrix `[M, H]` -> `[M, H]`.

        `x` holds all `B*T` positions, or with `token_index` (int32 `[M]`,
        flat positions `b * T + t`) only the real tokens: everything but the
        attention scores then costs in proportion to the real tokens.
        """

        def attend(inputs):
            return self.attention.attend(
                inputs,
                batch,
                length,
                padding_mask,
                training=training,
                token_index=token_index,
                position_bias=position_bias,
            )

        return self._residuals(x, attend, training)

    def call_at(self, x, positions, padding_mask, position_bias=None, training=None):
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
        if position_bias is not None:
            position_bias = bias_at(position_bias, positions)  # [B, N, P, T]

        def attend(queries):
            return self.attention.attend_at(
                queries, keys, batch, length, count, padding_mask, training=training, position_bias=position_bias
            )

        outputs = self._residuals(tf.gather(tokens, rows), attend, training)  # [B*P, H]
        return tf.reshape(outputs, (batch, count, self.hidden_dim))

    def _residuals(self, x, attend, training):
        """Attention and feed-forward sublayers with their residuals and LayerNorms on rows `x`."""
        if self.pre_layer_norm:
            x = x + self._dropout(attend(self._norm(self.attention_layer_norm, x)), training)
            return x + self._feed_forward(self._norm(self.output_layer_norm, x), training)
        x = self._norm(self.attention_layer_norm, x + self._dropout(attend(x), training))
        return self._norm(self.output_layer_norm, x + self._feed_forward(x, training))

    def compute_output_shape(self, x_shape, padding_mask_shape=None, position_bias_shape=None):
        return x_shape
