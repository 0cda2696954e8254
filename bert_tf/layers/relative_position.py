"""DeBERTa's relative positions: token distances, log-bucketed, as rows of the relative-embedding table.

Shapes: Q query positions, K key positions, S the attention span (`position_buckets`, or
`max_relative_positions` without buckets); the table has 2S rows.
"""

import tensorflow as tf


def log_bucket_position(relative_position, position_buckets, max_position):
    """Distances bucketed as DeBERTa-v2 does: exact within `position_buckets // 2`, logarithmic beyond.

    A distance d with |d| < mid = `position_buckets // 2` stays d; a larger
    one becomes `sign(d) * (ceil(log(|d| / mid) / log((max_position - 1) / mid) * (mid - 1)) + mid)`,
    computed in float32 as the reference does, so distances past
    `max_position` keep growing slowly instead of being cut.

    Args:
        relative_position: int `[...]` signed distances (query minus key).
        position_buckets: the number of buckets (> 0).
        max_position: the distance the log scale reaches `position_buckets - 1` at (> 1).
    Returns:
        int32 `[...]`, odd in `relative_position` (`f(-d) = -f(d)`).
    """
    relative_position = tf.cast(relative_position, tf.int32)
    mid = position_buckets // 2
    sign = tf.sign(relative_position)
    near = (relative_position < mid) & (relative_position > -mid)
    absolute = tf.where(near, mid - 1, tf.abs(relative_position))  # [...]
    scale = tf.math.log(tf.constant((max_position - 1) / mid, tf.float32))
    log_position = tf.math.ceil(
        tf.math.log(tf.cast(absolute, tf.float32) / float(mid)) / scale * float(mid - 1)
    ) + float(mid)
    bucketed = tf.cast(log_position, tf.int32) * sign
    return tf.where(absolute <= mid, relative_position, bucketed)


def relative_position_index(query_positions, key_length, position_buckets, max_relative_positions):
    """Row of the relative-embedding table for every (query, key) pair.

    Args:
        query_positions: int `[..., Q]` positions of the queries (`tf.range(T)` for all; `[B, P]` for some).
        key_length: K, the keys being positions `0 .. K-1`.
        position_buckets: log buckets (> 0), or <= 0 for plain distances.
        max_relative_positions: the largest distance (> 0).
    Returns:
        int32 `[..., Q, K]`: `clip(bucket(q - k) + S, 0, 2S - 1)`, S the span.
    """
    span = position_buckets if position_buckets > 0 else max_relative_positions
    distance = tf.expand_dims(tf.cast(query_positions, tf.int32), -1) - tf.range(
        key_length, dtype=tf.int32
    )  # [..., Q, K]
    if position_buckets > 0:
        distance = log_bucket_position(distance, position_buckets, max_relative_positions)
    return tf.clip_by_value(distance + span, 0, 2 * span - 1)
