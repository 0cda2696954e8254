"""RotaryEmbedding: rotary position embeddings (RoPE) on queries and keys, in the rotate-half layout.

Shapes: B batch, N heads, T tokens, D head size.
"""

import keras
import numpy as np
import tensorflow as tf

# How the frequencies are scaled for contexts longer than training's (transformers' `rope_type` names): "default"
# (none), "linear" (every frequency divided by `factor`), "dynamic" (NTK-aware: past `max_positions` tokens the
# base grows with the length, `theta * (factor * T / max_positions - (factor - 1)) ** (D / (D - 2))`).
ROPE_TYPES = ("default", "linear", "dynamic")


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

    Scaling for long contexts (`rope_type`, as transformers' rope init
    functions define them): "linear" divides every frequency by `factor`
    (GTE's static NTK scaling is this with `theta * f` and `f ** (2 / D)`);
    "dynamic" keeps the frequencies up to `max_positions` tokens and past
    them recomputes them from a base that grows with the length T (the
    largest position + 1): `theta * (factor * T / max_positions - (factor -
    1)) ** (D / (D - 2))`, in float32 as transformers does. transformers
    keeps the longest length seen so far between calls; here each call
    uses its own length, what transformers computes on a first or a growing
    call. The length is the padded one, as there.

    Args:
        head_dim: D, even.
        theta: the base of the frequencies (ModernBERT: 160,000 in its global
            layers, 10,000 in its sliding-window layers).
        rope_type: one of `ROPE_TYPES`.
        factor: the scaling factor of "linear" and "dynamic" (> 0; dynamic >= 1).
        max_positions: the length "dynamic" scaling starts after (the model's
            `max_position_embeddings`).
    Call args:
        x: `[B, N, T, D]`.
        positions: int `[T]` (every row) or `[B, T]`.
    Returns:
        `[B, N, T, D]`, `x`'s dtype.
    """

    def __init__(self, head_dim, theta=10000.0, rope_type="default", factor=None, max_positions=None, **kwargs):
        super().__init__(**kwargs)
        if head_dim % 2:
            raise ValueError(f"`head_dim` must be even. Received: head_dim={head_dim}")
        if theta <= 0:
            raise ValueError(f"`theta` must be positive. Received: theta={theta}")
        if rope_type not in ROPE_TYPES:
            raise ValueError(f"`rope_type` must be one of {ROPE_TYPES}. Received: rope_type={rope_type!r}")
        if rope_type != "default" and (factor is None or factor <= 0 or (rope_type == "dynamic" and factor < 1)):
            raise ValueError(
                f"`factor` must be a positive number (at least 1 for dynamic scaling) with rope_type={rope_type!r}. "
                f"Received: factor={factor!r}"
            )
        if rope_type == "dynamic" and (max_positions is None or max_positions < 1):
            raise ValueError(
                f"`max_positions` must be a positive integer with rope_type='dynamic'. Received: max_positions={max_positions!r}"
            )
        self.head_dim = head_dim
        self.theta = float(theta)
        self.rope_type = rope_type
        self.factor = None if factor is None else float(factor)
        self.max_positions = max_positions
        self._frequencies = inverse_frequencies(head_dim, self.theta)
        if rope_type == "linear":  # transformers divides the float32 frequencies in place
            self._frequencies = (self._frequencies / np.float32(self.factor)).astype(np.float32)

    def frequencies(self, length):
        """float32 `[D / 2]`: the frequencies for a sequence of `length` positions (the largest + 1; read by
        "dynamic" scaling alone)."""
        frequencies = tf.constant(self._frequencies)
        if self.rope_type != "dynamic":
            return frequencies
        length = tf.cast(length, tf.float32)
        limit = tf.constant(float(self.max_positions), tf.float32)
        factor, dim = tf.constant(self.factor, tf.float32), float(self.head_dim)
        base = tf.constant(self.theta, tf.float32) * tf.pow(
            factor * tf.maximum(length, limit) / limit - (factor - 1.0), dim / (dim - 2.0)
        )
        exponents = tf.constant(np.arange(0, self.head_dim, 2).astype(np.float32) / np.float32(self.head_dim))
        return tf.where(length > limit, 1.0 / tf.pow(base, exponents), frequencies)

    def cos_sin(self, positions):
        """float32 cosines and sines `[..., T, D]` of the angles at `positions` (int `[..., T]`)."""
        frequencies = self.frequencies(tf.reduce_max(positions) + 1 if self.rope_type == "dynamic" else None)
        angles = tf.cast(positions, tf.float32)[..., None] * frequencies  # [..., T, D/2]
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
        if self.rope_type != "default":
            config.update({"rope_type": self.rope_type, "factor": self.factor, "max_positions": self.max_positions})
        return config


def rotate(x, cos, sin):
    """`x * cos + rotate_half(x) * sin` in float32, cast back to `x`'s dtype; `cos`, `sin` broadcast to `x`."""
    dtype = x.dtype
    x = tf.cast(x, tf.float32)
    return tf.cast(x * cos + rotate_half(x) * sin, dtype)
