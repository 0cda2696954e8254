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

Speed: most rows (no kept special token, no invalid UTF-8, NUL or rare
character the reference's tables and ICU's disagree on) take the fast path,
whole-row normalization passes and tensorflow-text's end-to-end WordPiece
(`bert_tf.text.wordpiece_fast`); the rest, and the fast path's rows it cannot
give exactly, take steps 1-4 above, one op each.

Vocabulary sources: a `vocab.txt` (`BertTokenizer(vocab_file)`, kept as a
SavedModel asset), an in-memory list (`BertTokenizer(vocabulary=[...])`, kept
as constants and in `get_config()`), or a Hugging Face WordPiece
`tokenizer.json` (`BertTokenizer.from_tokenizer_json(path)`).

Framing: pairs are packed as the `tokenizer.json` post-processor says
(`post_processor`), else as BERT's `[CLS] A [SEP] B [SEP]`. MPNet's
vocabulary holds BERT's specials and fairseq's (`<s>` 0, `<pad>` 1, `</s>` 2,
`[UNK]` the unknown token, `<mask>` last): its `RobertaProcessing` gives
`<s> A </s></s> B </s>`, and `pad_id`/`mask_id` are `<pad>`/`<mask>`, the
ones kept whole. `vocab.txt` alone reads so where the `tokenizer_config.json`
beside it names `MPNetTokenizer` (`legacy_options`).

