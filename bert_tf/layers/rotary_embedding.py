"""RotaryEmbedding: rotary position embeddings (RoPE) on queries and keys, in the rotate-half layout.

Shapes: B batch, N heads, T tokens, D head size.
"""

import keras
import numpy as np
import tensorflow as tf


def inverse_frequencies(head_dim, theta):
    """float32 `[D / 2]`: `1 / theta^(2i / D)`, computed in float32 in the order Hugging Face computes it.

    The angles `position * frequency` reach thousands of radians at long positions, where one float32 ulp of a
    frequency moves the angle by about 1e-4: the same float32 steps keep the rotation equal to transformers'.
    """
    exponents = np.arange(0, head_dim, 2).astype(np.float32) / np.float32(head_dim)
    return (np.float32(1.0) / np.power(np.float32(theta), exponents)).astype(np.float32)


def rotate_half(x):
    """`[x1, x2] -> [-x2, x1]` on the last axis, split in two halves (not interleaved pairs)."""
    first, second = tf.split(x, 2, axis=-1)
    return tf.concat([-second, first], axis=-1)


class RotaryEmbedding(keras.layers.Layer):
    """Rotates each query or key vector by angles proportional to its position.

    `x * cos(p w) + rotate_half(x) * sin(p w)`, `w` the `D / 2` frequencies
    `theta^(-2i / D)`, each used twice: dimensions `i` and `i + D / 2` form a
    rotating pair. This is the non-interleaved layout of GPT-NeoX and Hugging
    Face transformers' `rotate_half` (GPT-J and Meta's original code rotate
    interleaved pairs `2i, 2i + 1` instead: the same function of permuted
    weights, not of these). Angles, cosines and the rotation are float32
    whatever the compute dtype; the result is cast back. The layer has no
    weights: `theta` and `head_dim` are its configuration.

    Args:
        head_dim: D, even.
        theta: the base of the frequencies (ModernBERT: 160,000 in its global
            layers, 10,000 in its sliding-window layers).
    Call args:
        x: `[B, N, T, D]`.
        positions: int `[T]` (every row) or `[B, T]`.
    Returns:
        `[B, N, T, D]`, `x`'s dtype.
    """

    def __init__(self, head_dim, theta=10000.0, **kwargs):
        super().__init__(**kwargs)
        if head_dim % 2:
            raise ValueError(f"`head_dim` must be even. Received: head_dim={head_dim}")
        if theta <= 0:
            raise ValueError(f"`theta` must be positive. Received: theta={theta}")
        self.head_dim = head_dim
        self.theta = float(theta)
        self._frequencies = inverse_frequencies(head_dim, self.theta)

    def cos_sin(self, positions):
        """float32 cosines and sines `[..., T, D]` of the angles at `positions` (int `[..., T]`)."""
        angles = tf.cast(positions, tf.float32)[..., None] * tf.constant(self._frequencies)  # [..., T, D/2]
        angles = tf.concat([angles, angles], axis=-1)  # [..., T, D]
        return tf.cos(angles), tf.sin(angles)

    def call(self, x, positions):
        cos, sin = self.cos_sin(positions)
        if cos.shape.rank == 3:  # [B, T, D] -> [B, 1, T, D], one rotation for every head
            cos, sin = cos[:, None], sin[:, None]
        return rotate(x, cos, sin)

    def compute_output_shape(self, x_shape, positions_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update({"head_dim": self.head_dim, "theta": self.theta})
        return config


def rotate(x, cos, sin):
    """`x * cos + rotate_half(x) * sin` in float32, cast back to `x`'s dtype; `cos`, `sin` broadcast to `x`."""
    dtype = x.dtype
    x = tf.cast(x, tf.float32)
    return tf.cast(x * cos + rotate_half(x) * sin, dtype)
