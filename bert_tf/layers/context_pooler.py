"""ContextPooler: DeBERTa's sentence pooler, a dense and an activation on the first token."""

import keras

from bert_tf.layers.activations import get_activation


class ContextPooler(keras.layers.Layer):
    """`act(dense(h[:, 0]))`: `[B, T, H] -> [B, H]` (HF `ContextPooler`, `pooler_hidden_act`, GELU by default).

    Its dense is `pooler/dense` (variable paths as BERT's pooler's), which
    Hugging Face keeps outside the base model, in `...ForSequenceClassification`.
    """

    def __init__(self, hidden_dim, activation="gelu", initializer_range=0.02, **kwargs):
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
