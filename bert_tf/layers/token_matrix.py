"""Token matrices: a batch's `[B, T, H]` activations as one 2-D `[M, H]` matrix of token rows.

Rows are flat positions `b * T + t`: all `B * T` of them, or with a
`token_index` (int32 `[M]`) only the real tokens (padding removed). The
encoder's padding-free path, the transformer block and the attention all
work on this form: 2-D matmuls with a fused bias add (and activation) are
one oneDNN kernel each on CPU, where rank-3 inputs take a slower path.
"""

import math

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


def shape_bucket(n, step, per_octave=4):
    """`n` (int32 scalar, >= 1) rounded up to a shape bucket: a multiple of `step`, and above
    `step * per_octave` one of `per_octave` evenly spaced sizes per doubling.

    With `step=8`: 8, 16, ..., 32 (steps of 8), 40, 48, 56, 64, 80, 96, 112, 128, 160, ... at most a
    fraction `1 / per_octave` (or `step - 1`) above `n`. The padding-free paths round their run-time
    lengths and token counts to these sizes because TensorFlow's oneDNN kernels keep a compiled
    primitive per input shape (up to 1024 in a per-thread cache, about 0.3 MB for a batched matmul):
    with every length its own shape, a server's memory grows with each new request shape.
    """
    n = tf.maximum(tf.cast(n, tf.int32), 1)
    # The largest power of two <= n: float64 log2 is exact enough for any int32 (the epsilon guards 2^k).
    octave = tf.cast(
        tf.pow(tf.constant(2.0, tf.float64), tf.floor(tf.math.log(tf.cast(n, tf.float64)) / math.log(2.0) + 1e-9)),
        tf.int32,
    )
    width = tf.maximum(step, octave // per_octave)
    return (n + width - 1) // width * width
