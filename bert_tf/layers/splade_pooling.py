"""SpladePooling: masked-LM logits -> one sparse vocabulary-sized vector per text (SPLADE).

Shape legend: B texts, T tokens, V vocabulary.
"""

import keras
import tensorflow as tf

# sentence-transformers' `SpladePooling` choices: how the token weights are pooled, and the activation before
# pooling ("relu": log(1 + relu(x)); "log1p_relu": log(1 + log(1 + relu(x))), OpenSearch's SPLADE models).
SPLADE_POOLING = ("max", "sum")
SPLADE_ACTIVATIONS = ("relu", "log1p_relu")


def check_splade(pooling, activation, source="sparse encoder"):
    """`(pooling, activation)` checked against SPLADE_POOLING and SPLADE_ACTIVATIONS; ValueError naming `source`."""
    if pooling not in SPLADE_POOLING:
        raise ValueError(f"{source}: pooling must be one of {list(SPLADE_POOLING)}. Received: pooling={pooling!r}")
    if activation not in SPLADE_ACTIVATIONS:
        raise ValueError(
            f"{source}: activation must be one of {list(SPLADE_ACTIVATIONS)}. Received: activation={activation!r}"
        )
    return pooling, activation


def splade_weights(logits, activation="relu"):
    """Token weights `log(1 + relu(logits))` (`activation` "log1p_relu": one more `log(1 + .)`), same shape."""
    weights = tf.math.log1p(tf.nn.relu(logits))
    if activation == "log1p_relu":
        weights = tf.math.log1p(weights)
    return weights


@keras.saving.register_keras_serializable(package="bert_tf")
class SpladePooling(keras.layers.Layer):
    """Masked-LM `logits` `[B, T, V]` and `padding_mask` `[B, T]` -> float32 `[B, V]`, as sentence-transformers'
    `SpladePooling` computes them.

    Each token's weights are `splade_weights(logits, activation)` (zero at padding), pooled over the tokens by
    their maximum (`max`, SPLADE v2 and later) or sum (`sum`, the first SPLADE). All weights are >= 0, and most
    are 0 for a trained model: the result is a sparse vector over the vocabulary.

    Args:
        pooling: "max" or "sum" (SPLADE_POOLING).
        activation: "relu" or "log1p_relu" (SPLADE_ACTIVATIONS).
    """

    def __init__(self, pooling="max", activation="relu", **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.pooling, self.activation = check_splade(pooling, activation, source=type(self).__name__)
        self.built = True

    def call(self, logits, padding_mask):
        weights = splade_weights(tf.cast(logits, tf.float32), self.activation)  # [B, T, V]
        weights *= tf.cast(padding_mask, tf.float32)[:, :, None]
        if self.pooling == "max":
            return tf.reduce_max(weights, axis=1)  # [B, V]; weights >= 0, so padding (0) never wins
        return tf.reduce_sum(weights, axis=1)  # [B, V]

    def compute_output_shape(self, logits_shape, padding_mask_shape=None):
        return (logits_shape[0], logits_shape[2])

    def get_config(self):
        return {**super().get_config(), "pooling": self.pooling, "activation": self.activation}
