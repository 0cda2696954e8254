"""Activations selected by `hidden_act` in a BERT config."""

import keras
import tensorflow as tf

from bert_tf.config import ACTIVATION_FORMULAS
from bert_tf.layers.fused import float32_inside, when_static

_SQRT_HALF = 0.7071067811865476  # 1 / sqrt(2)
_INV_SQRT_2PI = 0.3989422804014327  # 1 / sqrt(2 pi)
_SQRT_2_OVER_PI = 0.7978845608028654  # sqrt(2 / pi)
_TANH_CUBIC = 0.044715


def _gelu_tanh_derivative(x, dy):
    t = tf.tanh(_SQRT_2_OVER_PI * (x + _TANH_CUBIC * x * x * x))
    d_inner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_CUBIC * x * x)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_inner)


def _gelu_erf_derivative(x, dy):
    cdf = 0.5 * (1.0 + tf.math.erf(x * _SQRT_HALF))
    return dy * (cdf + x * tf.exp(-0.5 * x * x) * _INV_SQRT_2PI)


# One XLA kernel each where shapes are static, computing in float32 there (`float32_inside`).
_gelu_tanh_grad = when_static(float32_inside(_gelu_tanh_derivative), _gelu_tanh_derivative)
_gelu_erf_grad = when_static(float32_inside(_gelu_erf_derivative), _gelu_erf_derivative)


@tf.custom_gradient
def gelu_tanh(x):
    """GELU with the tanh approximation (google-research/bert `modeling.gelu`):
    `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.

    The gradient is written out and, where shapes are static, compiled into
    one XLA kernel instead of being derived op by op.
    """
    t = tf.tanh(_SQRT_2_OVER_PI * (x + _TANH_CUBIC * x * x * x))
    return 0.5 * x * (1.0 + t), lambda dy: _gelu_tanh_grad(x, dy)


@tf.custom_gradient
def gelu_erf(x):
    """Exact GELU with erf (Hugging Face `hidden_act="gelu"`): `x Phi(x)`, `Phi` the normal CDF.

    The gradient `Phi(x) + x phi(x)` is written out and, where shapes are
    static, compiled into one XLA kernel.
    """
    return x * (0.5 * (1.0 + tf.math.erf(x * _SQRT_HALF))), lambda dy: _gelu_erf_grad(x, dy)


# The formulas that `bert_tf.config.ACTIVATION_FORMULAS` names.
_FORMULAS = {
    "gelu_erf": gelu_erf,
    "gelu_tanh": gelu_tanh,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "silu": keras.activations.silu,
}


def get_activation(name):
    """Maps a `hidden_act` string (one of `bert_tf.config.ACTIVATIONS`) to a function of one tensor."""
    if name not in ACTIVATION_FORMULAS:
        raise ValueError(
            f"Unknown hidden_act. Expected one of {sorted(ACTIVATION_FORMULAS)}. Received: hidden_act={name!r}"
        )
    return _FORMULAS[ACTIVATION_FORMULAS[name]]
