"""EncoderBlock: what the encoder layers of every family share."""

import keras
from keras import ops

from bert_tf.layers.activations import get_activation
from bert_tf.layers.configured_layer import ConfiguredLayer
from bert_tf.layers.dropout import draw_seed, dropout
from bert_tf.layers.layer_norm import LayerNorm


class EncoderBlock(ConfiguredLayer):
    """The base of `TransformerBlock`, `DisentangledTransformerBlock` and `ModernBertBlock`.

    It holds their common arguments (`CONFIG`: N, H, I, the activation, the
    dropouts, the initializer's range and the LayerNorms' epsilon), `_norm`
    (a float32 LayerNorm's output in the compute dtype) and, for BERT's
    layout (attention, then a dense feed-forward network, each with a
    residual and a LayerNorm), its sublayers: `_add_feed_forward` makes them
    after the attention, `build` builds them with it, `_dropout` is their
    residual dropout (one fused kernel, `bert_tf.layers.dropout`).
    """

    CONFIG = (
        "num_heads hidden_dim intermediate_dim hidden_act dropout attention_dropout initializer_range "
        "layer_norm_epsilon"
    )

    def _add_feed_forward(self, initializer):
        """BERT's sublayers after `self.attention`: its LayerNorm, the feed-forward denses, theirs, the dropout.

        `initializer` is the denses' kernel initializer, drawn before the
        attention was made (the order that gives a seeded model its weights).
        """
        self._activation = get_activation(self.hidden_act)
        self.attention_layer_norm = self._layer_norm("attention_layer_norm")
        self.intermediate_dense = keras.layers.Dense(
            self.intermediate_dim, kernel_initializer=initializer, dtype=self.dtype_policy, name="intermediate"
        )
        self.output_dense = keras.layers.Dense(
            self.hidden_dim, kernel_initializer=initializer, dtype=self.dtype_policy, name="output"
        )
        self.output_layer_norm = self._layer_norm("output_layer_norm")
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy, name="dropout")

    def _layer_norm(self, name, center=True):
        return LayerNorm(epsilon=self.layer_norm_epsilon, center=center, dtype="float32", name=name)

    def build(self, x_shape, padding_mask_shape=None):
        """Builds BERT's layout: the attention, its LayerNorm, the feed-forward denses and theirs."""
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
