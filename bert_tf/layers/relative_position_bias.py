"""RelativePositionBias: MPNet's learned bias of the attention scores per head and bucket of the query-key distance.

Shapes: B batch, N heads, T tokens, P selected query positions.
"""

import math

import keras
import tensorflow as tf
from keras import ops

from bert_tf.config import MPNET_BUCKETS, MPNET_MAX_DISTANCE
from bert_tf.layers.configured_layer import ConfiguredLayer


def relative_position_bucket(relative_position, num_buckets=MPNET_BUCKETS, max_distance=MPNET_MAX_DISTANCE):
    """The bucket of each signed distance, as MPNet (and T5's bidirectional attention) buckets them.

    Half the buckets hold keys at or before the query, half keys after it
    (`num_buckets // 2` added). Within a half, distances below a quarter of
    the buckets (`max_exact`) have a bucket each; larger ones share
    log-spaced buckets, `max_exact + int(log(d / max_exact) / log(max_distance
    / max_exact) * (half - max_exact))`, capped at the half's last bucket, so
    every distance from `max_distance` on falls in it. Computed in float32 as
    transformers computes it; its only exact integers (d a power of two
    times `max_exact`) come out exact in float32 too.

    Args:
        relative_position: int `[...]` key position minus query position.
        num_buckets: buckets of both halves (even, >= 4).
        max_distance: the distance the log buckets reach the last one at (> `num_buckets // 4`).
    Returns:
        int32 `[...]` in `[0, num_buckets)`.
    """
    distance = -tf.cast(relative_position, tf.int32)  # query minus key
    half = num_buckets // 2
    after = tf.where(distance < 0, half, 0)  # the key comes after the query
    distance = tf.abs(distance)
    max_exact = half // 2
    # The log only where it is used: distances below max_exact take their own bucket (and log(0) is -inf).
    far = tf.cast(tf.maximum(distance, max_exact), tf.float32)
    scale = tf.constant(math.log(max_distance / max_exact), tf.float32)
    logarithmic = max_exact + tf.cast(
        tf.math.log(far / float(max_exact)) / scale * float(half - max_exact), tf.int32
    )  # truncated toward 0, as torch's `.to(torch.long)`
    logarithmic = tf.minimum(logarithmic, half - 1)
    return after + tf.where(distance < max_exact, distance, logarithmic)


class RelativePositionBias(ConfiguredLayer):
    """The `[num_buckets, N]` table of MPNet's relative position bias and the `[1, N, T, T]` bias it adds.

    Hugging Face's `MPNetEncoder.relative_attention_bias`: the encoder
    computes the bias once from the sequence length and every layer adds it
    to its attention scores (after the `1/sqrt(D)` scaling, before the
    padding mask and the softmax). Buckets come from the plain column
    distance (`relative_position_bucket` with 32 buckets, what transformers
    computes whatever `relative_attention_num_buckets` says: table rows past
    32 are never read), so cutting padding columns on the right, as the
    padding-free paths do, changes no real token's bias.

    Args:
        num_heads: N.
        num_buckets: rows of the table (`relative_attention_num_buckets`, at least 32).
        initializer_range: stddev of the table's normal initializer.
    Call args:
        x: `[B, T, ...]`, any tensor whose second axis is the sequence (the embeddings); only its length is read.
    Returns:
        float32 `[1, N, T, T]`: entry `[0, n, q, k]` is head n's bias of query q's score of key k.
    """

    CONFIG = "num_heads num_buckets initializer_range"

    def __init__(self, num_heads, num_buckets=MPNET_BUCKETS, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if isinstance(num_buckets, bool) or not isinstance(num_buckets, int) or num_buckets < MPNET_BUCKETS:
            raise ValueError(
                f"`num_buckets` must be an integer >= {MPNET_BUCKETS} (the buckets MPNet computes). "
                f"Received: num_buckets={num_buckets!r}"
            )
        self.keep_config(locals())

    def build(self, x_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.num_buckets, self.num_heads),
            initializer=keras.initializers.RandomNormal(stddev=self.initializer_range),
            dtype="float32",
        )
        self.built = True

    def call(self, x):
        length = tf.shape(x)[1]
        positions = tf.range(length)
        buckets = relative_position_bucket(positions[None, :] - positions[:, None])  # [T, T], key minus query
        bias = tf.gather(ops.convert_to_tensor(self.embeddings), buckets)  # float32 [T, T, N]
        return tf.transpose(bias, (2, 0, 1))[None]  # [1, N, T, T]

    def compute_output_shape(self, x_shape):
        return (1, self.num_heads, x_shape[1], x_shape[1])


def bias_at(position_bias, positions):
    """The rows of `position_bias` (float32 `[1, N, T, T]`) of the queries at `positions` (int `[B, P]`):
    float32 `[B, N, P, T]`."""
    rows = tf.gather(position_bias[0], tf.cast(positions, tf.int32), axis=1)  # [N, B, P, T]
    return tf.transpose(rows, (1, 0, 2, 3))
