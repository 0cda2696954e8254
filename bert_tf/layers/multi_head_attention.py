"""BertSelfAttention: multi-head self-attention with a padding mask.

Shapes: B batch, T tokens, H hidden, N heads, D = H / N head size.
"""

import math

import keras
from keras import ops

# Added to the scores of padding keys; large enough for float32 softmax.
_MASK_BIAS = -1e9


class BertSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention with separate query/key/value projections.

    The projections keep the `[H, H]` kernels of the original checkpoints
    (`attention/self/{query,key,value}`, `attention/output/dense`), so weight
    import is a plain copy. Softmax runs in float32 under mixed precision.

    Call args:
        x: `[B, T, H]`.
        padding_mask: int or bool `[B, T]`, 1 for real tokens.
    Returns:
        `[B, T, H]`.
    """

    def __init__(self, num_heads, hidden_dim, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if hidden_dim % num_heads:
            raise ValueError(f"`hidden_dim` must be divisible by `num_heads`. "
                             f"Received: hidden_dim={hidden_dim}, num_heads={num_heads}")
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.head_dim = hidden_dim // num_heads
        self.dropout = dropout
        self.initializer_range = initializer_range

        # === Layers ===
        def dense(name):
            return keras.layers.Dense(
                hidden_dim, kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
                dtype=self.dtype_policy, name=name)

        self.query_dense = dense("query")
        self.key_dense = dense("key")
        self.value_dense = dense("value")
        self.output_dense = dense("attention_output")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="attention_dropout")

    def build(self, x_shape, padding_mask_shape=None):
        for layer in (self.query_dense, self.key_dense, self.value_dense, self.output_dense):
            layer.build(x_shape)
        self.built = True

    def _split_heads(self, x):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        return ops.reshape(x, (batch, length, self.num_heads, self.head_dim))  # [B, T, N, D]

    def call(self, x, padding_mask, training=None):
        query = self._split_heads(self.query_dense(x))
        key = self._split_heads(self.key_dense(x))
        value = self._split_heads(self.value_dense(x))
        query = query * ops.cast(1.0 / math.sqrt(self.head_dim), query.dtype)
        scores = ops.einsum("btnd,bsnd->bnts", query, key)  # [B, N, T, T]
        bias = (1.0 - ops.cast(padding_mask, "float32")) * _MASK_BIAS  # [B, T]
        scores = ops.cast(scores, "float32") + bias[:, None, None, :]
        probs = ops.softmax(scores, axis=-1)
        probs = self.dropout_layer(ops.cast(probs, self.compute_dtype), training=training)
        context = ops.einsum("bnts,bsnd->btnd", probs, value)  # [B, T, N, D]
        context = ops.reshape(context, (ops.shape(x)[0], ops.shape(x)[1], self.hidden_dim))  # [B, T, H]
        return self.output_dense(context)

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "dropout": self.dropout,
            "initializer_range": self.initializer_range,
        })
        return config
