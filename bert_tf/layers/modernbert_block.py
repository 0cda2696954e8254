"""ModernBertBlock: one ModernBERT encoder layer (pre-norm, rotary self-attention, GeGLU feed-forward)."""

from bert_tf.layers.encoder_block import EncoderBlock
from bert_tf.layers.geglu_feed_forward import GeGLUFeedForward
from bert_tf.layers.rotary_self_attention import RotarySelfAttention


class ModernBertBlock(EncoderBlock):
    """`x = x + Attn(LN(x)); x = x + GeGLU(LN(x))`: the pre-norm residual layout of Hugging Face's
    `ModernBertEncoderLayer`.

    The first layer has no attention LayerNorm (`attention_norm=False`: the
    embeddings end in one, and transformers' layer 0 uses an identity). The
    LayerNorms have no bias when `norm_bias` is false (ModernBERT's released
    models) and run in float32 under mixed precision. Whether the layer
    attends globally or in a sliding window, and with which RoPE theta, is
    its attention's configuration (`RotarySelfAttention`).

    Args:
        num_heads, hidden_dim, intermediate_dim: N, H and the GeGLU's I.
        hidden_act: the GeGLU's activation.
        local_attention: the sliding window's width; None: global attention.
        rope_theta: the rotary frequencies' base of this layer's kind.
        attention_norm: a LayerNorm before the attention (all layers but the first).
        norm_bias, attention_bias, mlp_bias: which parts have biases.
        dropout: the GeGLU's dropout; attention_dropout: the attention's.
    Call args:
        x: `[B, T, H]`.
        padding_mask: int `[B, T]`, 1 for real tokens.
    Returns:
        `[B, T, H]` in the compute dtype.
    """

    CONFIG = (
        "num_heads hidden_dim intermediate_dim hidden_act local_attention rope_theta attention_norm norm_bias "
        "attention_bias mlp_bias dropout attention_dropout initializer_range layer_norm_epsilon"
    )

    def __init__(
        self,
        num_heads,
        hidden_dim,
        intermediate_dim,
        hidden_act="gelu",
        local_attention=None,
        rope_theta=160000.0,
        attention_norm=True,
        norm_bias=False,
        attention_bias=False,
        mlp_bias=False,
        dropout=0.0,
        attention_dropout=0.0,
        initializer_range=0.02,
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.keep_config(locals())
        self.rope_theta = float(rope_theta)

        # === Layers ===
        self.attention_layer_norm = (
            self._layer_norm("attention_layer_norm", center=norm_bias) if attention_norm else None
        )
        self.attention = RotarySelfAttention(
            num_heads,
            hidden_dim,
            rope_theta=rope_theta,
            local_attention=local_attention,
            use_bias=attention_bias,
            dropout=attention_dropout,
            initializer_range=initializer_range,
            dtype=self.dtype_policy,
            name="attention",
        )
        self.mlp_layer_norm = self._layer_norm("mlp_layer_norm", center=norm_bias)
        self.mlp = GeGLUFeedForward(
            hidden_dim,
            intermediate_dim,
            activation=hidden_act,
            use_bias=mlp_bias,
            dropout=dropout,
            initializer_range=initializer_range,
            dtype=self.dtype_policy,
            name="mlp",
        )

    def build(self, x_shape, padding_mask_shape=None):
        if self.attention_layer_norm is not None:
            self.attention_layer_norm.build(x_shape)
        self.attention.build(x_shape)
        self.mlp_layer_norm.build(x_shape)
        self.mlp.build(x_shape)
        self.built = True

    def call(self, x, padding_mask, training=None):
        normed = x if self.attention_layer_norm is None else self._norm(self.attention_layer_norm, x)
        x = x + self.attention(normed, padding_mask, training=training)
        return x + self.mlp(self._norm(self.mlp_layer_norm, x), training=training)

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return x_shape
