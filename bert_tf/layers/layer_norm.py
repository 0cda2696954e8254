"""LayerNorm: Keras' LayerNormalization over the last axis with a written-out, fusable gradient."""

import keras
import tensorflow as tf

from bert_tf.layers.fused import when_static


@when_static
def _forward(x, gamma, beta, epsilon):
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    inv_std = tf.math.rsqrt(tf.reduce_mean(centered * centered, axis=-1, keepdims=True) + epsilon)
    return centered * inv_std * gamma + beta, mean, inv_std


@when_static
def _backward(x, mean, inv_std, gamma, dy):
    normalized = (x - mean) * inv_std
    rows = list(range(len(x.shape) - 1))
    dgamma = tf.reduce_sum(dy * normalized, axis=rows)
    dbeta = tf.reduce_sum(dy, axis=rows)
    g = dy * gamma
    dx = inv_std * (
        g
        - tf.reduce_mean(g, axis=-1, keepdims=True)
        - normalized * tf.reduce_mean(g * normalized, axis=-1, keepdims=True)
    )
    return dx, dgamma, dbeta


@tf.custom_gradient
def layer_norm(x, gamma, beta, epsilon):
    """`(x - mean) / sqrt(var + epsilon) * gamma + beta` over the last axis of `x`.

    The gradient is written out (the standard closed form) instead of being
    derived op by op; forward and backward each run as one XLA kernel where
    the shapes are static, TensorFlow's ops otherwise.
    """
    y, mean, inv_std = _forward(x, gamma, beta, epsilon)

    def grad(dy):
        return (*_backward(x, mean, inv_std, gamma, dy), None)

    return y, grad


class LayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` (same variables, names and config) computed by `layer_norm`.

    Other configurations than the default (last axis, center and scale, no
    RMS scaling) fall back to Keras.
    """

    def call(self, inputs):
        last_axis_only = list(self.axis) in ([-1], [len(inputs.shape) - 1])
        if not last_axis_only or self.rms_scaling or not (self.center and self.scale):
            return super().call(inputs)
        x = tf.cast(inputs, self.compute_dtype)
        gamma, beta = (tf.cast(tf.convert_to_tensor(v), x.dtype) for v in (self.gamma, self.beta))
        outputs = layer_norm(x, gamma, beta, tf.constant(self.epsilon, x.dtype))
        return tf.cast(outputs, self.compute_dtype)
