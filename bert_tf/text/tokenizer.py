"""In-graph BERT WordPiece tokenizer with reference-exact ids.

`BertTokenizer` turns raw UTF-8 strings into WordPiece ids with TensorFlow and
tensorflow-text ops only, so it runs inside `tf.data`, `tf.function` and an
exported SavedModel. Its ids are exactly those of the reference BERT
tokenizer: Hugging Face `tokenizers.BertWordPieceTokenizer` (`clean_text=True`,
`handle_chinese_chars=True`), which follows google-research/bert
`tokenization.FullTokenizer`.

Pipeline (the reference's order):

1. Invalid UTF-8 is replaced by U+FFFD (which cleaning then removes), as
   Python's `bytes.decode("utf-8", errors="replace")` would before the
   reference.
2. Unless `split_special_tokens`, the vocabulary's special tokens written in
   the raw text ("[MASK]", "[SEP]", ... in exact case, before any
   normalization, also glued to words) are cut out and become their single
   ids, as Hugging Face's tokenizers do by default.
3. Normalize and split the rest into words: clean, strip accents, lowercase,
   split on whitespace, punctuation and CJK ideographs
   (`bert_tf.text.normalization`, which holds the reference's Unicode tables).
4. WordPiece (greedy longest match first, `##` continuations); a word longer
   than `max_input_chars_per_word` characters becomes `[UNK]`.

Speed: every row without a kept special token whose characters all agree
between the reference's tables and ICU's (`FAST_PATH_PATTERN`: real text in
every script; not invalid UTF-8, NUL, or a few hundred rare characters) takes
the fast path: normalization in whole-row passes (lowercasing alone for plain
ASCII; uncased, tensorflow-text's `FastBertNormalizer` in one pass for rows
without a character it treats otherwise, `FOLDING_PATTERN`; for other text NFD,
one pass removing control characters and accents, capital sigma, ICU
lowercasing), then tensorflow-text's end-to-end WordPiece, whose own BERT
pretokenization then splits words exactly as the reference does. Which rows
qualify is answered for a whole batch at once (its rows joined) where it can
be, row by row only where that fails.
Its word limit is in bytes, so a row with a non-ASCII word of more bytes than
`max_input_chars_per_word` is redone on the general path (steps 1-4 above, one
op each). Offsets of fast-path rows whose characters all keep their byte
length (an RE2 pass) are those in the normalized row; the others map back
through a table of each code point's normalized length (`FastPathLengths`,
measured once per process) and one cumulative sum per batch.

Vocabulary sources: a `vocab.txt` (`BertTokenizer(vocab_file)`, kept as a
SavedModel asset), an in-memory list (`BertTokenizer(vocabulary=[...])`, kept
as constants and in `get_config()`), or a Hugging Face WordPiece
`tokenizer.json` (`BertTokenizer.from_tokenizer_json(path)`).

Shape legend: `N` strings, `W` words, `P` pieces.
"""

import json

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text.added_tokens import ragged_ids
from bert_tf.text.normalization import (
    FAST_PATH_PATTERN,
    FOLDING_KEPT_PATTERN,
    FOLDING_PATTERN,
    PLAIN_ASCII_PATTERN,
    FastPathLengths,
    normalize,
    normalize_fast_path,
    normalize_uncased_fast_path,
    split_words,
)
from bert_tf.text.offsets import (
    bytes_to_chars,
    normalized_owners,
    normalized_to_original,
    owners_at,
    replace_invalid_utf8,
    row_ids,
    to_original_bytes,
    utf8_length,
)
from bert_tf.text.parallel import in_row_shards
from bert_tf.text.vocab import SPECIAL_TOKENS


