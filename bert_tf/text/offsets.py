"""Offsets in UTF-8 text: byte lengths of code points and byte-to-character offsets."""

import tensorflow as tf


def utf8_length(code_points):
    """UTF-8 byte length (int64) of each valid code point."""
    return (
        1
        + tf.cast(code_points >= 0x80, tf.int64)
        + tf.cast(code_points >= 0x800, tf.int64)
        + tf.cast(code_points >= 0x10000, tf.int64)
    )


def bytes_to_chars(strings, offsets):
    """Byte offsets ragged `[N, (P)]` (or `[P]` for a scalar string) into character offsets.

    A character offset is the number of characters that start before the byte offset.
    """
    strings = tf.convert_to_tensor(strings, tf.string)
    scalar = strings.shape.rank == 0
    if scalar:
        strings, offsets = strings[None], tf.RaggedTensor.from_tensor(offsets[None])
    _, char_starts = tf.strings.unicode_decode_with_offsets(
        strings, "UTF-8", errors="replace", replacement_char=0xFFFD
    )  # [N, (C)] byte start of each character
    big = tf.int64.max
    dense_starts = char_starts.to_tensor(default_value=big)  # [N, C]
    dense_offsets = offsets.to_tensor(default_value=0)  # [N, P]
    chars = tf.searchsorted(dense_starts, dense_offsets, side="left")
    result = tf.RaggedTensor.from_tensor(tf.cast(chars, tf.int64), lengths=offsets.row_lengths())
    return result[0] if scalar else result
