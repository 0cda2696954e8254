"""Token matrices: a batch's `[B, T, H]` activations as one 2-D `[M, H]` matrix of token rows.

Rows are flat positions `b * T + t`: all `B * T` of them, or with a
`token_index` (int32 `[M]`) only the real tokens (padding removed). The
encoder's padding-free path, the transformer block and the attention all
work on this form: 2-D matmuls with a fused bias add (and activation) are
one oneDNN kernel each on CPU, where rank-3 inputs take a slower path.
"""

import tensorflow as tf
from keras import ops


def dense_tokens(layer, tokens, dtype):
    """A built `keras.layers.Dense` applied to a 2-D `[M, In]` matrix as matmul + bias_add.

    The 2-D form lets TensorFlow fuse them (and a GELU after them) into one
    oneDNN kernel on CPU; a rank-3 input would take the slower batched-matmul
    path.
    """
    outputs = tf.matmul(tokens, ops.cast(layer.kernel, dtype))
    return tf.nn.bias_add(outputs, ops.cast(layer.bias, dtype))


def scatter_tokens(tokens, token_index, size):
    """`[M, H]` rows at flat positions `token_index` of a zero `[size, H]` matrix."""
    return tf.scatter_nd(token_index[:, None], tokens, tf.stack([size, tf.shape(tokens)[1]]))
