"""The WordPiece tokenizer's fast path: most real text, in whole-row passes and one tensorflow-text op.

`BertTokenizer` sends every row without a kept special token whose characters
all agree between the reference's tables and ICU's (`FAST_PATH_PATTERN`: real
text in every script; not invalid UTF-8, NUL, or a few hundred rare
characters) here (`WordPieceFastPath.rows`): normalization in whole-row passes
(lowercasing alone for plain ASCII; cased, none for batches without a character
clean_text removes; uncased, tensorflow-text's
`FastBertNormalizer` in one pass for rows without a character it treats
otherwise, `FOLDING_PATTERN`; for other text NFD, one pass removing control
characters and accents, capital sigma, ICU lowercasing), then tensorflow-text's
end-to-end WordPiece, whose own BERT pretokenization then splits words exactly
as the reference does. Which rows qualify is answered for a whole batch at once
(its rows joined) where it can be, row by row only where that fails.

Its word limit is in bytes, so a row with a non-ASCII word of more bytes than
`max_input_chars_per_word` is marked inexact, and the tokenizer redoes it on
its general path. Offsets of fast-path rows whose characters all keep their
byte length (an RE2 pass) are those in the normalized row; the others map back
through a table of each code point's normalized length (`FastPathLengths`,
measured once per process) and one cumulative sum per batch.

Shape legend: `N` strings, `F` fast rows, `P` pieces, `C` characters.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text.normalization import (
    FAST_PATH_PATTERN,
    FOLDING_KEPT_PATTERN,
    FOLDING_PATTERN,
    PLAIN_ASCII_PATTERN,
    UNCHANGED_CASED_PATTERN,
    FastPathLengths,
    normalize_fast_path,
    normalize_uncased_fast_path,
)
from bert_tf.text.offsets import normalized_owners, owners_at, row_ids, utf8_length


def unless_empty(tokenize, strings, with_offsets, extra=None):
    """`tokenize(strings, with_offsets)`, its ops skipped for no rows (then `extra` ends the result)."""

    def empty():
        ids = tf.RaggedTensor.from_row_splits(tf.zeros([0], tf.int32), tf.zeros([1], tf.int64), validate=False)
        offsets = ids.with_values(tf.zeros([0], tf.int64))
        result = (ids, offsets, offsets) if with_offsets else (ids,)
        result += () if extra is None else (extra,)
        return result if len(result) > 1 else result[0]

    return tf.cond(tf.size(strings) > 0, lambda: tokenize(strings, with_offsets), empty)


class WordPieceFastPath(tf.Module):
    """The fast path of one WordPiece vocabulary and normalization.

    Args:
        pieces: the WordPiece model's tokens, by id (as `BertTokenizer` gives
            them to tensorflow-text: duplicates and empty lines replaced).
        unk_token, unk_id: the unknown token and its id.
        max_input_chars_per_word: the reference's word limit (here in bytes).
        lowercase, strip_accents: the normalization (`strip_accents=None`
            follows `lowercase`).
        kept_specials: the special tokens kept whole in the text (rows that
            hold one take the general path); empty for none.
        specials_pattern: an RE2 pattern matching any of them.
    """

    def __init__(
        self,
        pieces,
        unk_token,
        unk_id,
        max_input_chars_per_word,
        lowercase,
        strip_accents,
        kept_specials=(),
        specials_pattern="",
    ):
        super().__init__()
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self._unk_id = unk_id
        self._max_input_chars_per_word = max_input_chars_per_word
        self._kept_specials = tuple(kept_specials)
        # A text of any bytes holding one (`\\C`: a byte, where `.` matches no invalid UTF-8): rows, or a batch's
        # rows joined.
        self._contains_kept_special = "\\C*(?:%s)\\C*" % specials_pattern
        self._fast_path_lengths = None  # built when offsets are first needed
        # Uncased with accent stripping: tensorflow-text's FastBertNormalizer normalizes most rows.
        self._folding = bool(lowercase) and strip_accents in (None, True)
        # Cased without accent stripping: most rows have nothing to normalize (UNCHANGED_CASED_PATTERN).
        self._cased = not lowercase and not strip_accents
        # The normalized rows in one op: tensorflow-text's BERT pretokenization and WordPiece. Its limit is in
        # bytes: exact for ASCII, and the rows with a longer non-ASCII word go to the general path.
        self._end_to_end_wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=pieces,
            suffix_indicator="##",
            max_bytes_per_word=max_input_chars_per_word,
            token_out_type=tf.int32,
            unknown_token=unk_token,
            no_pretokenization=False,
        )

    def rows(self, strings, with_offsets):
        """Which rows of tf.string `[N]` take the fast path, and their tokens.

        Returns:
            bool `[N]` (whether each row takes the fast path), then for those
            `F` rows in order: ids ragged int32 `[F, (P)]` (with offsets: and
            ragged int64 byte starts and ends), and bool `[F]` (whether the row
            is exact; else the general path redoes it).
        """
        # Most batches are all plain ASCII, or (uncased) all of FOLDING_PATTERN, without kept special
        # tokens: RE2 passes over the rows joined by newlines (in every class) answer for the whole batch
        # without a match call a row, and the row passes run only when they fail.
        text = tf.strings.reduce_join(strings, separator="\n")
        kept_specials = self._kept_specials
        if not kept_specials:
            ordinary = tf.constant(True)
        elif any("\n" in token for token in kept_specials):  # (a kept token could span two joined rows)
            ordinary = tf.constant(False)
        else:
            ordinary = tf.logical_not(tf.strings.regex_full_match(text, self._contains_kept_special))
        all_plain = tf.strings.regex_full_match(text, PLAIN_ASCII_PATTERN)
        if self._folding:
            all_folds = tf.cond(
                all_plain, lambda: tf.constant(True), lambda: tf.strings.regex_full_match(text, FOLDING_PATTERN)
            )
            # (This pass stops at the first character neither pattern admits, early in most text that fails.)
            all_folds_kept = tf.cond(
                all_folds, lambda: tf.constant(True), lambda: tf.strings.regex_full_match(text, FOLDING_KEPT_PATTERN)
            )
        else:
            all_folds = all_folds_kept = tf.constant(False)
        # Every row's normalization is lowercasing alone (or nothing), its offsets kept: plain ASCII, or cased rows
        # with nothing for clean_text to remove.
        as_they_are = all_plain
        if self._cased:
            as_they_are = tf.cond(
                all_plain, lambda: tf.constant(True), lambda: tf.strings.regex_full_match(text, UNCHANGED_CASED_PATTERN)
            )

        def some_rows():
            fast = tf.strings.regex_full_match(strings, FAST_PATH_PATTERN)  # [N]
            if kept_specials:
                fast = tf.logical_and(
                    fast,
                    tf.cond(
                        ordinary,
                        lambda: tf.ones_like(fast),
                        lambda: tf.logical_not(tf.strings.regex_full_match(strings, self._contains_kept_special)),
                    ),
                )
            fast_rows = tf.where(fast)[:, 0]
            fast_strings = tf.cond(
                tf.reduce_all(fast), lambda: tf.identity(strings), lambda: tf.gather(strings, fast_rows)
            )
            return fast, fast_strings

        every_row = tf.logical_and(ordinary, tf.logical_or(as_they_are, all_folds_kept))
        fast, fast_strings = tf.cond(
            every_row, lambda: (tf.ones_like(strings, tf.bool), tf.identity(strings)), some_rows
        )
        # What holds for every row of the batch holds for its fast rows.
        fast_out = unless_empty(
            lambda rows, offsets: self._tokenize_rows(rows, offsets, as_they_are, all_folds, all_folds_kept),
            fast_strings,
            with_offsets,
            extra=tf.zeros([0], tf.bool),
        )
        return (fast, *fast_out)

    def _tokenize_rows(self, strings, with_offsets, as_they_are, all_folds, all_folds_kept):
        """Tokenizes rows `[N]` of `FAST_PATH_PATTERN` without kept special tokens.

        They are normalized in whole-row passes (`normalize_fast_path`, or
        uncased `normalize_uncased_fast_path`; when `as_they_are` (bool scalar)
        says every row is plain ASCII or, cased, of `UNCHANGED_CASED_PATTERN`,
        lowercasing alone or nothing, offsets as they are; `all_folds` and
        `all_folds_kept` say that every row is of `FOLDING_PATTERN` or
        `FOLDING_KEPT_PATTERN`, and spare the rows' own check) and go to
        tensorflow-text's end-to-end WordPiece, whose pretokenization splits
        them as the reference does. Its word limit is in bytes
        (`max_input_chars_per_word`), so a non-ASCII word of more bytes than
        that is one `[UNK]` even where the reference, counting characters,
        splits it: such rows are marked inexact.

        Returns:
            ids ragged int32 `[N, (P)]` (with offsets: and ragged int64 byte
            starts and ends into `strings`), then bool `[N]`: whether the row
            is exact (else the caller tokenizes it on the general path).
        """
        lowercase, strip_accents = self.lowercase, self.strip_accents

        def normalize_rows():
            if self._folding:
                return normalize_uncased_fast_path(strings, all_folds, all_folds_kept)
            return normalize_fast_path(strings, lowercase, strip_accents)

        normalized = tf.cond(
            as_they_are, lambda: tf.strings.lower(strings) if lowercase else tf.identity(strings), normalize_rows
        )

        def plain():
            return tf.strings.regex_full_match(strings, PLAIN_ASCII_PATTERN)  # [N]

        ids, starts, ends = self._end_to_end_wordpiece.tokenize_with_offsets(normalized)  # [N, (P)]
        too_long = tf.logical_and(
            tf.equal(ids.values, self._unk_id), ends.values - starts.values > self._max_input_chars_per_word
        )

        def rows_without_too_long():
            # Too long words per row, from one cumulative sum over the pieces.
            running = tf.concat([[0], tf.cumsum(tf.cast(too_long, tf.int32))], 0)
            counts = tf.gather(running, ids.row_splits[1:]) - tf.gather(running, ids.row_splits[:-1])  # [N]
            return tf.logical_or(tf.equal(counts, 0), plain())

        # (Almost always none: then no pass over the pieces.)
        exact = tf.cond(tf.reduce_any(too_long), rows_without_too_long, lambda: tf.ones_like(strings, tf.bool))  # [N]
        if not with_offsets:
            return ids, exact
        plain = tf.cond(as_they_are, lambda: tf.ones_like(strings, tf.bool), plain)
        # Rows whose characters all keep their byte length (plain ASCII, much cased or caseless text, and
        # scripts whose accents and case keep it) keep every piece's offsets: only the others are mapped.
        lengths = self._lengths_table()
        # A row whose byte length changed has a character that changed its own: only rows of the same length
        # need the RE2 pass (none, in most uncased text outside ASCII).
        same_length = tf.logical_and(
            tf.logical_not(plain), tf.equal(tf.strings.length(strings), tf.strings.length(normalized))
        )  # [N]
        unchanged = tf.cond(
            tf.reduce_any(same_length),
            lambda: tf.logical_or(
                plain, tf.logical_and(same_length, tf.strings.regex_full_match(strings, lengths.same_length_pattern))
            ),
            lambda: tf.identity(plain),
        )  # [N]
        flat_starts, flat_ends = tf.cond(
            tf.reduce_all(unchanged),
            lambda: (tf.identity(starts.values), tf.identity(ends.values)),
            lambda: self._original_offsets(strings, normalized, unchanged, ids, starts, ends),
        )
        return ids, starts.with_values(flat_starts), ends.with_values(flat_ends), exact

    def _original_offsets(self, strings, normalized, unchanged, ids, starts, ends):
        """Piece offsets into the fast path's normalized rows -> into `strings` (flat values).

        Every row can be mapped; where the rows that keep their offsets
        (`unchanged` [N]) hold most bytes, only the others are
        (`_mapped_offsets`) and scattered back.
        """
        byte_lengths = tf.strings.length(strings)  # [N]
        changed_bytes = tf.reduce_sum(tf.where(unchanged, 0, byte_lengths))
        rows = tf.where(tf.logical_not(unchanged))[:, 0]  # [R]

        def some_rows():
            splits = ids.row_splits
            # Where the pieces of those rows are among all pieces.
            places = tf.ragged.range(tf.gather(splits, rows), tf.gather(splits, rows + 1)).flat_values[:, None]
            mapped_starts, mapped_ends = self._mapped_offsets(
                tf.gather(strings, rows),
                tf.gather(normalized, rows),
                tf.gather(ids, rows),
                tf.gather(starts, rows),
                tf.gather(ends, rows),
            )
            return (
                tf.tensor_scatter_nd_update(starts.values, places, mapped_starts),
                tf.tensor_scatter_nd_update(ends.values, places, mapped_ends),
            )

        return tf.cond(
            2 * changed_bytes >= tf.reduce_sum(byte_lengths),
            lambda: self._mapped_offsets(strings, normalized, ids, starts, ends),
            some_rows,
        )

    def _mapped_offsets(self, strings, normalized, ids, starts, ends):
        """Piece offsets into the fast path's normalized rows -> into `strings` (flat values), any rows.

        Where normalization changes the byte count little (few characters
        change their length: German, cased Arabic), only the characters that
        change it are decoded (`_sparse_original_offsets`); otherwise every
        character is (`_normalized_offsets_to_original`).
        """
        total = tf.reduce_sum(tf.strings.length(strings))
        growth = tf.abs(tf.reduce_sum(tf.strings.length(normalized)) - total)
        return tf.cond(
            8 * growth < total,
            lambda: self._sparse_original_offsets(strings, normalized, ids, starts, ends),
            lambda: self._normalized_offsets_to_original(strings, normalized, ids, starts, ends),
        )

    def _sparse_original_offsets(self, strings, normalized, ids, starts, ends):
        """`_normalized_offsets_to_original` for rows where few characters change their byte length.

        One RE2 pass cuts the rows (one after another) into runs of characters
        that keep their length, which map linearly, and runs of characters that
        change it, which alone are decoded and looked up; a piece boundary then
        finds its run or character through one cumulative sum.
        """
        table = self._lengths_table()
        pattern = table.changed_run_pattern
        runs, run_starts, run_ends = tf_text.regex_split_with_offsets(
            tf.strings.reduce_join(strings)[None], pattern, keep_delim_regex_pattern=pattern
        )
        runs, run_starts, run_ends = runs.flat_values, run_starts.flat_values, run_ends.flat_values  # [T]
        # Runs alternate between kept and changed characters.
        first_changed = tf.strings.regex_full_match(runs[:1], pattern)  # [1] (or [0]: no text)
        parity = tf.math.floormod(tf.range(tf.size(runs, out_type=tf.int64)), 2)
        changed = tf.math.logical_xor(tf.reduce_any(first_changed), tf.equal(parity, 1))  # [T]
        changed_runs = tf.where(changed)[:, 0]  # [D]
        code_points, char_offsets = tf.strings.unicode_decode_with_offsets(tf.gather(runs, changed_runs), "UTF-8")
        # Atoms: a kept run, or one changed character; each atom's place among all of them.
        atoms_per_run = tf.tensor_scatter_nd_update(
            tf.ones_like(run_starts), changed_runs[:, None], code_points.row_lengths()
        )  # [T]
        atom_splits = tf.cumsum(atoms_per_run, exclusive=True)  # [T]
        kept_runs = tf.where(tf.logical_not(changed))[:, 0]
        flat = code_points.flat_values  # [K]
        char_rows = row_ids(code_points.row_splits)  # [K] each character's row among the changed runs
        char_runs = tf.gather(changed_runs, char_rows)  # [K] ... and among all runs
        char_in_run = tf.range(tf.size(flat, out_type=tf.int64)) - tf.gather(code_points.row_splits, char_rows)
        char_places = tf.gather(atom_splits, char_runs) + char_in_run  # [K]
        places = tf.concat([tf.gather(atom_splits, kept_runs), char_places], 0)[:, None]
        count = tf.reduce_sum(atoms_per_run)
        char_starts = tf.gather(run_starts, char_runs) + char_offsets.flat_values  # [K]

        def atoms(kept, chars):
            return tf.scatter_nd(places, tf.concat([kept, chars], 0), [count])

        kept_lengths = tf.gather(run_ends - run_starts, kept_runs)
        atom_starts = atoms(tf.gather(run_starts, kept_runs), char_starts)  # [A] original byte start
        atom_lengths = atoms(kept_lengths, utf8_length(flat))  # [A] original bytes
        atom_linear = atoms(tf.ones_like(kept_lengths), tf.zeros_like(char_starts))  # [A] 1: a kept run
        normalized_ends = tf.cumsum(atoms(kept_lengths, tf.cast(table.lookup(flat), tf.int64)))  # [A]
        row_bytes = tf.cumsum(tf.cast(tf.strings.length(strings), tf.int64), exclusive=True)  # [N]
        row_normalized = tf.cumsum(tf.cast(tf.strings.length(normalized), tf.int64), exclusive=True)  # [N]
        rows = row_ids(ids.row_splits)  # [P']
        base = tf.gather(row_normalized, rows)
        row_base = tf.gather(row_bytes, rows)
        # Pieces in the normalized rows one after another: sorted, as owners_at needs.
        first = owners_at(normalized_ends, base + starts.values)
        last = owners_at(normalized_ends, base + ends.values - 1)
        normalized_atom_starts = tf.concat([[0], normalized_ends[:-1]], 0)  # [A]
        linear_first = tf.cast(tf.gather(atom_linear, first), tf.bool)
        linear_last = tf.cast(tf.gather(atom_linear, last), tf.bool)
        first_start = tf.gather(atom_starts, first)
        last_start = tf.gather(atom_starts, last)
        mapped_starts = tf.where(
            linear_first, first_start + base + starts.values - tf.gather(normalized_atom_starts, first), first_start
        )
        mapped_ends = tf.where(
            linear_last,
            last_start + base + ends.values - tf.gather(normalized_atom_starts, last),
            last_start + tf.gather(atom_lengths, last),
        )
        return mapped_starts - row_base, mapped_ends - row_base

    def _lengths_table(self):
        """The fast path's normalized length of each code point (`FastPathLengths`), built once."""
        if self._fast_path_lengths is None:
            self._fast_path_lengths = FastPathLengths(self.lowercase, self.strip_accents)
        return self._fast_path_lengths

    def _normalized_offsets_to_original(self, strings, normalized, ids, starts, ends):
        """Piece offsets into the fast path's normalized rows -> into `strings` (flat values).

        Each character normalizes on its own, to as many bytes as the table
        (`FastPathLengths`) says: the rows' normalized bytes are their
        characters' one after another, so the rows are decoded as one string.
        """
        joined = tf.strings.reduce_join(strings)
        # Rows one after another: each character's byte start in them, then their end.
        code_points, char_starts = tf.strings.unicode_decode_with_offsets(joined, "UTF-8")  # [C]
        bounds = tf.concat([char_starts, tf.cast(tf.strings.length(joined), tf.int64)[None]], 0)  # [C + 1]
        # Each row's first byte in the rows one after another, normalized and original: one gather per piece.
        row_lengths = tf.stack([tf.strings.length(normalized), tf.strings.length(strings)], 1)  # [N, 2]
        row_bases = tf.cumsum(tf.cast(row_lengths, tf.int64), exclusive=True)  # [N, 2]
        owners, _ = normalized_owners(self._lengths_table().lookup(code_points))  # [B' + 1]
        piece_bases = tf.gather(row_bases, row_ids(ids.row_splits))  # [P', 2]
        piece_base, row_base = piece_bases[:, 0], piece_bases[:, 1]
        first = tf.gather(owners, piece_base + starts.values)
        last = tf.gather(owners, piece_base + ends.values - 1)
        # A character ends where the next one starts.
        return tf.gather(bounds, first) - row_base, tf.gather(bounds, last + 1) - row_base
