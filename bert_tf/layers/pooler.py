"""Pooler: the family's sentence pooler, a dense with an activation on the first token."""

import keras

from bert_tf.layers.activations import get_activation
from bert_tf.layers.configured_layer import ConfiguredLayer


class Pooler(ConfiguredLayer):
    """`act(dense(h[:, 0]))`: `[B, T, H] -> [B, H]`, the dense our encoders call the pooler.

    BERT's and RoBERTa's pooler (tanh), DistilBERT's `pre_classifier` (relu),
    ELECTRA's classification head's dense and DeBERTa's `ContextPooler` (GELU,
    `pooler_hidden_act`): `Family.pooler_activation` says which. Its dense is
    `pooler/dense` in every encoder; the name tables say where each Hugging
    Face class keeps it.
    """

    CONFIG = "hidden_dim activation initializer_range"

    def __init__(self, hidden_dim, activation="tanh", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.keep_config(locals())
        self.dense = keras.layers.Dense(
            hidden_dim,
            activation=get_activation(activation),
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )

    def build(self, sequence_shape):
        self.dense.build((None, sequence_shape[-1]))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def compute_output_shape(self, sequence_shape):
        return (sequence_shape[0], self.hidden_dim)
