"""What the in-graph tokenizers share around their own algorithm: added tokens written in the text, and id batches.

- `WHITESPACE_CLASS`: Unicode White_Space as an RE2 class (Rust `char::is_whitespace`, Oniguruma's `\\s`, what
  Hugging Face's pre-tokenizers and `lstrip`/`rstrip` use); RE2's own `\\s` is ASCII only.
- `split_added_tokens`: a batch of strings split at verbatim added tokens (`[MASK]`, `<s>`, ...), each segment
  with its byte start and the token's id (or -1 for text between tokens).
- `ragged_ids`: the `[N, (P)]` ragged int32 of a `detokenize` argument (ragged, dense or one row).

Shape legend: `N` strings, `S` segments, `P` pieces.
"""

import tensorflow as tf
import tensorflow_text as tf_text

WHITESPACE = r"\t\n\x0B\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}"
WHITESPACE_CLASS = f"[{WHITESPACE}]"


def split_added_tokens(strings, pattern, table):
    """Splits valid UTF-8 rows at verbatim added tokens.

    Args:
        strings: tf.string `[N]`.
        pattern: an RE2 pattern matching any added token (with the whitespace it takes, where `lstrip`/`rstrip`),
            or None when there is none to split out.
        table: a lookup table from a token's text (surrounding whitespace removed) to its id, -1 default.

    Returns:
        `(segments, starts, special)`: ragged `[N, (S)]` tf.string, their int64 byte starts, and ragged int32
        `[N, (S)]`, the added token's id of a segment or -1.
    """
    if pattern is None:
        segments = tf.RaggedTensor.from_tensor(strings[:, None])
        starts = tf.zeros_like(segments, tf.int64)
        special = tf.fill(tf.shape(segments.flat_values), -1)
        return segments, starts, segments.with_flat_values(special)
    segments, starts, _ = tf_text.regex_split_with_offsets(strings, pattern, keep_delim_regex_pattern=pattern)
    stripped = tf.strings.regex_replace(segments.flat_values, f"^{WHITESPACE_CLASS}+|{WHITESPACE_CLASS}+$", "")
    special = table.lookup(stripped)
    # Text that happens to read like a token after stripping is no token.
    special = tf.where(tf.strings.regex_full_match(segments.flat_values, pattern), special, -1)
    return segments, starts, segments.with_flat_values(special)


def ragged_ids(ids):
    """`(ids, scalar)`: `ids` (ragged or dense `[N, (P)]`, or one row `[P]`) as a ragged int32 `[N, (P)]`, and
    whether it was one row (the caller returns `result[0]` then)."""
    if not isinstance(ids, tf.RaggedTensor):
        ids = tf.convert_to_tensor(ids)
    scalar = ids.shape.rank == 1
    if scalar:
        ids = ids[None]
    if not isinstance(ids, tf.RaggedTensor):
        ids = tf.RaggedTensor.from_tensor(ids)
    return tf.cast(ids, tf.int32), scalar
