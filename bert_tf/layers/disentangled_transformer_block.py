"""DisentangledTransformerBlock: one DeBERTa-v2/v3 encoder layer (post-LN, disentangled attention)."""

import keras
import tensorflow as tf

from bert_tf.layers.disentangled_attention import DisentangledSelfAttention
from bert_tf.layers.encoder_block import EncoderBlock


class DisentangledTransformerBlock(EncoderBlock):
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

    CONFIG = EncoderBlock.CONFIG + " pos_att_type share_att_key position_buckets max_relative_positions"

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
        self.keep_config(locals())
        self.pos_att_type = tuple(pos_att_type)

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
        self._add_feed_forward(initializer)

    def build(self, x_shape, padding_mask_shape=None, rel_embeddings_shape=None):
        super().build(x_shape)

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
        x = self._norm(self.attention_layer_norm, x + self._dropout(attended, training))
        hidden = self._activation(self.intermediate_dense(x))  # [..., I]
        return self._norm(self.output_layer_norm, x + self._dropout(self.output_dense(hidden), training))

    def compute_output_shape(self, x_shape, padding_mask_shape=None, rel_embeddings_shape=None):
        return x_shape
