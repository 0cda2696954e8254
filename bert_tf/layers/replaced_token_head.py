"""ReplacedTokenHead: ELECTRA's discriminator head, one logit per token that it was replaced."""

import keras
from keras import ops

from bert_tf.layers.activations import get_activation
from bert_tf.layers.configured_layer import ConfiguredLayer


class ReplacedTokenHead(ConfiguredLayer):
    """`dense_prediction(act(dense(h)))` on every token: `[B, T, H] -> [B, T]` float32 logits.

    The discriminator of ELECTRA (Clark et al. 2020) scores each token of its
    input: a positive logit says the token was replaced by the generator's
    sample, a negative one that it is the original. Hugging Face's
    `ElectraForPreTraining` names the two denses
    `discriminator_predictions.dense` and `discriminator_predictions.dense_prediction`;
    the activation is the encoder's `hidden_act`. Variables: `dense/*` and
    `dense_prediction/*`.

    Args:
        hidden_dim: H.
        activation: a `hidden_act` name.
    Call args:
        sequence_output: `[B, T, H]`.
    Returns:
        float32 `[B, T]`: `sigmoid` of it is the probability that the token was replaced.
    """

    CONFIG = "hidden_dim activation initializer_range"

    def __init__(self, hidden_dim, activation="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.keep_config(locals())
        self._activation = get_activation(activation)
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)

        # === Layers ===
        self.dense = keras.layers.Dense(
            hidden_dim, kernel_initializer=initializer, dtype=self.dtype_policy, name="dense"
        )
        self.dense_prediction = keras.layers.Dense(
            1, kernel_initializer=initializer, dtype="float32", name="dense_prediction"
        )

    def build(self, sequence_output_shape):
        self.dense.build((None, sequence_output_shape[-1]))
        self.dense_prediction.build((None, self.hidden_dim))
        self.built = True

    def call(self, sequence_output):
        hidden = self._activation(self.dense(sequence_output))  # [B, T, H]
        return ops.squeeze(self.dense_prediction(ops.cast(hidden, "float32")), -1)  # [B, T]

    def compute_output_shape(self, sequence_output_shape):
        return tuple(sequence_output_shape[:-1])
