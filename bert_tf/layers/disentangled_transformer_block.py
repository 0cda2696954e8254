"""DisentangledTransformerBlock: one DeBERTa-v2/v3 encoder layer (post-LN, disentangled attention)."""

import keras
import tensorflow as tf
from keras import ops

from bert_tf.layers.activations import get_activation
from bert_tf.layers.disentangled_attention import DisentangledSelfAttention
from bert_tf.layers.dropout import draw_seed, dropout
from bert_tf.layers.layer_norm import LayerNorm


class DisentangledTransformerBlock(keras.layers.Layer):
    """`x = LN(x + Attn(x, rel)); x = LN(x + FFN(x))`, with `DisentangledSelfAttention`.

    The same residual layout and variables as BERT's post-LN
    `TransformerBlock`; the attention also reads the relative-embedding
    table the encoder shares between its layers.

    Args: as `TransformerBlock` plus the attention's (`DisentangledSelfAttention`).
    Call args:
        x: `[B, T, H]`.
        padding_mask: int `[B, T]`, 1 for real tokens.
        rel_embeddings: `[2S, H]`.
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
        layer_norm_epsilon=1e-7,
        pos_att_type=("p2c", "c2p"),
        share_att_key=True,
        position_buckets=256,
        max_relative_positions=512,
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
        self.pos_att_type = tuple(pos_att_type)
        self.share_att_key = share_att_key
        self.position_buckets = position_buckets
        self.max_relative_positions = max_relative_positions
        self._activation = get_activation(hidden_act)

        # === Layers ===
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.attention = DisentangledSelfAttention(
            num_heads,
            hidden_dim,
            pos_att_type=pos_att_type,
            share_att_key=share_att_key,
            position_buckets=position_buckets,
            max_relative_positions=max_relative_positions,
            dropout=attention_dropout,
            position_dropout=dropout,
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

    def build(self, x_shape, padding_mask_shape=None, rel_embeddings_shape=None):
        self.attention.build(x_shape)
        self.attention_layer_norm.build(x_shape)
        self.intermediate_dense.build(x_shape)
        self.output_dense.build(tuple(x_shape[:-1]) + (self.intermediate_dim,))
        self.output_layer_norm.build(x_shape)
        self.built = True

    def _dropout(self, x, training):
        if not training or not self.dropout:
            return x
        return dropout(x, draw_seed(self.dropout_layer), self.dropout)

    def call(self, x, padding_mask, rel_embeddings, training=None):
        attended = self.attention(x, padding_mask, rel_embeddings, training=training)
        return self._residuals(x, attended, training)

    def call_at(self, x, positions, padding_mask, rel_embeddings, training=None):
        """The block's outputs only at `positions`: `[B, T, H]`, int `[B, P]` -> `[B, P, H]`.

        Keys and values come from every token; the queries, relative terms,
        feed-forward network and LayerNorms run at the P positions only
        (`DisentangledSelfAttention.call_at`). Equal to `call` gathered there.
        """
        rows = tf.gather(x, tf.cast(positions, tf.int32), batch_dims=1)  # [B, P, H]
        attended = self.attention.call_at(rows, positions, x, padding_mask, rel_embeddings, training=training)
        return self._residuals(rows, attended, training)

    def _residuals(self, x, attended, training):
        """Post-LN: the attention's residual and LayerNorm, then the feed-forward network's, on rows `x`."""
        x = ops.cast(self.attention_layer_norm(x + self._dropout(attended, training)), self.compute_dtype)
        hidden = self._activation(self.intermediate_dense(x))  # [..., I]
        x = x + self._dropout(self.output_dense(hidden), training)
        return ops.cast(self.output_layer_norm(x), self.compute_dtype)

    def compute_output_shape(self, x_shape, padding_mask_shape=None, rel_embeddings_shape=None):
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
                "pos_att_type": list(self.pos_att_type),
                "share_att_key": self.share_att_key,
                "position_buckets": self.position_buckets,
                "max_relative_positions": self.max_relative_positions,
            }
        )
        return config
