"""Dropout whose random draws, mask and scaling run as one kernel where shapes are static."""

import functools

import tensorflow as tf

from bert_tf.layers.activations import fusable


def keep_mask(shape, seed, rate, alg):
    """bool `shape`: True where a uniform [0, 1) draw is `>= rate` (kept, as in Keras' dropout)."""
    return tf.random.stateless_uniform(shape, seed=seed, alg=alg) >= rate


def scale_kept(keep, x, rate):
    """`x / (1 - rate)` where `keep`, 0 elsewhere."""
    return tf.where(keep, x * tf.cast(1.0 / (1.0 - rate), x.dtype), tf.zeros_like(x))


def _forward(x, seed, rate, alg):
    keep = keep_mask(tf.shape(x), seed, rate, alg)
    return scale_kept(keep, x, rate), keep


def fused_pair(forward, backward):
    """`forward` and `backward` as XLA kernels (random bits by threefry, XLA's fast generator on CPU),
    and as TensorFlow ops (philox) for shapes only known at run time."""
    return ({True: tf.function(functools.partial(forward, alg="threefry"), jit_compile=True, autograph=False),
             False: functools.partial(forward, alg="philox")},
            {True: tf.function(backward, jit_compile=True, autograph=False), False: backward})


_FORWARD, _BACKWARD = fused_pair(_forward, scale_kept)


@tf.custom_gradient
def dropout(x, seed, rate):
    """Inverted dropout of `x` at `rate` with the stateless int32 `[2]` `seed`.

    Draws, mask and scale are one XLA kernel forward and one backward where
    the shapes are static (`fusable`), TensorFlow's ops otherwise; the
    random streams of the two paths differ (threefry vs philox), their
    distribution does not.
    """
    fused = fusable(x)
    y, keep = _FORWARD[fused](x, seed, rate)
    return y, lambda dy: (_BACKWARD[fused](keep, dy, rate), None, None)


def draw_seed(layer):
    """The next int32 `[2]` seed of a Keras layer's `seed_generator` (a `keras.layers.Dropout`)."""
    return tf.cast(layer.seed_generator.next(), tf.int32)
