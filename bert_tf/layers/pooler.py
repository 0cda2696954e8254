"""Pooler: the family's sentence pooler, a dense with an activation on the first token."""

import keras

from bert_tf.layers.activations import get_activation


class Pooler(keras.layers.Layer):
    """`act(dense(h[:, 0]))`: `[B, T, H] -> [B, H]`, the dense our encoders call the pooler.

    BERT's and RoBERTa's pooler (tanh), DistilBERT's `pre_classifier` (relu),
    ELECTRA's classification head's dense and DeBERTa's `ContextPooler` (GELU,
    `pooler_hidden_act`): `Family.pooler_activation` says which. Its dense is
    `pooler/dense` in every encoder; the name tables say where each Hugging
    Face class keeps it.
    """

    def __init__(self, hidden_dim, activation="tanh", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.activation = activation
        self.initializer_range = initializer_range
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

    def get_config(self):
        config = super().get_config()
        config.update(
            {"hidden_dim": self.hidden_dim, "activation": self.activation, "initializer_range": self.initializer_range}
        )
        return config
