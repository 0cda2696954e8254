"""TokenConvolution: DeBERTa-v2's convolution over neighbouring tokens after the first layer."""

import keras
from keras import ops

from bert_tf.layers.activations import get_activation
from bert_tf.layers.configured_layer import ConfiguredLayer
from bert_tf.layers.dropout import draw_seed, dropout
from bert_tf.layers.layer_norm import LayerNorm


class TokenConvolution(ConfiguredLayer):
    """`mask * LN(residual + act(mask * conv1d(x)))` (HF `ConvLayer`, `conv_kernel_size > 0`).

    The 1-D convolution runs over T with "same" padding ((k - 1) / 2 zeros
    each side; the kernel size must be odd) on the embeddings; its output
    is zeroed at padding, activated and added to the first layer's output.

    Args:
        hidden_dim: H (input and output channels).
        kernel_size: k, odd.
        groups: channel groups of the convolution (divides H).
        activation: `conv_act` ("tanh" by default).
    Call args:
        x: `[B, T, H]` the embeddings (the first layer's input).
        residual: `[B, T, H]` the first layer's output.
        padding_mask: int `[B, T]`.
    Returns:
        `[B, T, H]` in the compute dtype, 0 at padding.
    """

    CONFIG = "hidden_dim kernel_size groups activation dropout initializer_range layer_norm_epsilon"

    def __init__(
        self,
        hidden_dim,
        kernel_size=3,
        groups=1,
        activation="tanh",
        dropout=0.1,
        initializer_range=0.02,
        layer_norm_epsilon=1e-7,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if kernel_size % 2 == 0 or kernel_size < 1:
            raise ValueError(f"`kernel_size` must be a positive odd number. Received: kernel_size={kernel_size}")
        self.keep_config(locals())
        self._activation = get_activation(activation)
        self.conv = keras.layers.Conv1D(
            hidden_dim,
            kernel_size,
            padding="same",
            groups=groups,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="conv",
        )  # kernel [k, H / groups, H]
        self.layer_norm = LayerNorm(epsilon=layer_norm_epsilon, dtype="float32", name="layer_norm")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, x_shape, residual_shape=None, padding_mask_shape=None):
        self.conv.build((None, None, self.hidden_dim))
        self.layer_norm.build((None, None, self.hidden_dim))
        self.built = True

    def call(self, x, residual, padding_mask, training=None):
        mask = ops.cast(padding_mask, self.compute_dtype)[:, :, None]  # [B, T, 1]
        out = self.conv(x) * mask  # [B, T, H]
        if training and self.dropout:
            out = dropout(out, draw_seed(self.dropout_layer), self.dropout)
        out = self._activation(out)
        return ops.cast(self.layer_norm(residual + out), self.compute_dtype) * mask

    def compute_output_shape(self, x_shape, residual_shape=None, padding_mask_shape=None):
        return x_shape
