"""Padding removal of the padding-free forward paths: cutting all-padding columns, the real tokens' positions.

Shared by every encoder's `call_unpadded` and `call_at(..., unpadded=True)`
(`bert_tf.models.encoder.Encoder`); `shape_bucket` (`bert_tf.layers.token_matrix`) gives the few shapes they see.

Shape legend: B batch, T tokens, M real tokens.
"""

import tensorflow as tf
from tensorflow.python.ops import control_flow_util

from bert_tf.layers.token_matrix import shape_bucket

_CUT_INPUTS = ("token_ids", "segment_ids", "padding_mask")  # the encoder inputs
# Shape buckets of the padding-free paths at inference (`shape_bucket(n, step, per_octave)`). Lengths: at most 25%
# more attention columns (a small part of inference), 20 sizes up to 512. Token rows, which every dense layer
# pays for: at most 1/16 more rows (3% on average), 80 sizes up to 4096.
LENGTH_BUCKETS = dict(step=8, per_octave=4)
TOKEN_BUCKETS = dict(step=16, per_octave=16)
# Where padding columns cost as much as real tokens (DeBERTa's padded graph): at most 1/16 more columns.
DENSE_LENGTH_BUCKETS = dict(step=8, per_octave=16)


def trim_padding(inputs, bucket_limit=None, buckets=None):
    """The encoder inputs cut after the last column where any row has a real token: `(inputs, length)`.

    The columns cut are padding in every row, so the padding-free paths give
    the same outputs at real tokens on the shorter batch (attention masks
    padding keys out), while the attention scores, the embeddings and the
    last layer's keys and values shrink to the longest row: a batch of short
    sentences padded to a long `T` pays for its longest sentence. Dropout
    masks are drawn for the shorter shapes (other draws, the same rate).
    Keeps at least one column. Only the three encoder inputs are cut (others
    pass as they are); `length` is an int32 scalar. Inside an XLA
    compilation (`jit_compile`, TPU) nothing is cut: a length known only at
    run time would make XLA compile the step again for every batch
    (measured: fine-tuning at 5 instead of 16 sequences/s).

    With `bucket_limit` (the longest input the model takes) the length is
    then rounded up to a shape bucket (`shape_bucket`: 8, 16, ..., 64, 80,
    96, ..., at most 25% more), with padding columns added where the input is
    shorter, but never past `bucket_limit` or the input's own length if that
    is longer: the padding-free paths see a few shapes, not one per length.
    `buckets`: `shape_bucket`'s step and per_octave (default
    `LENGTH_BUCKETS`).
    """
    padding_mask = tf.convert_to_tensor(inputs["padding_mask"])
    if in_xla_compilation():
        return inputs, tf.shape(padding_mask)[1]
    columns = tf.range(1, tf.shape(padding_mask)[1] + 1)
    length = tf.reduce_max(tf.where(tf.reduce_any(padding_mask > 0, axis=0), columns, 0))
    length = tf.maximum(length, 1)  # all padding: one column
    if bucket_limit is None:
        cut = {name: value[:, :length] for name, value in inputs.items() if name in _CUT_INPUTS}
        return {**inputs, **cut}, length
    limit = tf.maximum(tf.shape(padding_mask)[1], bucket_limit)
    length = tf.minimum(shape_bucket(length, **(buckets or LENGTH_BUCKETS)), limit)

    def cut_or_pad(value):  # [B, T] -> [B, length], zeros (padding) past T
        value = tf.convert_to_tensor(value)[:, :length]
        return tf.pad(value, [[0, 0], [0, length - tf.shape(value)[1]]])

    return {**inputs, **{name: cut_or_pad(value) for name, value in inputs.items() if name in _CUT_INPUTS}}, length


def in_xla_compilation():
    """Whether the current graph is (inside) an XLA compilation (`jit_compile`, TPU): run-time shapes cost a
    recompilation there, so the padding-free paths keep the shapes they are given."""
    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def bucketed_token_index(padding_mask, bucket=True):
    """Flat positions `b * T + t` of the real tokens, then of a few padding positions: `(token_index [M'], M)`.

    M is the number of real tokens (rows `[:M]`); the padding rows after them
    bring the count to a shape bucket (`shape_bucket`, or all `B * T`
    positions if fewer), so that the padding-free layers see a few matrix
    shapes rather than one per token count (see `shape_bucket`). The padding
    rows are computed like the padded path's padding positions: attention
    masks them as keys, and no output reads them. Without `bucket`, or
    inside an XLA compilation, only the real tokens.
    """
    flat = tf.reshape(tf.convert_to_tensor(padding_mask), [-1])
    real = tf.cast(tf.where(flat > 0)[:, 0], tf.int32)  # [M]
    count = tf.shape(real)[0]
    if not bucket or in_xla_compilation():
        return real, count
    rows = tf.minimum(shape_bucket(count, **TOKEN_BUCKETS), tf.shape(flat)[0])
    padding = tf.cast(tf.where(flat <= 0)[:, 0], tf.int32)[: rows - count]
    return tf.concat([real, padding], axis=0), count
