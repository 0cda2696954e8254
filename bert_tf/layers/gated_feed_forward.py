"""GatedFeedForward: the gated feed-forward network of NomicBERT (SwiGLU) and GTE (gated GELU)."""

import keras
from keras import ops

from bert_tf.layers.activations import get_activation
from bert_tf.layers.configured_layer import ConfiguredLayer


class GatedFeedForward(ConfiguredLayer):
    """`down(dropout(up(x) * act(gate(x))))`: a GLU whose activation is on the gate.

    The two `[H, I]` projections are one fused `[H, 2I]` kernel when `fused`
    (GTE's `up_gate_proj`, whose rows are the up projection, then the gate:
    it loads as it is), two kernels `up` and `gate` otherwise (NomicBERT's
    `fc11` and `fc12`). ModernBERT's `GeGLUFeedForward` is the same form with
    the activation on the other half. Biases as the family has them (GTE: on
    the down projection only; NomicBERT: none).

    Args:
        hidden_dim: H.
        intermediate_dim: I, the width after the gate (transformers' `intermediate_size`).
        activation: a `hidden_act` name (NomicBERT: "silu", GTE: "gelu").
        fused: one `[H, 2I]` kernel `up_gate` (up, then gate) instead of `up` and `gate`.
        up_bias: biases on the up and gate projections.
        down_bias: a bias on the down projection.
        dropout: dropout before the down projection.
    Call args:
        x: `[..., H]`.
    Returns:
        `[..., H]`.
    """

    CONFIG = "hidden_dim intermediate_dim activation fused up_bias down_bias dropout initializer_range"

    def __init__(
        self,
        hidden_dim,
        intermediate_dim,
        activation="gelu",
        fused=True,
        up_bias=False,
        down_bias=True,
        dropout=0.0,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.keep_config(locals())
        self._activation = get_activation(activation)

        # === Layers ===
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)

        def dense(width, use_bias, name):
            return keras.layers.Dense(
                width, use_bias=use_bias, kernel_initializer=initializer, dtype=self.dtype_policy, name=name
            )

        if fused:
            self.up_gate_dense = dense(2 * intermediate_dim, up_bias, "up_gate")
            self.up_dense = self.gate_dense = None
        else:
            self.up_gate_dense = None
            self.up_dense = dense(intermediate_dim, up_bias, "up")
            self.gate_dense = dense(intermediate_dim, up_bias, "gate")
        self.down_dense = dense(hidden_dim, down_bias, "down")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, x_shape):
        for layer in (self.up_gate_dense, self.up_dense, self.gate_dense):
            if layer is not None:
                layer.build(x_shape)
        self.down_dense.build(tuple(x_shape[:-1]) + (self.intermediate_dim,))
        self.built = True

    def call(self, x, training=None):
        if self.fused:
            up, gate = ops.split(self.up_gate_dense(x), 2, axis=-1)  # 2 x [..., I]
        else:
            up, gate = self.up_dense(x), self.gate_dense(x)
        hidden = self.dropout_layer(up * self._activation(gate), training=training)
        return self.down_dense(hidden)

    def compute_output_shape(self, x_shape):
        return tuple(x_shape[:-1]) + (self.hidden_dim,)
