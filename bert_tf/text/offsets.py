"""Offsets in UTF-8 text, shared by the tokenizers: byte lengths of code points, byte-to-character offsets,
invalid UTF-8 replaced as Python's `decode(errors="replace")` does, and offsets mapped back to the original bytes."""

import tensorflow as tf

from bert_tf.text.normalization import VALID_UTF8_PATTERN


def utf8_length(code_points):
    """UTF-8 byte length (int64) of each valid code point."""
    return (
        1
        + tf.cast(code_points >= 0x80, tf.int64)
        + tf.cast(code_points >= 0x800, tf.int64)
        + tf.cast(code_points >= 0x10000, tf.int64)
    )


def normalized_to_original(char_starts, char_ends, normalized_lengths, piece_starts, piece_ends):
    """Maps pieces located in normalized text back to the characters they came from.

    The text was normalized character by character: character i owns
    `normalized_lengths[i]` bytes of the normalized text, in order (0 for a
    removed character). A piece starts at the character owning its first
    normalized byte and ends with the one owning its last.

    The owner of normalized byte b is the number of characters whose normalized
    bytes end at or before b: one count per normalized byte (a segment sum) and
    one cumulative sum, then a gather per piece, instead of a search per piece.

    Args:
        char_starts, char_ends: int64 `[C]`, each character's original byte
            span (any coordinates: they are gathered).
        normalized_lengths: int `[C]`, normalized bytes of each character.
        piece_starts, piece_ends: int64 `[P]`, piece spans in the normalized
            bytes of all characters one after another (character i's bytes
            start at `cumsum(normalized_lengths, exclusive=True)[i]`).

    Returns:
        `(starts, ends)`, int64 `[P]`: the pieces' spans in the characters'
        coordinates.
    """
    owners, _ = normalized_owners(normalized_lengths)  # [B + 1]
    first = tf.gather(owners, piece_starts)
    last = tf.gather(owners, piece_ends - 1)
    return tf.gather(char_starts, first), tf.gather(char_ends, last)


def normalized_owners(normalized_lengths):
    """The character owning each normalized byte of characters normalized one after another.

    Args:
        normalized_lengths: int `[C]`, normalized bytes of each character, in order.

    Returns:
        `(owners, ends)`: int64 `[B + 1]`, the index of the character owning each of the B normalized bytes
        (then C, past the last), and int64 `[C]`, where each character's normalized bytes end.
    """
    lengths = tf.cast(normalized_lengths, tf.int64)
    ends = tf.cumsum(lengths)  # [C] where each character's normalized bytes end
    # The characters as rows of the B normalized bytes (those ending at or before byte b precede its owner),
    # and one more row holding the position past the last byte.
    return row_ids(tf.concat([[0], ends, [tf.reduce_sum(lengths) + 1]], 0)), ends


def owners_at(normalized_ends, positions):
    """`normalized_owners(...)[0]` gathered at sorted positions, in time linear in the positions.

    For few characters (or runs) and many positions: each character's end is
    searched among the positions, then one segment sum and one cumulative sum
    over the positions count the characters ending at or before each.

    Args:
        normalized_ends: int64 `[C]`, where each character's normalized bytes end (nondecreasing).
        positions: int64 `[P]`, nondecreasing normalized byte positions.

    Returns:
        int64 `[P]`: the character owning each position.
    """
    count = tf.size(positions, out_type=tf.int64)
    firsts = tf.searchsorted(positions, normalized_ends, side="left", out_type=tf.int64)  # [C] first position past each
    return tf.cumsum(tf.math.unsorted_segment_sum(tf.ones_like(firsts), firsts, count + 1))[:count]


def row_ids(row_splits):
    """int64 `[V]`: the row of each value of a ragged tensor with these row splits `[N + 1]`.

    `RaggedTensor.value_rowids` repeats each row index through a `[rows, longest row]` mask (one
    1,000,000-byte word beside 700 short ones took 6.5 GB there); here one segment sum and one cumulative sum
    over the values count the row starts at or before each value: memory linear in the values, and several
    times the speed on long rows.
    """
    splits = tf.cast(row_splits, tf.int64)
    inner = splits[1:-1]
    count = splits[-1]
    return tf.cumsum(tf.math.unsorted_segment_sum(tf.ones_like(inner), inner, count + 1))[:count]


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


def _transcode(strings):
    return tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)


def replace_invalid_utf8(strings):
    """Rows `[N]` with each invalid UTF-8 sequence replaced by U+FFFD (the rows themselves when all are valid)."""
    return tf.cond(
        tf.reduce_all(tf.strings.regex_full_match(strings, VALID_UTF8_PATTERN)),
        lambda: tf.identity(strings),
        lambda: _transcode(strings),
    )


