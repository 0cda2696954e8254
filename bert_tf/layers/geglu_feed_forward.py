"""GeGLUFeedForward: the gated feed-forward network of ModernBERT (GLU with a GELU, "GeGLU")."""

import keras
from keras import ops

from bert_tf.layers.activations import get_activation
from bert_tf.layers.configured_layer import ConfiguredLayer


class GeGLUFeedForward(ConfiguredLayer):
    """`Wo(dropout(act(a) * g))` where `[a, g] = Wi(x)`: one projection to `2 I`, split in halves.

    The first half is the activation's input, the second the gate (Hugging
    Face's `ModernBertMLP`: `input, gate = Wi(x).chunk(2)`), so the stored
    `Wi` `[2I, H]` loads as it is, and transformers' `intermediate_size` is
    `I`, the width after the gate.

    Args:
        hidden_dim: H.
        intermediate_dim: I.
        activation: a `hidden_act` name (ModernBERT: "gelu", exact erf).
        use_bias: biases on both projections (ModernBERT's `mlp_bias`, false in
            its released models).
        dropout: dropout before the output projection (`mlp_dropout`).
    Call args:
        x: `[..., H]`.
    Returns:
        `[..., H]`.
    """

    CONFIG = "hidden_dim intermediate_dim activation use_bias dropout initializer_range"

    def __init__(
        self,
        hidden_dim,
        intermediate_dim,
        activation="gelu",
        use_bias=False,
        dropout=0.0,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.keep_config(locals())
        self._activation = get_activation(activation)

        # === Layers ===
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.intermediate_dense = keras.layers.Dense(
            2 * intermediate_dim,
            use_bias=use_bias,
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="intermediate",
        )
        self.output_dense = keras.layers.Dense(
            hidden_dim, use_bias=use_bias, kernel_initializer=initializer, dtype=self.dtype_policy, name="output"
        )
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, x_shape):
        self.intermediate_dense.build(x_shape)
        self.output_dense.build(tuple(x_shape[:-1]) + (self.intermediate_dim,))
        self.built = True

    def call(self, x, training=None):
        inputs, gate = ops.split(self.intermediate_dense(x), 2, axis=-1)  # 2 x [..., I]
        hidden = self.dropout_layer(self._activation(inputs) * gate, training=training)
        return self.output_dense(hidden)

    def compute_output_shape(self, x_shape):
        return tuple(x_shape[:-1]) + (self.hidden_dim,)
