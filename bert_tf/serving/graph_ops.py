"""In-graph helpers shared by the serving modules: input checks, trimming, windows, offsets.

Everything here runs inside the exported SavedModel's functions, so it uses
TensorFlow ops only.

Shape legend: B inputs, T tokens, N windows, P pieces (flat over a batch).
"""

import tensorflow as tf

from bert_tf.text.offsets import bytes_to_chars
from bert_tf.text.windows import take_pieces, window_spans  # noqa: F401  (the serving modules' windows)


def checked_strings(strings, max_bytes):
    """A `tf.string` `[B]` input, its rank enforced at run time and each string capped at `max_bytes` bytes.

    The signature's `TensorSpec([None])` alone does not protect the graph: a
    session-based server (TF Serving, `saved_model_cli run`) feeds whatever
    shape it receives, and tensorflow-text kernels crash the process on a
    scalar. `EnsureShape` raises `InvalidArgumentError` instead, before any
    text op runs (the tokenizer reads its output).

    A cut inside a multi-byte character leaves invalid UTF-8, which the
    tokenizer drops like any other invalid byte.
    """
    strings = tf.ensure_shape(strings, [None])
    return tf.strings.substr(strings, 0, max_bytes)


def same_batch(first, second):
    """`second`, once an assertion that it has as many rows as `first` has run."""
    check = tf.debugging.assert_equal(
        tf.shape(first)[0], tf.shape(second)[0], message="Both string inputs must have the same number of rows"
    )
    with tf.control_dependencies([check]):
        return tf.identity(second)


def checked_ids(token_ids, segment_ids, padding_mask, vocab_size, type_vocab_size, max_position_embeddings):
    """Pre-tokenized encoder inputs int32 `[B, T]`, validated in-graph.

    Ranks, equal shapes, `T <= max_position_embeddings` and id ranges are checked with
    assertions the returned tensors depend on, so bad ids are an
    `InvalidArgumentError` on every device (a GPU gather would return zeros).
    """
    token_ids, segment_ids, padding_mask = (
        tf.ensure_shape(x, [None, None]) for x in (token_ids, segment_ids, padding_mask)
    )
    # A family without segment embeddings (type_vocab_size 0: DistilBERT, ModernBERT) reads no segment ids; a
    # pair's 0 and 1 are accepted as the packer writes them.
    segments = type_vocab_size or 2
    checks = [
        tf.debugging.assert_equal(
            tf.shape(segment_ids), tf.shape(token_ids), message="segment_ids must have the shape of token_ids"
        ),
        tf.debugging.assert_equal(
            tf.shape(padding_mask), tf.shape(token_ids), message="padding_mask must have the shape of token_ids"
        ),
        tf.debugging.assert_less_equal(
            tf.shape(token_ids)[1], max_position_embeddings, message=f"At most {max_position_embeddings} tokens per row"
        ),
        tf.debugging.assert_non_negative(token_ids, message="token_ids must be >= 0"),
        tf.debugging.assert_less(token_ids, vocab_size, message=f"token_ids must be < {vocab_size}"),
        tf.debugging.assert_non_negative(segment_ids, message="segment_ids must be >= 0"),
        tf.debugging.assert_less(segment_ids, segments, message=f"segment_ids must be < {segments}"),
        tf.debugging.assert_non_negative(padding_mask, message="padding_mask must be 0 or 1"),
        tf.debugging.assert_less_equal(padding_mask, 1, message="padding_mask must be 0 or 1"),
    ]
    with tf.control_dependencies(checks):
        return {
            "token_ids": tf.identity(token_ids),
            "segment_ids": tf.identity(segment_ids),
            "padding_mask": tf.identity(padding_mask),
        }


def trim_to_longest(features):
    """Packed inputs `[B, T]` cut to the batch's longest row `[B, T']` (padding never changes real outputs).

    An empty batch keeps one position (`[0, 1]`): the pooler reads position 0.
    """
    lengths = tf.reduce_sum(features["padding_mask"], axis=1)  # [B]
    longest = tf.reduce_max(tf.concat([lengths, [1]], axis=0))
    return {key: value[:, :longest] for key, value in features.items()}


def byte_to_char_offsets(strings, offsets):
    """Byte offsets int64 `[B, K]` into `strings` `[B]` -> character (code point) offsets `[B, K]`.

    Same unit as `BertTokenizer.tokenize_with_offsets(unit="char")`: the
    number of characters that start before the byte offset, an invalid byte
    counting as one character (`bytes.decode("utf-8", errors="replace")`).
    """
    ragged = tf.RaggedTensor.from_tensor(offsets)
    return bytes_to_chars(strings, ragged).to_tensor(shape=tf.shape(offsets, out_type=tf.int64))


def pad_rows(values, row, nrows, default):
    """Flat `values` `[K, ...]` of sorted rows `row` `[K]` as a padded dense `[nrows, max per row, ...]`."""
    ragged = tf.RaggedTensor.from_value_rowids(values, row, nrows=nrows)
    return ragged.to_tensor(default_value=default)