def concat_rows(a, b):
    """`tf.concat([a, b], axis=1)` of ragged `[N, (X)]` and `[N, (Y)]`, without an integer Transpose.

    Memory is linear in the values (`row_ids`), also with one very long row beside many short ones.

    The ragged concat permutes rows with a Transpose, which TensorFlow's oneDNN build logs at ERROR level
    once per process ("oneDNN supports DT_INT64 only on platforms with AVX-512"); here each value's place
    in the result is computed and the values gathered there.
    """
    a_lengths = a.row_lengths()
    splits = tf.concat([[0], tf.cumsum(a_lengths + tf.cast(b.row_lengths(), a_lengths.dtype))], 0)
    a_rows = tf.cast(row_ids(a.row_splits), a.row_splits.dtype)
    b_rows = tf.cast(row_ids(b.row_splits), a_rows.dtype)
    a_places = (
        tf.gather(splits, a_rows) + tf.range(tf.size(a_rows, out_type=a_rows.dtype)) - tf.gather(a.row_splits, a_rows)
    )
    b_places = (
        tf.gather(splits, b_rows)
        + tf.gather(a_lengths, b_rows)
        + tf.range(tf.size(b_rows, out_type=b_rows.dtype))
        - tf.gather(tf.cast(b.row_splits, a_rows.dtype), b_rows)
    )
    order = tf.math.invert_permutation(tf.concat([a_places, b_places], 0))
    values = tf.gather(tf.concat([a.values, b.values], 0), order)
    return tf.RaggedTensor.from_row_splits(values, splits, validate=False)


def one_per_row(values):
    """`[N]` -> ragged `[N, (1)]`."""
    return tf.RaggedTensor.from_row_lengths(values, tf.ones_like(values, tf.int64), validate=False)


class CharBounds:
    """Character boundaries of valid UTF-8 rows `[N]`, the rows' ends included, for offset conversion."""

    def __init__(self, valid):
        _, char_starts = tf.strings.unicode_decode_with_offsets(valid, "UTF-8")  # [N, (C)]
        self.counts = tf.cast(char_starts.row_lengths(), tf.int64)
        lengths = tf.cast(tf.strings.length(valid), tf.int64)
        # Rows shifted to follow each other, so that one searchsorted serves all.
        self.shift = tf.cumsum(lengths + 1, exclusive=True)
        bounds = concat_rows(char_starts, one_per_row(lengths))  # [N, (C + 1)]
        self.local = bounds.flat_values  # [C' + N]
        self.flat = self.local + tf.gather(self.shift, row_ids(bounds.row_splits))
        self.row_base = tf.cumsum(self.counts + 1, exclusive=True)

    def to_chars(self, offsets, side):
        """Byte offsets ragged `[N, (P)]` -> characters: "start", the one holding the byte; "end", those before."""
        return offsets.with_values(self.indices(offsets, side) - tf.gather(self.row_base, row_ids(offsets.row_splits)))

    def indices(self, offsets, side):
        """Indices into `flat` (see `to_chars`)."""
        rows = row_ids(offsets.row_splits)
        shifted = offsets.values + tf.gather(self.shift, rows)
        if side == "start":
            index = tf.searchsorted(self.flat, shifted, side="right", out_type=tf.int64) - 1
        else:
            index = tf.searchsorted(self.flat, shifted, side="left", out_type=tf.int64)
        base = tf.gather(self.row_base, rows)
        return tf.clip_by_value(index, base, base + tf.gather(self.counts, rows))


def to_original_bytes(strings, starts, ends):
    """Byte offsets into the rows with invalid UTF-8 replaced -> into the original rows.

    The characters are the same; each keeps its bytes' order, an offset inside a character keeping its
    distance from the character's start, within the original character (U+FFFD stands for 1 to 3 bytes).

    Returns:
        the flat values of both.
    """
    bounds = CharBounds(_transcode(strings))
    _, orig_starts = tf.strings.unicode_decode_with_offsets(strings, "UTF-8", errors="replace")
    orig_lengths = tf.cast(tf.strings.length(strings), tf.int64)
    orig_bounds = concat_rows(orig_starts, one_per_row(orig_lengths)).flat_values
    orig_sizes = tf.maximum(tf.concat([orig_bounds[1:], [0]], 0) - orig_bounds, 0)

    def one(offsets):
        index = bounds.indices(offsets, "start")
        within = offsets.values - tf.gather(bounds.local, index)
        return tf.gather(orig_bounds, index) + tf.minimum(within, tf.gather(orig_sizes, index))

    return one(starts), one(ends)


def offsets_in_unit(strings, starts, ends, unit):
    """Byte offsets into the rows with invalid UTF-8 replaced -> offsets into the input rows `strings` `[N]`.

    Args:
        strings: the original tf.string `[N]`.
        starts, ends: ragged int64 `[N, (P)]` byte offsets into `replace_invalid_utf8(strings)`.
        unit: "byte" (offsets into the original bytes, `to_original_bytes`, skipped when every row is valid)
            or "char" (code points of the Python `str` the bytes decode to with `errors="replace"`).

    Returns:
        `(starts, ends)`, ragged int64 `[N, (P)]` in `unit`.
    """
    if unit == "char":
        bounds = CharBounds(replace_invalid_utf8(strings))
        return bounds.to_chars(starts, "start"), bounds.to_chars(ends, "end")
    all_valid = tf.reduce_all(tf.strings.regex_full_match(strings, VALID_UTF8_PATTERN))
    s, e = tf.cond(
        all_valid,
        lambda: (tf.identity(starts.values), tf.identity(ends.values)),
        lambda: to_original_bytes(strings, starts, ends),
    )
    return starts.with_values(s), ends.with_values(e)
