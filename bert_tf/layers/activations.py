"""Activations selected by `hidden_act` in a BERT config."""

import keras
import tensorflow as tf

_SQRT_HALF = 0.7071067811865476  # 1 / sqrt(2)
_INV_SQRT_2PI = 0.3989422804014327  # 1 / sqrt(2 pi)
_SQRT_2_OVER_PI = 0.7978845608028654  # sqrt(2 / pi)
_TANH_CUBIC = 0.044715


def fusable(*tensors):
    """Whether element-wise work on `tensors` may run as one XLA-compiled kernel.

    Only for shapes fully known when the graph is built: those are the shapes
    it runs with, so XLA compiles each kernel once (padding-free paths, whose
    token counts change per batch, keep TensorFlow's ops).
    """
    return all(t.shape.is_fully_defined() for t in tensors)


def _gelu_tanh_grad(x, dy):
    t = tf.tanh(_SQRT_2_OVER_PI * (x + _TANH_CUBIC * x * x * x))
    d_inner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_CUBIC * x * x)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_inner)


def _gelu_erf_grad(x, dy):
    cdf = 0.5 * (1.0 + tf.math.erf(x * _SQRT_HALF))
    return dy * (cdf + x * tf.exp(-0.5 * x * x) * _INV_SQRT_2PI)


# The gradients as single XLA kernels: one pass over memory instead of one per element-wise op.
_FUSED_GRADS = {fn: tf.function(fn, jit_compile=True, autograph=False) for fn in (_gelu_tanh_grad, _gelu_erf_grad)}


def _grad(fn, x, dy):
    return _FUSED_GRADS[fn](x, dy) if fusable(x, dy) else fn(x, dy)


@tf.custom_gradient
def gelu_tanh(x):
    """GELU with the tanh approximation (google-research/bert `modeling.gelu`):
    `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.

    The gradient is written out and, where shapes are static, compiled into
    one XLA kernel instead of being derived op by op.
    """
    t = tf.tanh(_SQRT_2_OVER_PI * (x + _TANH_CUBIC * x * x * x))
    return 0.5 * x * (1.0 + t), lambda dy: _grad(_gelu_tanh_grad, x, dy)


@tf.custom_gradient
def gelu_erf(x):
    """Exact GELU with erf (Hugging Face `hidden_act="gelu"`): `x Phi(x)`, `Phi` the normal CDF.

    The gradient `Phi(x) + x phi(x)` is written out and, where shapes are
    static, compiled into one XLA kernel.
    """
    return x * (0.5 * (1.0 + tf.math.erf(x * _SQRT_HALF))), lambda dy: _grad(_gelu_erf_grad, x, dy)


_BY_NAME = {
    "gelu": gelu_erf,
    "gelu_new": gelu_tanh,
    "gelu_tanh": gelu_tanh,
    "gelu_pytorch_tanh": gelu_tanh,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "swish": keras.activations.silu,
    "silu": keras.activations.silu,
}


def get_activation(name):
    """Maps a `hidden_act` string to a function of one tensor."""
    if name not in _BY_NAME:
        raise ValueError(f"Unknown hidden_act. Expected one of {sorted(_BY_NAME)}. Received: hidden_act={name!r}")
    return _BY_NAME[name]
