"""Activations selected by `hidden_act` in a BERT config."""


import keras
import tensorflow as tf
from keras import ops


def gelu_tanh(x):
    """GELU with the tanh approximation (google-research/bert `modeling.gelu`):
    `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`, which is what `tf.nn.gelu(approximate=True)` computes."""
    return tf.nn.gelu(x, approximate=True)


def gelu_erf(x):
    """Exact GELU with erf (Hugging Face `hidden_act="gelu"`).

    `tf.nn.gelu` after a matmul + bias_add is fused into one oneDNN kernel on CPU.
    """
    return tf.nn.gelu(x, approximate=False)


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