def _read_vocab(vocab_file):
    """Reads a vocab file as the reference does: one token a line."""
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
        lines = f.read().decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    empty = [number for number, line in enumerate(lines, 1) if not line]
    if empty:
        # TextFileInitializer (the id -> token table) refuses empty lines.
        raise ValueError(
            f"`vocab_file` has an empty line (line {empty[0]}); give its tokens as `vocabulary=[...]` instead. "
            f"Received: vocab_file={vocab_file}"
        )
    return [line.rstrip() for line in lines]


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenizer(keras.layers.Layer):
    """BERT WordPiece tokenizer layer with the reference tokenizer's ids.

    Runs entirely in-graph (tf.data, tf.function, SavedModel). Ids equal
    those of Hugging Face `tokenizers.BertWordPieceTokenizer(vocab_file,
    lowercase=lowercase, strip_accents=strip_accents, clean_text=True,
    handle_chinese_chars=True)` (and `BertTokenizerFast`, `BertTokenizer`)
    without special tokens added: by default, as there, the vocabulary's
    special tokens written in the text ("[MASK]", "[SEP]", ... in exact case,
    also glued to words: "x[SEP]y") are their single ids, each spanning itself
    in `tokenize_with_offsets`. With `split_special_tokens=True` they are
    ordinary text, and the ids are those of google-research/bert
    `FullTokenizer` (which never keeps special tokens).

    Invalid UTF-8 bytes are replaced by U+FFFD, which cleaning removes: the
    ids are those the reference gives for
    `line.decode("utf-8", errors="replace")`.

    Args:
        vocab_file: path to a `vocab.txt` (one token a line, id = line
            number). Kept as a path in `get_config()` and tracked as an asset
            in a SavedModel. Give this or `vocabulary`.
        lowercase: whether to lowercase (uncased models).
        strip_accents: whether to strip accents (NFD then drop `Mn`); `None`
            (default) follows `lowercase`, as BERT uncased does.
        max_input_chars_per_word: a word of more characters than this (after
            normalization) becomes one `[UNK]`.
        split_special_tokens: if `False` (default), the vocabulary's special
            tokens found verbatim in the raw text (exact case) become their
            single ids, as the Hugging Face tokenizer does by default. If
            `True`, literal "[MASK]", "[SEP]", ... in the text are ordinary
            text ("[", "mask", "]"), as in the original FullTokenizer.
        vocabulary: the tokens as a list of strings (id = index), instead of
            `vocab_file`: the lines a `vocab.txt` would hold. Kept as a list in
            `get_config()` and as constants in a SavedModel (no file needed).
        unk_token: the vocabulary's unknown token (default "[UNK]").
        special_tokens: the tokens kept whole by `split_special_tokens=False`,
            each one in the vocabulary; `None` (default) keeps those of
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]" that the vocabulary
            has.
        **kwargs: standard `keras.layers.Layer` arguments.

    `get_config()` holds `vocab_file` or `vocabulary`, whichever was given,
    and `unk_token` and `special_tokens` only where they are not the defaults.

    Example:

    >>> tokenizer = BertTokenizer("vocab.txt")
    >>> ids = tokenizer(tf.constant(["Hello world!"]))  # ragged [1, (P)]
    >>> BertTokenizer(vocabulary=["[PAD]", "[UNK]", "hello", "world", "!"])
    >>> BertTokenizer.from_tokenizer_json("tokenizer.json")
    """

    def __init__(
        self,
        vocab_file=None,
        lowercase=True,
        strip_accents=None,
        max_input_chars_per_word=100,
        split_special_tokens=False,
        *,
        vocabulary=None,
        unk_token="[UNK]",
        special_tokens=None,
        **kwargs,
    ):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        if vocabulary is None:
            if not isinstance(vocab_file, str) or not vocab_file:
                raise ValueError(
                    "`vocab_file` must be a non-empty path string (or give `vocabulary`, a list of tokens). "
                    f"Received: vocab_file={vocab_file!r}"
                )
            if not tf.io.gfile.exists(vocab_file):
                raise ValueError(f"`vocab_file` does not exist. Received: vocab_file={vocab_file}")
        else:
            if vocab_file is not None:
                raise ValueError(
                    "Give `vocab_file` or `vocabulary`, not both. "
                    f"Received: vocab_file={vocab_file!r} and a vocabulary of {_count(vocabulary)} tokens"
                )
            if (
                not isinstance(vocabulary, (list, tuple))
                or not vocabulary
                or not all(isinstance(token, str) for token in vocabulary)
            ):
                raise ValueError(
                    f"`vocabulary` must be a non-empty list of strings. Received: vocabulary={_preview(vocabulary)}"
                )
            vocabulary = list(vocabulary)
        if not isinstance(unk_token, str) or not unk_token:
            raise ValueError(f"`unk_token` must be a non-empty string. Received: unk_token={unk_token!r}")
        if special_tokens is not None and (
            not isinstance(special_tokens, (list, tuple))
            or not all(isinstance(token, str) and token for token in special_tokens)
        ):
            raise ValueError(
                "`special_tokens` must be None or a list of non-empty strings. "
                f"Received: special_tokens={special_tokens!r}"
            )
        if not isinstance(lowercase, bool):
            raise ValueError(f"`lowercase` must be a bool. Received: lowercase={lowercase!r}")
        if strip_accents is not None and not isinstance(strip_accents, bool):
            raise ValueError(f"`strip_accents` must be a bool or None. Received: strip_accents={strip_accents!r}")
        if (
            not isinstance(max_input_chars_per_word, int)
            or isinstance(max_input_chars_per_word, bool)
            or max_input_chars_per_word < 1
        ):
            raise ValueError(
                "`max_input_chars_per_word` must be a positive int. Received: "
                f"max_input_chars_per_word={max_input_chars_per_word!r}"
            )
        if not isinstance(split_special_tokens, bool):
            raise ValueError(
                f"`split_special_tokens` must be a bool. Received: split_special_tokens={split_special_tokens!r}"
            )
        self.vocab_file = vocab_file
        self.vocabulary = vocabulary
        self.unk_token = unk_token
        self.special_tokens = None if special_tokens is None else list(special_tokens)
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.max_input_chars_per_word = max_input_chars_per_word
        self.split_special_tokens = split_special_tokens
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self._fast_path_lengths = None  # built when offsets are first needed
        # Uncased with accent stripping: tensorflow-text's FastBertNormalizer normalizes most rows.
        self._folding = bool(lowercase) and strip_accents in (None, True)
        self._load_vocabulary()
        self.built = True

    @classmethod
    def from_tokenizer_json(cls, path, **overrides):
        """Builds the tokenizer a Hugging Face WordPiece `tokenizer.json` describes.

        Reads the vocabulary (`model.vocab`, token -> id, ids 0..V-1), the
        unknown token, `max_input_chars_per_word`, the `BertNormalizer`
        settings (`lowercase`; `strip_accents`, where null following
        `lowercase`) and the added tokens marked `special`, which
        `split_special_tokens=False` keeps whole. The vocabulary is kept in
        memory (`vocabulary=`), so no other file is needed.

        Args:
            path: path to a `tokenizer.json` whose `model.type` is "WordPiece"
                (BERT, DistilBERT, ELECTRA, ... as `transformers` saves them).
            **overrides: constructor arguments that replace those read from
                the file, or add to them (e.g. `split_special_tokens=False`,
                `name`).

        Returns:
            a `BertTokenizer`.

        Raises:
            ValueError: naming the file, where it is not JSON or describes a
                tokenizer this class cannot reproduce exactly (another model
                type, a `continuing_subword_prefix` other than "##",
                `clean_text` or `handle_chinese_chars` false, vocabulary ids
                with gaps, non-special added tokens, ...).
        """
        return cls(**{**_wordpiece_json_arguments(path), **overrides})

    # === Vocabulary ===

    def _load_vocabulary(self):
        if self.vocabulary is None:
            vocab = _read_vocab(self.vocab_file)
            source = f"vocab_file={self.vocab_file}"
        else:
            vocab = self.vocabulary
            source = f"vocabulary={_preview(vocab)}"
        # The reference maps a token to its last line; earlier duplicates and
        # empty lines get placeholders no normalized word can contain (U+0001
        # is removed by cleaning; not NUL, which ends a key in
        # tensorflow-text's WordPiece model builder), so that no id shifts.
        last = {token: i for i, token in enumerate(vocab)}
        pieces = [token if token and last[token] == i else f"\x01{i}" for i, token in enumerate(vocab)]
        unk = self.unk_token
        if unk not in last:
            raise ValueError(f"The vocabulary has no {unk!r} token (`unk_token`). Received: {source}")
        if self.special_tokens is None:
            specials = [t for t in SPECIAL_TOKENS if t in last]
        else:
            missing = [t for t in self.special_tokens if t not in last]
            if missing:
                raise ValueError(
                    f"`special_tokens` {missing} are not in the vocabulary. "
                    f"Received: special_tokens={self.special_tokens!r}"
                )
            specials = self.special_tokens
        self._token_to_id = last
        self._vocabulary_list = list(vocab)
        self._vocab_size = len(vocab)
        self._specials = {t: last[t] for t in specials}
        # Longest first, so that a special token containing another one wins.
        self._specials_re = "|".join(_escape(t) for t in sorted(self._specials, key=len, reverse=True))
        # A text of any bytes holding one (`\\C`: a byte, where `.` matches no invalid UTF-8): rows, or a batch's
        # rows joined.
        self._specials_contains_re = "\\C*(?:%s)\\C*" % self._specials_re
        # Words longer than the limit never reach WordPiece (they are unknown).
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=pieces,
            suffix_indicator="##",
            max_bytes_per_word=max(4 * self.max_input_chars_per_word + 4, len(unk.encode("utf-8"))),
            token_out_type=tf.int32,
            unknown_token=unk,
            no_pretokenization=True,
        )
        # The fast path's normalized rows in one op: tensorflow-text's BERT
        # pretokenization and WordPiece. Its limit is in bytes: exact for ASCII,
        # and the fast path sends other rows with a longer word to the general one.
        self._end_to_end_wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=pieces,
            suffix_indicator="##",
            max_bytes_per_word=self.max_input_chars_per_word,
            token_out_type=tf.int32,
            unknown_token=unk,
            no_pretokenization=False,
        )
        if self.vocabulary is None:
            # id -> token for detokenize, initialized from the file: the file
            # is an asset of any SavedModel that holds this layer.
            self._vocab_asset = tf.saved_model.Asset(self.vocab_file)
            initializer = tf.lookup.TextFileInitializer(
                self._vocab_asset,
                key_dtype=tf.int64,
                key_index=tf.lookup.TextFileIndex.LINE_NUMBER,
                value_dtype=tf.string,
                value_index=tf.lookup.TextFileIndex.WHOLE_LINE,
            )
        else:
            # From constants: a SavedModel holds them, no file is needed.
            initializer = tf.lookup.KeyValueTensorInitializer(
                keys=tf.range(len(vocab), dtype=tf.int64),
                values=tf.constant(vocab, tf.string),
            )
        # Anonymous: a file's table is otherwise shared by name (made of the Asset's address), so a table
        # whose handle outlives its tokenizer (in a traced function, a traceback) could serve a later
        # tokenizer's detokenize with another vocabulary.
        self._id_to_token = tf.lookup.StaticHashTable(initializer, default_value=unk, experimental_is_anonymous=True)

    def _special_id(self, token):
        """Id of a BERT special token by its name, special for `split_special_tokens` or not."""
        return self._token_to_id.get(token)

    def get_vocabulary(self):
        """The vocabulary's tokens, by id."""
        return list(self._vocabulary_list)

    def continuation_ids(self):
        """Ids of the pieces that continue the word before them (`##` pieces): whole-word masking and the
        tagger's word starts read them."""
        return [i for i, token in enumerate(self._vocabulary_list) if token.startswith("##")]

    @property
    def vocab_size(self):
        """Number of vocabulary entries (lines of the vocabulary file)."""
        return self._vocab_size

    @property
    def pad_id(self):
        return self._special_id("[PAD]")

    @property
    def unk_id(self):
        return self._token_to_id[self.unk_token]

    @property
    def cls_id(self):
        return self._special_id("[CLS]")

    @property
    def sep_id(self):
        return self._special_id("[SEP]")

    @property
    def mask_id(self):
        return self._special_id("[MASK]")

    def token_to_id(self, token):
        """Id of a vocabulary token (Python), or `None`."""
        return self._token_to_id.get(token)

    # === Tokenization ===

    def _words_to_pieces(self, words, with_offsets):
        """WordPiece over flat normalized words.

        Args:
            words: tf.string `[W]`.

        Returns:
            ids ragged `[W, (P)]` int32 and, with offsets, ragged int64
            `[W, (P)]` starts and ends (bytes into each word).
        """
        lengths = tf.strings.length(words, unit="UTF8_CHAR")
        too_long = lengths > self.max_input_chars_per_word  # [W]
        byte_lengths = tf.cast(tf.strings.length(words), tf.int64)
        # The unknown token is itself a vocabulary entry: one piece, its id.
        words = tf.where(too_long, self.unk_token, words)
        if not with_offsets:
            return self._wordpiece.tokenize(words)
        ids, starts, ends = self._wordpiece.tokenize_with_offsets(words)
        too_long = tf.repeat(too_long, ids.row_lengths())
        byte_lengths = tf.repeat(byte_lengths, ids.row_lengths())
        ends = ends.with_values(tf.where(too_long, byte_lengths, ends.values))
        return ids, starts, ends

    def _segments(self, strings):
        """Splits valid UTF-8 rows at verbatim special tokens, if kept.

        Returns:
            `(segments, special_ids)`: ragged `[N, (S)]` tf.string (with byte
            start offsets as a third item) and ragged int32 `[N, (S)]`, the
            special id of a segment or -1.
        """
        if self.split_special_tokens or not self._specials:
            segments = tf.RaggedTensor.from_tensor(strings[:, None])
            starts = tf.zeros_like(segments, tf.int64)
            special = tf.fill(tf.shape(segments.flat_values), -1)
            return segments, starts, segments.with_flat_values(special)
        pattern = self._specials_re
        segments, starts, _ = tf_text.regex_split_with_offsets(strings, pattern, keep_delim_regex_pattern=pattern)
        flat = segments.flat_values
        special = tf.fill(tf.shape(flat), -1)
        for token, token_id in self._specials.items():
            special = tf.where(tf.equal(flat, token), token_id, special)
        return segments, starts, segments.with_flat_values(special)

    def _tokenize(self, inputs, with_offsets):
        strings = tf.convert_to_tensor(inputs, tf.string)
        scalar = strings.shape.rank == 0
        if scalar:
            strings = strings[None]
        if strings.shape.rank != 1:
            raise ValueError(
                f"`inputs` must be a tf.string scalar or vector [N]. Received: inputs.shape={strings.shape}"
            )
        # Two paths. The fast one takes every row of FAST_PATH_PATTERN without
        # a kept special token (almost all real text): whole-row normalization
        # passes (lowercasing alone for plain ASCII), then tensorflow-text's
        # end-to-end WordPiece. The general one takes the rest (kept special
        # tokens, invalid UTF-8, NUL, the rare characters the reference's own
        # tables treat otherwise than ICU) and the rows whose words the fast
        # one cannot give exactly. The results go back to the input order;
        # batches that are all fast skip the routing. Without offsets, the fast
        # path runs on row shards side by side on the CPU's cores
        # (`in_row_shards`); with them it runs whole, as sharding would double
        # that graph (3.4 vs 1.5 MB) and its first call (2.6 vs 1.1 s).
        if with_offsets:
            fast, *fast_out, exact = self._fast_path_rows(strings, with_offsets)
        else:
            fast, *fast_out, exact = in_row_shards(lambda rows: self._fast_path_rows(rows, with_offsets), strings)
        every_fast = tf.reduce_all(fast)
        fast_rows = tf.where(fast)[:, 0]

        def routed():
            # Rows the fast path cannot give exactly take the general one.
            kept = tf.where(exact)[:, 0]
            other_rows = tf.concat(
                [tf.where(tf.logical_not(fast))[:, 0], tf.gather(fast_rows, tf.where(tf.logical_not(exact))[:, 0])], 0
            )
            other_out = self._unless_empty(self._tokenize_general, tf.gather(strings, other_rows), with_offsets)
            if not with_offsets:
                other_out = (other_out,)
            order = tf.math.invert_permutation(tf.concat([tf.gather(fast_rows, kept), other_rows], 0))
            return tuple(
                tf.gather(tf.concat([tf.gather(a, kept), b], axis=0), order) for a, b in zip(fast_out, other_out)
            )

        outputs = tf.cond(
            tf.logical_and(every_fast, tf.reduce_all(exact)),
            lambda: tuple(x.with_values(tf.identity(x.values)) for x in fast_out),
            routed,
        )
        if scalar:
            outputs = tuple(x[0] for x in outputs)
        return outputs if with_offsets else outputs[0]

    def _fast_path_rows(self, strings, with_offsets):
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
        kept_specials = not self.split_special_tokens and self._specials
        if not kept_specials:
            ordinary = tf.constant(True)
        elif any("\n" in token for token in self._specials):  # (a kept token could span two joined rows)
            ordinary = tf.constant(False)
        else:
            ordinary = tf.logical_not(tf.strings.regex_full_match(text, self._specials_contains_re))
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

        def some_rows():
            fast = tf.strings.regex_full_match(strings, FAST_PATH_PATTERN)  # [N]
            if kept_specials:
                fast = tf.logical_and(
                    fast,
                    tf.cond(
                        ordinary,
                        lambda: tf.ones_like(fast),
                        lambda: tf.logical_not(tf.strings.regex_full_match(strings, self._specials_contains_re)),
                    ),
                )
            fast_rows = tf.where(fast)[:, 0]
            fast_strings = tf.cond(
                tf.reduce_all(fast), lambda: tf.identity(strings), lambda: tf.gather(strings, fast_rows)
            )
            return fast, fast_strings

        every_row = tf.logical_and(ordinary, tf.logical_or(all_plain, all_folds_kept))
        fast, fast_strings = tf.cond(
            every_row, lambda: (tf.ones_like(strings, tf.bool), tf.identity(strings)), some_rows
        )
        # What holds for every row of the batch holds for its fast rows.
        fast_out = self._unless_empty(
            lambda rows, offsets: self._tokenize_fast(rows, offsets, all_plain, all_folds, all_folds_kept),
            fast_strings,
            with_offsets,
            extra=tf.zeros([0], tf.bool),
        )
        return (fast, *fast_out)

    def _unless_empty(self, tokenize, strings, with_offsets, extra=None):
        """`tokenize(strings, with_offsets)`, its ops skipped for no rows (then `extra` ends the result)."""

        def empty():
            ids = tf.RaggedTensor.from_row_splits(tf.zeros([0], tf.int32), tf.zeros([1], tf.int64), validate=False)
            offsets = ids.with_values(tf.zeros([0], tf.int64))
            result = (ids, offsets, offsets) if with_offsets else (ids,)
            result += () if extra is None else (extra,)
            return result if len(result) > 1 else result[0]

        return tf.cond(tf.size(strings) > 0, lambda: tokenize(strings, with_offsets), empty)

    def _tokenize_fast(self, strings, with_offsets, all_plain, all_folds, all_folds_kept):
        """Tokenizes rows `[N]` of `FAST_PATH_PATTERN` without kept special tokens.

        They are normalized in whole-row passes (`normalize_fast_path`, or
        uncased `normalize_uncased_fast_path`; when `all_plain` (bool scalar)
        says every row is plain ASCII, lowercasing alone; `all_folds` and
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
            all_plain, lambda: tf.strings.lower(strings) if lowercase else tf.identity(strings), normalize_rows
        )

        def plain():
            return tf.strings.regex_full_match(strings, PLAIN_ASCII_PATTERN)  # [N]

        ids, starts, ends = self._end_to_end_wordpiece.tokenize_with_offsets(normalized)  # [N, (P)]
        too_long = tf.logical_and(
            tf.equal(ids.values, self.unk_id), ends.values - starts.values > self.max_input_chars_per_word
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
        plain = tf.cond(all_plain, lambda: tf.ones_like(strings, tf.bool), plain)
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
            lambda: self._fast_original_offsets(strings, normalized, unchanged, ids, starts, ends),
        )
        return ids, starts.with_values(flat_starts), ends.with_values(flat_ends), exact

    def _fast_original_offsets(self, strings, normalized, unchanged, ids, starts, ends):
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

    def _tokenize_general(self, strings, with_offsets):
        """Tokenizes any rows `[N]` with the full reference normalization."""
        # Invalid UTF-8 -> U+FFFD, removed by normalize().
        valid = replace_invalid_utf8(strings)
        # tensorflow-text's regex ops stop at NUL; U+0001 is removed by
        # cleaning just as NUL is, and has the same length.
        valid = tf.strings.regex_replace(valid, "\x00", "\x01")
        segments, seg_starts, special = self._segments(valid)  # [N, (S)]
        flat_segments = segments.flat_values  # [S]
        flat_special = special.flat_values  # [S]
        is_special = flat_special >= 0
        # A special segment becomes one word ("a") whose id is replaced.
        flat_segments = tf.where(is_special, "a", flat_segments)
        normalized = normalize(flat_segments, self.lowercase, self.strip_accents)
        words, word_starts, word_ends = split_words(normalized)  # [S, (W)]
        pieces = self._words_to_pieces(words.flat_values, with_offsets)
        if with_offsets:
            ids, piece_starts, piece_ends = pieces  # [W', (P)]
        else:
            ids = pieces
        ids = words.with_flat_values(ids)  # [S, (W), (P)]
        ids = ids.merge_dims(1, 2)  # [S, (P)]
        ids = ids.with_values(
            tf.where(
                tf.repeat(is_special, ids.row_lengths()),
                tf.repeat(flat_special, ids.row_lengths()),
                ids.values,
            )
        )
        ids = segments.with_flat_values(ids).merge_dims(1, 2)  # [N, (P)]
        if not with_offsets:
            return ids
        starts, ends = self._offsets(
            strings,
            valid,
            segments,
            seg_starts,
            flat_segments,
            normalized,
            words,
            word_starts,
            piece_starts,
            piece_ends,
            is_special,
        )
        return ids, starts, ends

    def _offsets(
        self,
        strings,
        valid,
        segments,
        seg_starts,
        flat_segments,
        normalized,
        words,
        word_starts,
        piece_starts,
        piece_ends,
        is_special,
    ):
        """Maps piece offsets in normalized words to the original strings.

        Normalization works character by character, so each character of a
        segment owns a run of normalized bytes; a piece starts at the character
        owning its first byte and ends with the one owning its last byte.
        """
        # Pieces in normalized-segment bytes.
        word_starts = tf.repeat(word_starts.flat_values, piece_starts.row_lengths())
        p_start = word_starts + piece_starts.values  # [P']
        p_end = word_starts + piece_ends.values
        # Normalized bytes owned by each character of each segment.
        code_points, c_starts = tf.strings.unicode_decode_with_offsets(flat_segments, "UTF-8")  # [S, (C)]
        flat_cp = code_points.flat_values  # [C']
        c_ends = c_starts.flat_values + utf8_length(flat_cp)
        c_norm = self._char_normalized_lengths(flat_cp)  # [C']
        # Global coordinates: segment k's normalized bytes start at base[k].
        seg_norm_len = tf.cast(tf.strings.length(normalized), tf.int64)  # [S]
        base = tf.cumsum(seg_norm_len, exclusive=True)
        p_rows = tf.repeat(words.value_rowids(), piece_starts.row_lengths())  # segment of each piece
        p_start_g = tf.gather(base, p_rows) + p_start
        p_end_g = tf.gather(base, p_rows) + p_end
        starts, ends = normalized_to_original(c_starts.flat_values, c_ends, c_norm, p_start_g, p_end_g)  # segment bytes
        # Back to [S, (P)], special segments spanning themselves.
        seg_of_piece = p_rows
        row_lengths = tf.math.unsorted_segment_sum(tf.ones_like(seg_of_piece), seg_of_piece, tf.size(normalized))
        seg_bytes = tf.cast(tf.strings.length(segments.flat_values), tf.int64)
        special_piece = tf.gather(is_special, seg_of_piece)
        starts = tf.where(special_piece, tf.zeros_like(starts), starts)
        ends = tf.where(special_piece, tf.gather(seg_bytes, seg_of_piece), ends)
        # Segment bytes -> bytes of the valid row.
        seg_base = tf.gather(seg_starts.flat_values, seg_of_piece)
        starts += seg_base
        ends += seg_base
        starts = tf.RaggedTensor.from_row_lengths(starts, row_lengths)
        ends = tf.RaggedTensor.from_row_lengths(ends, row_lengths)
        starts = segments.with_flat_values(starts).merge_dims(1, 2)
        ends = segments.with_flat_values(ends).merge_dims(1, 2)
        # Bytes of the valid (transcoded) row -> bytes of the original row;
        # they differ only where invalid UTF-8 was replaced.
        starts_values, ends_values = tf.cond(
            tf.reduce_all(tf.equal(strings, valid)),
            lambda: (tf.identity(starts.values), tf.identity(ends.values)),
            lambda: to_original_bytes(strings, starts, ends),
        )
        return starts.with_values(starts_values), ends.with_values(ends_values)

    def _char_normalized_lengths(self, code_points):
        """Bytes each character normalizes to, on its own.

        Args:
            code_points: int32 `[C]`, valid, NUL already replaced by U+0001.

        Returns:
            int64 `[C]`.
        """
        # ASCII stays one byte (lowercasing included) unless cleaning removes
        # it: controls other than tab, newline and carriage return.
        kept_control = tf.logical_or(
            tf.logical_or(code_points == 0x09, code_points == 0x0A),
            code_points == 0x0D,
        )
        removed = tf.logical_or(
            tf.logical_and(code_points < 0x20, tf.logical_not(kept_control)),
            code_points == 0x7F,
        )
        kept = tf.logical_not(removed)
        lengths = tf.cast(kept, tf.int64)
        # Other characters are normalized on their own, each distinct one once.
        other = tf.where(code_points >= 0x80)[:, 0]
        distinct, index = tf.unique(tf.gather(code_points, other))
        chars = tf.strings.unicode_encode(distinct[:, None], "UTF-8")
        other_lengths = tf.gather(tf.strings.length(normalize(chars, self.lowercase, self.strip_accents)), index)
        return tf.tensor_scatter_nd_update(lengths, other[:, None], tf.cast(other_lengths, tf.int64))

    def tokenize(self, inputs):
        """Tokenizes strings into WordPiece ids, without special tokens.

        Args:
            inputs: tf.string `[N]` (or a scalar).

        Returns:
            ragged int32 `[N, (P)]` (or `[P]` for a scalar).
        """
        return self._tokenize(inputs, with_offsets=False)

    def tokenize_with_offsets(self, inputs, unit="byte"):
        """Tokenizes strings and locates every piece in its input.

        `inputs[i][starts[i, j]:ends[i, j]]` is the text piece j came from
        (for a `##` continuation, the part of the word it covers; for a word
        too long for WordPiece, the whole word).

        Args:
            inputs: tf.string `[N]` (or a scalar).
            unit: "byte" for UTF-8 byte offsets into each input (as
                tensorflow-text gives), or "char" for character (code point)
                offsets, i.e. indices into the Python `str` the bytes decode
                to (invalid bytes count one character each, as
                `bytes.decode("utf-8", errors="replace")` does for isolated ones).

        Returns:
            `(ids, starts, ends)`: ragged int32 `[N, (P)]` and two ragged
            int64 `[N, (P)]`.
        """
        if unit not in ("byte", "char"):
            raise ValueError(f"`unit` must be 'byte' or 'char'. Received: unit={unit!r}")
        ids, starts, ends = self._tokenize(inputs, with_offsets=True)
        if unit == "char":
            starts, ends = bytes_to_chars(inputs, starts), bytes_to_chars(inputs, ends)
        return ids, starts, ends

    def call(self, inputs):
        return self.tokenize(inputs)

    def detokenize(self, ids):
        """Joins WordPiece ids back into text.

        Pieces are joined with single spaces and `##` continuations are glued
        to the piece before them; normalization (case, accents, spacing
        around punctuation) is not undone.

        Args:
            ids: int `[N, (P)]` ragged or dense (or `[P]`).

        Returns:
            tf.string `[N]` (or a scalar).
        """
        ids, scalar = ragged_ids(ids)
        tokens = tf.ragged.map_flat_values(self._id_to_token.lookup, tf.cast(ids, tf.int64))
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        text = tf.strings.regex_replace(text, " ##", "")
        return text[0] if scalar else text

    def compute_output_spec(self, inputs):
        return keras.KerasTensor([inputs.shape[0], None], dtype="int32", ragged=True)

    # === Config ===

    def get_config(self):
        config = super().get_config()
        if self.vocabulary is None:
            config["vocab_file"] = self.vocab_file
        else:
            config["vocabulary"] = list(self.vocabulary)
        config.update(
            {
                "lowercase": self.lowercase,
                "strip_accents": self.strip_accents,
                "max_input_chars_per_word": self.max_input_chars_per_word,
                "split_special_tokens": self.split_special_tokens,
            }
        )
        if self.unk_token != "[UNK]":
            config["unk_token"] = self.unk_token
        if self.special_tokens is not None:
            config["special_tokens"] = list(self.special_tokens)
        return config


def _escape(token):
    """RE2 pattern matching `token` literally."""
    return "".join("\\" + c if not c.isalnum() else c for c in token)


def _count(vocabulary):
    return len(vocabulary) if isinstance(vocabulary, (list, tuple)) else "?"


def _preview(vocabulary):
    """A short description of a vocabulary argument for error messages."""
    if isinstance(vocabulary, (list, tuple)):
        head = ", ".join(repr(t) for t in vocabulary[:3])
        return f"[{head}{', ...' if len(vocabulary) > 3 else ''}] ({len(vocabulary)} tokens)"
    return repr(vocabulary)[:80]


# Where another tokenizer.json model type is read, for the error message.
_OTHER_MODEL_TYPES = {
    "BPE": "byte-level BPE (RoBERTa, GPT-2) is read by `BytePairTokenizer`",
    "Unigram": "SentencePiece Unigram (ALBERT, DeBERTa-v2, T5) is not supported yet",
    "WordLevel": "WordLevel is not supported",
}


def _wordpiece_json_arguments(path):
    """`BertTokenizer` arguments from a Hugging Face WordPiece `tokenizer.json`."""

    def fail(problem):
        return ValueError(f"Cannot read {path} as a WordPiece tokenizer.json: {problem}")

    if not isinstance(path, str) or not path:
        raise ValueError(f"`path` must be a non-empty path string. Received: path={path!r}")
    if not tf.io.gfile.exists(path):
        raise ValueError(f"`path` does not exist. Received: path={path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        raw = f.read()
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise fail(f"it is not JSON ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise fail("it has no `model` object (is it a tokenizer.json?)")
    model = data["model"]
    model_type = model.get("type")
    if model_type is None and "continuing_subword_prefix" in model and "max_input_chars_per_word" in model:
        model_type = "WordPiece"  # old files leave the type out
    if model_type != "WordPiece":
        where = _OTHER_MODEL_TYPES.get(model_type, "only WordPiece is read by `BertTokenizer`")
        raise fail(f"`model.type` is {model_type!r}, not 'WordPiece': {where}")
    prefix = model.get("continuing_subword_prefix", "##")
    if prefix != "##":
        raise fail(f"`model.continuing_subword_prefix` is {prefix!r}; only '##' is supported")
    vocabulary = _vocabulary_by_id(model.get("vocab"), fail)
    unk_token = model.get("unk_token", "[UNK]")
    if unk_token not in vocabulary:
        raise fail(f"`model.unk_token` {unk_token!r} is not in `model.vocab`")
    arguments = {
        "vocabulary": vocabulary,
        "unk_token": unk_token,
        "max_input_chars_per_word": model.get("max_input_chars_per_word", 100),
    }
    arguments.update(_bert_normalizer_arguments(data.get("normalizer"), fail))
    _check_pre_tokenizer(data.get("pre_tokenizer"), fail)
    arguments["special_tokens"] = _special_tokens(data.get("added_tokens") or [], vocabulary, fail)
    return arguments


def _vocabulary_by_id(vocab, fail):
    """The tokens of `model.vocab` (token -> id) in id order; ids must be 0..V-1."""
    if not isinstance(vocab, dict) or not vocab:
        raise fail("`model.vocab` must be a non-empty object mapping token -> id")
    bad = [(t, i) for t, i in vocab.items() if not isinstance(i, int) or isinstance(i, bool)]
    if bad:
        raise fail(f"`model.vocab` ids must be integers, e.g. {bad[0][0]!r}: {bad[0][1]!r}")
    by_id = {}
    for token, token_id in vocab.items():
        if token_id in by_id:
            raise fail(f"`model.vocab` gives id {token_id} to both {by_id[token_id]!r} and {token!r}")
        by_id[token_id] = token
    size = len(by_id)
    missing = sorted(set(range(size)) - set(by_id))
    if missing:
        outside = sorted(i for i in by_id if not 0 <= i < size)
        raise fail(
            f"`model.vocab` ids must be 0..{size - 1} without gaps; missing {missing[:5]}"
            f"{' ...' if len(missing) > 5 else ''}, outside {outside[:5]}{' ...' if len(outside) > 5 else ''}"
        )
    return [by_id[i] for i in range(size)]


def _bert_normalizer_arguments(normalizer, fail):
    """`lowercase` and `strip_accents` of a `BertNormalizer` (alone or the one step of a `Sequence`)."""
    steps = [normalizer]
    if isinstance(normalizer, dict) and normalizer.get("type") == "Sequence":
        steps = normalizer.get("normalizers") or []
    types = [step.get("type") if isinstance(step, dict) else step for step in steps]
    if types != ["BertNormalizer"]:
        raise fail(f"`normalizer` must be one BertNormalizer (the reference's normalization); found {types}")
    step = steps[0]
    for field in ("clean_text", "handle_chinese_chars"):
        if step.get(field, True) is not True:
            raise fail(f"`normalizer.{field}` is {step.get(field)!r}; only true (the reference's) is supported")
    lowercase = step.get("lowercase", True)
    strip_accents = step.get("strip_accents")
    return {"lowercase": lowercase, "strip_accents": strip_accents}


def _check_pre_tokenizer(pre_tokenizer, fail):
    """The pre-tokenizer must be BERT's (whitespace and punctuation splits)."""
    steps = [pre_tokenizer]
    if isinstance(pre_tokenizer, dict) and pre_tokenizer.get("type") == "Sequence":
        steps = pre_tokenizer.get("pretokenizers") or []
    types = [step.get("type") if isinstance(step, dict) else step for step in steps]
    if types != ["BertPreTokenizer"]:
        raise fail(f"`pre_tokenizer` must be one BertPreTokenizer; found {types}")


def _special_tokens(added_tokens, vocabulary, fail):
    """The added tokens marked `special`, checked against the vocabulary.

    Non-special added tokens are matched whole by Hugging Face too, which this
    tokenizer does not do, so they are refused rather than tokenized
    differently. `lstrip`/`rstrip` change no id (whitespace gives no piece).
    """
    specials = []
    for token in added_tokens:
        content, token_id = token.get("content"), token.get("id")
        if not token.get("special", False):
            raise fail(
                f"added token {content!r} (id {token_id}) is not special; only special added tokens are supported"
            )
        if not isinstance(token_id, int) or not 0 <= token_id < len(vocabulary) or vocabulary[token_id] != content:
            raise fail(f"special added token {content!r} has id {token_id}, which `model.vocab` does not give it")
        for flag in ("single_word", "normalized"):
            if token.get(flag, False):
                raise fail(f"special added token {content!r} has `{flag}` true; only false is supported")
        specials.append(content)
    return specials