Shape legend: `N` strings, `W` words, `P` pieces.
"""

import json
import os

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text import kinds
from bert_tf.text.base import Tokenizer, added_tokens_pattern
from bert_tf.text.byte_pair import pair_template
from bert_tf.text.normalization import normalize, split_words
from bert_tf.text.offsets import normalized_to_original, replace_invalid_utf8, to_original_bytes, utf8_length
from bert_tf.text.parallel import in_row_shards
from bert_tf.text.vocab import SPECIAL_TOKENS
from bert_tf.text.wordpiece_fast import WordPieceFastPath, unless_empty


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
class BertTokenizer(Tokenizer):
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

    Offsets (`tokenize_with_offsets`): a piece spans the text it came from
    (for a `##` continuation, the part of the word it covers; for a word too
    long for WordPiece, the whole word).

    `detokenize` joins pieces with single spaces, `##` continuations glued to
    the piece before them; normalization (case, accents, spacing around
    punctuation) is not undone.

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
        post_processor: how a text and a pair are framed: a `tokenizer.json`
            `post_processor` (`BertProcessing`, `RobertaProcessing` as
            MPNet's, or a `TemplateProcessing` `CLS $A SEP (SEP) $B SEP`;
            `byte_pair.pair_template` reads it). `None` (default): BERT's
            `[CLS] A [SEP] B [SEP]`. `cls_id`, `sep_id`, `packing` and
            `pair_type_id` follow it; `pad_id` and `mask_id` are `<pad>` and
            `<mask>` where those are kept whole and `[PAD]`, `[MASK]` are not
            (MPNet).
        **kwargs: standard `keras.layers.Layer` arguments.

    `get_config()` holds `vocab_file` or `vocabulary`, whichever was given,
    and `unk_token` and `special_tokens` only where they are not the defaults.

    Example:

    >>> tokenizer = BertTokenizer("vocab.txt")
    >>> ids = tokenizer(tf.constant(["Hello world!"]))  # ragged [1, (P)]
    >>> BertTokenizer(vocabulary=["[PAD]", "[UNK]", "hello", "world", "!"])
    >>> BertTokenizer.from_tokenizer_json("tokenizer.json")
    """

    # (`unk_id` is `unk_token`'s.)
    special_token_roles = {"pad": ("[PAD]",), "cls": ("[CLS]",), "sep": ("[SEP]",), "mask": ("[MASK]",)}
    continuation_mark = "##"
    # `_tokenize` maps offsets to the input's bytes itself (its general path; the fast path's rows are valid).
    offsets_into_input = True

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
        post_processor=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # How texts are framed (`packer_for`): the post-processor's template, else BERT's `[CLS] A [SEP] B [SEP]`.
        # One `BertPacker` cannot follow leaves tokenizing as it is; `packer_for` refuses it (`pair_layout_error`).
        self.post_processor = post_processor
        self._template = None
        if post_processor is not None:
            try:
                self._template = pair_template(post_processor)
            except ValueError as e:
                self.pair_layout_error = str(e)
            else:
                self._separators, self._pair_type_id = self._template["separators"], self._template["pair_type_id"]
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
        self._load_vocabulary()
        self.special_token_roles = self._role_tokens()

    def _role_tokens(self):
        """`special_token_roles` of this vocabulary: `cls` and `sep` the template's tokens (BERT's without one),
        `pad` and `mask` the first of BERT's and fairseq's names (`[PAD]`/`<pad>`, `[MASK]`/`<mask>`) kept whole
        in the text, else BERT's where the vocabulary has it (MPNet's vocabulary holds both, its specials are
        fairseq's)."""
        roles = dict(type(self).special_token_roles)
        if self._template is not None:
            roles["cls"], roles["sep"] = (self._template["cls"],), (self._template["sep"],)
        for role, names in (("pad", ("[PAD]", "<pad>")), ("mask", ("[MASK]", "<mask>"))):
            kept = [name for name in names if name in self._specials]
            roles[role] = tuple(kept) or names[:1]
        return roles

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
        self._specials_re = added_tokens_pattern([{"content": t} for t in self._specials])
        # Words longer than the limit never reach WordPiece (they are unknown).
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=pieces,
            suffix_indicator="##",
            max_bytes_per_word=max(4 * self.max_input_chars_per_word + 4, len(unk.encode("utf-8"))),
            token_out_type=tf.int32,
            unknown_token=unk,
            no_pretokenization=True,
        )
        self._fast_path = WordPieceFastPath(
            pieces,
            unk,
            last[unk],
            self.max_input_chars_per_word,
            self.lowercase,
            self.strip_accents,
            kept_specials=() if self.split_special_tokens else list(self._specials),
            specials_pattern=self._specials_re,
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

    def get_vocabulary(self):
        """The vocabulary's tokens, by id."""
        return list(self._vocabulary_list)

    @property
    def unk_id(self):
        return self._token_to_id[self.unk_token]

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

        The base's `_segments`, but special tokens are matched exactly (no
        `lstrip`/`rstrip`), by comparison with each.

        Returns:
            `(segments, starts, special)`: ragged `[N, (S)]` tf.string, their
            int64 byte starts, and ragged int32 `[N, (S)]`, the special id of
            a segment or -1.
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

    def _tokenize(self, strings, with_offsets):
        # Two paths. The fast one (`bert_tf.text.wordpiece_fast`) takes every
        # row of FAST_PATH_PATTERN without a kept special token (almost all
        # real text): whole-row normalization passes (lowercasing alone for
        # plain ASCII), then tensorflow-text's end-to-end WordPiece. The
        # general one takes the rest (kept special tokens, invalid UTF-8, NUL,
        # the rare characters the reference's own tables treat otherwise than
        # ICU) and the rows whose words the fast one cannot give exactly. The
        # results go back to the input order; batches that are all fast skip
        # the routing. Without offsets, the fast
        # path runs on row shards side by side on the CPU's cores
        # (`in_row_shards`); with them it runs whole, as sharding would double
        # that graph (3.4 vs 1.5 MB) and its first call (2.6 vs 1.1 s).
        if with_offsets:
            fast, *fast_out, exact = self._fast_path.rows(strings, with_offsets)
        else:
            fast, *fast_out, exact = in_row_shards(lambda rows: self._fast_path.rows(rows, with_offsets), strings)
        every_fast = tf.reduce_all(fast)
        fast_rows = tf.where(fast)[:, 0]

        def routed():
            # Rows the fast path cannot give exactly take the general one.
            kept = tf.where(exact)[:, 0]
            other_rows = tf.concat(
                [tf.where(tf.logical_not(fast))[:, 0], tf.gather(fast_rows, tf.where(tf.logical_not(exact))[:, 0])], 0
            )
            other_out = unless_empty(self._tokenize_general, tf.gather(strings, other_rows), with_offsets)
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
        return outputs if with_offsets else outputs[0]

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

    def _detokenize(self, ids):
        tokens = tf.ragged.map_flat_values(self._id_to_token.lookup, tf.cast(ids, tf.int64))
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(text, " ##", "")

    # === Config ===

    def get_config(self):
        # The vocabulary as given (a file or a list), and the last two arguments only where not the defaults.
        config = super().get_config()
        del config["vocabulary" if self.vocabulary is None else "vocab_file"]
        if self.unk_token == "[UNK]":
            del config["unk_token"]
        if self.special_tokens is None:
            del config["special_tokens"]
        if self.post_processor is None:
            del config["post_processor"]
        return config


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
    if data.get("post_processor") is not None:
        arguments["post_processor"] = data["post_processor"]
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


# === The kind ===


# transformers' WordPiece tokenizer classes whose specials and template are fairseq's, not BERT's: `<s> A </s></s> B
# </s>`, `<pad>`, `<mask>` (MPNet). `vocab.txt` beside a `tokenizer_config.json` naming one is read so.
FAIRSEQ_FRAMED_CLASSES = ("MPNetTokenizer", "MPNetTokenizerFast")
_CONFIG_ROLES = ("bos", "pad", "eos", "unk", "cls", "sep", "mask")


