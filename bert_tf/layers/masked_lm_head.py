"""MaskedLMHead: transform + LayerNorm + logits tied to the word embeddings."""

import keras
import tensorflow as tf
from keras import ops

from bert_tf.layers.activations import get_activation
from bert_tf.layers.layer_norm import LayerNorm


class MaskedLMHead(keras.layers.Layer):
    """Predicts word pieces at `mask_positions` only.

    `logits = LN(act(dense(h[mask_positions]))) @ E^T + b`, where `E` `[V, H]`
    is the encoder's word-embedding table (the same variable, not a copy).
    When the table is narrower than the encoder (ELECTRA's generator), the
    dense maps H to the table's width. The dense, the LayerNorm and the
    output may each go without a bias (ModernBERT's `classifier_bias`,
    `norm_bias`, `decoder_bias`: `Family.mlm_head_fields`); BERT's have all three.

    Args:
        token_embedding: the encoder's `keras.layers.Embedding` (`encoder.token_embedding`).
        hidden_act: activation of the transform dense, as in the encoder.
        dense_bias, norm_bias, output_bias: whether the transform dense, its
            LayerNorm and the logits have a bias.
    Call args:
        sequence_output: `[B, T, H]`.
        mask_positions: int `[B, P]`, indices into T.
    Returns:
        float32 logits `[B, P, V]`.
    """

    def __init__(
        self,
        token_embedding,
        hidden_act="gelu",
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        dense_bias=True,
        norm_bias=True,
        output_bias=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(token_embedding, keras.layers.Embedding):
            raise ValueError(
                "`token_embedding` must be the encoder's keras.layers.Embedding. "
                f"Received: token_embedding={token_embedding!r}"
            )
        self.token_embedding = token_embedding
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.dense_bias = dense_bias
        self.norm_bias = norm_bias
        self.has_output_bias = output_bias
        self._activation = get_activation(hidden_act)
        vocabulary_size, hidden_dim = token_embedding.input_dim, token_embedding.output_dim
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim

        # === Layers ===
        self.transform_dense = keras.layers.Dense(
            hidden_dim,
            use_bias=dense_bias,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="transform_dense",
        )
        self.layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon, center=norm_bias, dtype="float32", name="transform_layer_norm"
        )

    def build(self, sequence_output_shape, mask_positions_shape=None):
        # The encoder's width H; the transform maps it to the table's width (E, which is H but in ELECTRA).
        self.transform_dense.build((None, None, sequence_output_shape[-1]))
        self.layer_norm.build((None, None, self.hidden_dim))
        self.output_bias = (
            self.add_weight(name="output_bias", shape=(self.vocabulary_size,), initializer="zeros")
            if self.has_output_bias
            else None
        )
        self.built = True

    def call(self, sequence_output, mask_positions):
        gathered = ops.take_along_axis(
            sequence_output, ops.cast(mask_positions, "int32")[:, :, None], axis=1
        )  # [B, P, H]
        return self.logits(gathered)

    def logits(self, gathered):
        """float32 logits `[B, P, V]` from the encoder outputs at the masked positions `[B, P, H]`."""
        x = self._activation(self.transform_dense(gathered))
        x = ops.cast(self.layer_norm(x), self.compute_dtype)
        table = ops.cast(self.token_embedding.embeddings, self.compute_dtype)  # [V, H]
        batch, predictions = ops.shape(x)[0], ops.shape(x)[1]
        logits = tf.matmul(tf.reshape(x, (-1, self.hidden_dim)), table, transpose_b=True)  # [B*P, V]
        logits = tf.cast(logits, tf.float32)
        if self.output_bias is not None:
            # A 2-D bias_add in float32: fused into the matmul (float32 models) and a BiasAddGrad backward.
            logits = tf.nn.bias_add(logits, tf.cast(tf.convert_to_tensor(self.output_bias), tf.float32))
        return tf.reshape(logits, (batch, predictions, self.vocabulary_size))

    def compute_output_shape(self, sequence_output_shape, mask_positions_shape):
        return tuple(mask_positions_shape) + (self.vocabulary_size,)

    def get_config(self):
        # `token_embedding` is not serialized: the task model passes its encoder's.
        config = super().get_config()
        config.update(
            {
                "hidden_act": self.hidden_act,
                "initializer_range": self.initializer_range,
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        # The biases only where one is left out, so a BERT head's config is what it was.
        for name, value in (("dense_bias", self.dense_bias), ("norm_bias", self.norm_bias)):
            if not value:
                config[name] = False
        if not self.has_output_bias:
            config["output_bias"] = False
        return config
