"""RotaryTransformerBlock: one NomicBERT or GTE encoder layer (post-norm, rotary self-attention, gated MLP)."""

import keras

from bert_tf.layers.encoder_block import EncoderBlock
from bert_tf.layers.gated_feed_forward import GatedFeedForward
from bert_tf.layers.rotary_self_attention import RotarySelfAttention


class RotaryTransformerBlock(EncoderBlock):
    """`x = LN(x + Attn(x)); x = LN(x + GLU(x))`: BERT's post-norm layout with rotary positions and a gated MLP.

    The attention is ModernBERT's `RotarySelfAttention` (one fused `[H, 3H]`
    query/key/value projection laid out `[3, N, D]`, queries and keys rotated
    by their column with `rope_theta` and the config's `rope_scaling`, global
    attention); the MLP a `GatedFeedForward` (NomicBERT's SwiGLU `fc11`,
    `fc12`, `fc2`; GTE's gated GELU `up_gate_proj`, `down_proj`). Each
    sublayer's output goes through dropout (`dropout`, transformers'
    `hidden_dropout_prob`), is added to its input and normalized; the
    LayerNorms run in float32 under mixed precision. The attention's own
    dropout (`attention_dropout`) is on its probabilities and its output.

    Args:
        num_heads, hidden_dim, intermediate_dim: N, H and the gated MLP's I.
        hidden_act: the MLP gate's activation.
        rope_theta: the rotary frequencies' base.
        rope_scaling: None or `RotaryEmbedding`'s scaling arguments (`rope_type`, `factor`, `max_positions`).
        attention_bias: biases on the attention's two projections (GTE's; NomicBERT has none).
        fused_mlp, mlp_up_bias, mlp_down_bias: `GatedFeedForward`'s `fused`, `up_bias`, `down_bias`.
    Call args:
        x: `[B, T, H]`.
        padding_mask: int `[B, T]`, 1 for real tokens.
    Returns:
        `[B, T, H]` in the compute dtype.
    """

    CONFIG = EncoderBlock.CONFIG + " rope_theta rope_scaling attention_bias fused_mlp mlp_up_bias mlp_down_bias"

    def __init__(
        self,
        num_heads,
        hidden_dim,
        intermediate_dim,
        hidden_act="gelu",
        dropout=0.1,
        attention_dropout=0.0,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        rope_theta=10000.0,
        rope_scaling=None,
        attention_bias=True,
        fused_mlp=True,
        mlp_up_bias=False,
        mlp_down_bias=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.keep_config(locals())
        self.rope_theta = float(rope_theta)

        # === Layers ===
        self.attention = RotarySelfAttention(
            num_heads,
            hidden_dim,
            rope_theta=rope_theta,
            rope_scaling=rope_scaling,
            use_bias=attention_bias,
            dropout=attention_dropout,
            initializer_range=initializer_range,
            dtype=self.dtype_policy,
            name="attention",
        )
        self.attention_layer_norm = self._layer_norm("attention_layer_norm")
        self.mlp = GatedFeedForward(
            hidden_dim,
            intermediate_dim,
            activation=hidden_act,
            fused=fused_mlp,
            up_bias=mlp_up_bias,
            down_bias=mlp_down_bias,
            initializer_range=initializer_range,
            dtype=self.dtype_policy,
            name="mlp",
        )
        self.mlp_layer_norm = self._layer_norm("mlp_layer_norm")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, x_shape, padding_mask_shape=None):
        self.attention.build(x_shape)
        self.attention_layer_norm.build(x_shape)
        self.mlp.build(x_shape)
        self.mlp_layer_norm.build(x_shape)
        self.built = True

    def call(self, x, padding_mask, training=None):
        attended = self._dropout(self.attention(x, padding_mask, training=training), training)
        x = self._norm(self.attention_layer_norm, x + attended)
        return self._norm(self.mlp_layer_norm, x + self._dropout(self.mlp(x, training=training), training))

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return x_shape