def _token_text(value):
    """A `tokenizer_config.json` token entry's text: a string, or an AddedToken's `content`; None otherwise."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


def legacy_options(vocab_file):
    """`BertTokenizer` arguments (`special_tokens`, `unk_token`, `post_processor`) that the `tokenizer_config.json`
    beside `vocab_file` says, for a class of `FAIRSEQ_FRAMED_CLASSES` (MPNet's `<s>`, `</s>`, `<pad>`, `<mask>`,
    `[UNK]`, pairs `<s> A </s></s> B </s>`, as transformers' `MPNetTokenizer` reads `vocab.txt`); {} for BERT's."""
    path = os.path.join(os.path.dirname(vocab_file), kinds.TOKENIZER_CONFIG)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    if not isinstance(config, dict) or config.get("tokenizer_class") not in FAIRSEQ_FRAMED_CLASSES:
        return {}
    tokens = {role: _token_text(config.get(f"{role}_token")) for role in _CONFIG_ROLES}
    defaults = {
        "bos": "<s>",
        "pad": "<pad>",
        "eos": "</s>",
        "unk": "[UNK]",
        "cls": "<s>",
        "sep": "</s>",
        "mask": "<mask>",
    }
    tokens = {role: tokens[role] or defaults[role] for role in _CONFIG_ROLES}
    ids = {token: index for index, token in enumerate(_read_vocab(vocab_file))}
    missing = sorted({t for t in tokens.values() if t not in ids})
    if missing:
        raise kinds.TokenizerFilesError(
            f"{path}: its special tokens {missing} are not in {vocab_file}. Received: tokenizer_class="
            f"{config.get('tokenizer_class')!r}"
        )
    return {
        "special_tokens": list(dict.fromkeys(tokens.values())),
        "unk_token": tokens["unk"],
        "post_processor": {
            "type": "RobertaProcessing",
            "cls": [tokens["cls"], ids[tokens["cls"]]],
            "sep": [tokens["sep"], ids[tokens["sep"]]],
        },
    }


def _build(files, settings, read_options, **kwargs):
    """A `BertTokenizer` from `vocab.txt` and `bert_tf.json`'s `lowercase` and `strip_accents`, its specials and
    template those `bert_tf.json` records (`wordpiece`), else those of the `tokenizer_config.json` beside it
    (`legacy_options`)."""
    recorded = settings.get("wordpiece") or legacy_options(files["vocab"])
    options = {key: recorded[key] for key in ("special_tokens", "unk_token", "post_processor") if key in recorded}
    return BertTokenizer(
        files["vocab"],
        lowercase=settings.get("lowercase", True),
        strip_accents=settings.get("strip_accents"),
        **options,
        **kwargs,
    )


def _recorded_settings(data, tokenizer_fn):
    """`lowercase` and `strip_accents` of a `tokenizer.json`'s BertNormalizer (`vocab.txt` reads as it says), and
    where its template is not BERT's (MPNet's `<s> A </s></s> B </s>`) its specials, unknown token and
    post-processor (`wordpiece`), which `vocab.txt` alone cannot say."""
    if data is None:
        return {}
    normalizers = data.get("normalizer") or {}
    normalizers = normalizers.get("normalizers", [normalizers]) if normalizers else []
    settings = {}
    for normalizer in normalizers:
        if normalizer.get("type") == "BertNormalizer":
            settings["lowercase"] = bool(normalizer.get("lowercase", True))
            settings["strip_accents"] = normalizer.get("strip_accents")
    post_processor = data.get("post_processor")
    try:
        template = pair_template(post_processor) if post_processor is not None else None
    except ValueError:
        template = None
    if template is not None and (template["cls"], template["sep"], template["separators"]) != ("[CLS]", "[SEP]", 1):
        settings["wordpiece"] = {
            "special_tokens": [t["content"] for t in data.get("added_tokens") or [] if t.get("special")],
            "unk_token": (data.get("model") or {}).get("unk_token", "[UNK]"),
            "post_processor": post_processor,
        }
    return settings


def _write_files(directory, files, data, output, tokenizer_fn):
    """`vocab.txt` copied, or made from `tokenizer.json` (copied too); a `tokenizer_config.json` that says how to
    read `vocab.txt` (`legacy_options`: MPNet's) copied with it."""

    def from_json(output):
        with open(os.path.join(output, VOCAB_FILE), "w", encoding="utf-8") as f:
            f.writelines(f"{token}\n" for token in kinds.tokens_by_id(data, files["json"]))
        return [VOCAB_FILE]

    written = kinds.write_legacy_or_json(files, output, from_json)
    if "vocab" in files and legacy_options(files["vocab"]):
        written.append(kinds.copy_file(os.path.join(directory, kinds.TOKENIZER_CONFIG), output))
    return written


VOCAB_FILE = "vocab.txt"
WORDPIECE = kinds.register(
    kinds.TokenizerKind(
        name="wordpiece",
        layer=BertTokenizer,
        json_model="WordPiece",
        files=({"vocab": VOCAB_FILE},),
        described="WordPiece",
        families="BERT, DistilBERT, ELECTRA",
        precedence=0,
        build=_build,
        recorded_settings=_recorded_settings,
        write_files=_write_files,
    )
)
