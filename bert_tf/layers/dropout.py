"""Dropout whose random draws, mask and scaling run as one kernel where shapes are static."""

import functools

import tensorflow as tf

from bert_tf.layers.fused import when_static


def keep_mask(shape, seed, rate, alg):
    """bool `shape`: True where a uniform [0, 1) draw is `>= rate` (kept, as in Keras' dropout)."""
    return tf.random.stateless_uniform(shape, seed=seed, alg=alg) >= rate


def scale_kept(keep, x, rate):
    """`x / (1 - rate)` where `keep`, 0 elsewhere."""
    return tf.where(keep, x * tf.cast(1.0 / (1.0 - rate), x.dtype), tf.zeros_like(x))


def _forward(x, seed, rate, alg):
    keep = keep_mask(tf.shape(x), seed, rate, alg)
    return scale_kept(keep, x, rate), keep


def with_draws(forward):
    """`forward(..., alg)` with its random draws by XLA's threefry (its fast generator on CPU) when it
    runs as an XLA kernel, by TensorFlow's philox kernel otherwise (see `when_static`)."""
    return when_static(functools.partial(forward, alg="threefry"), functools.partial(forward, alg="philox"))


_FORWARD, _BACKWARD = with_draws(_forward), when_static(scale_kept)


@tf.custom_gradient
def dropout(x, seed, rate):
    """Inverted dropout of `x` at `rate` with the stateless int32 `[2]` `seed`.

    Draws, mask and scale are one XLA kernel forward and one backward where
    the shapes are static (`when_static`), TensorFlow's ops otherwise; the
    random streams of the two paths differ (threefry vs philox), their
    distribution does not.
    """
    y, keep = _FORWARD(x, seed, rate)
    return y, lambda dy: (_BACKWARD(keep, dy, rate), None, None)


def draw_seed(layer):
    """The next int32 `[2]` seed of a Keras layer's `seed_generator` (a `keras.layers.Dropout`)."""
    return tf.cast(layer.seed_generator.next(), tf.int32)
