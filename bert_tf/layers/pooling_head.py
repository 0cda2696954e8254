"""PoolingHead: ModernBERT's sentence pooler: the first token or the mean of the real tokens, then dense,
activation and LayerNorm."""

import keras
from keras import ops

from bert_tf.config import CLASSIFIER_POOLINGS
from bert_tf.layers.activations import get_activation
from bert_tf.layers.layer_norm import LayerNorm


class PoolingHead(keras.layers.Layer):
    """`LN(act(dense(pool(h))))`: `[B, T, H] -> [B, H]`, what the encoder gives as `pooled_output`.

    Hugging Face's `ModernBertForSequenceClassification` pools the final
    hidden states by `classifier_pooling` ("cls": the first token; "mean": the
    mean over real tokens, padding excluded) and applies its `head`
    (`ModernBertPredictionHead`: a dense with a bias only when
    `classifier_bias`, `classifier_activation`, a LayerNorm with a bias only
    when `norm_bias`) before the logits layer; this layer is that pooling and
    head, so `BertClassifier`'s logits dense sits on it as on every family's
    pooler. Its variables are `dense/*` and `norm/*`.

    Args:
        hidden_dim: H.
        pooling: "cls" or "mean".
        activation: a `hidden_act` name.
        use_bias: the dense's bias; norm_bias: the LayerNorm's.
    Call args:
        sequence_output: `[B, T, H]`.
        padding_mask: int `[B, T]`, 1 for real tokens (read by "mean").
    Returns:
        `[B, H]`.
    """

    def __init__(
        self,
        hidden_dim,
        pooling="cls",
        activation="gelu",
        use_bias=False,
        norm_bias=False,
        initializer_range=0.02,
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if pooling not in CLASSIFIER_POOLINGS:
            raise ValueError(f"`pooling` must be one of {CLASSIFIER_POOLINGS}. Received: pooling={pooling!r}")
        self.hidden_dim = hidden_dim
        self.pooling = pooling
        self.activation = activation
        self.use_bias = use_bias
        self.norm_bias = norm_bias
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self._activation = get_activation(activation)

        # === Layers ===
        self.dense = keras.layers.Dense(
            hidden_dim,
            use_bias=use_bias,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )
        self.norm = LayerNorm(epsilon=layer_norm_epsilon, center=norm_bias, dtype="float32", name="norm")

    def build(self, sequence_output_shape, padding_mask_shape=None):
        self.dense.build((None, sequence_output_shape[-1]))
        self.norm.build((None, self.hidden_dim))
        self.built = True

    def call(self, sequence_output, padding_mask):
        if self.pooling == "cls":
            pooled = sequence_output[:, 0, :]  # [B, H]
        else:
            mask = ops.cast(padding_mask, sequence_output.dtype)[:, :, None]  # [B, T, 1]
            count = ops.maximum(ops.sum(mask, axis=1), 1.0)  # an all-padding row pools to 0, not NaN
            pooled = ops.sum(sequence_output * mask, axis=1) / count  # [B, H]
        return ops.cast(self.norm(self._activation(self.dense(pooled))), self.compute_dtype)

    def compute_output_shape(self, sequence_output_shape, padding_mask_shape=None):
        return (sequence_output_shape[0], self.hidden_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "pooling": self.pooling,
                "activation": self.activation,
                "use_bias": self.use_bias,
                "norm_bias": self.norm_bias,
                "initializer_range": self.initializer_range,
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        return config
