"""The in-graph tokenizers' base layer, and what every tokenizer kind shares around its own algorithm.

`Tokenizer` is the Keras layer `BertTokenizer` (WordPiece), `BytePairTokenizer`
(byte-level BPE) and `SentencePieceTokenizer` (unigram) subclass. It owns what
is the same for every kind: the inputs (a tf.string scalar or `[N]`, one error
for any other rank), `call`/`tokenize`, `compute_output_spec`,
`tokenize_with_offsets` and its `unit` ("byte" or "char"), `detokenize`'s id
batches, the special ids by role (`pad_id`, `unk_id`, `cls_id`, `sep_id`,
`mask_id`), the vocabulary lookups (`token_to_id`, `vocab_size`,
`get_vocabulary`), the tokens kept whole where the text holds them verbatim
(`[MASK]`, `<s>`, ...: one RE2 pattern, `re2_escape`d, and one lookup table),
and `get_config`, which mirrors the constructor's arguments.

Adding a tokenizer kind: subclass `Tokenizer` and implement two methods,

- `_tokenize(strings, with_offsets)`: tf.string `[N]` (always a batch: the base
  handles scalars and the rank) -> ids, ragged int32 `[N, (P)]`; with offsets
  `(ids, starts, ends)`, the starts and ends ragged int64 `[N, (P)]`, UTF-8 byte
  offsets into the rows with invalid UTF-8 replaced by U+FFFD
  (`offsets.replace_invalid_utf8`; the rows themselves where they are valid).
  The base maps them to bytes or characters of the input (`unit`). A kind
  whose offsets are bytes of the input rows already sets
  `offsets_into_input = True`.
- `_detokenize(ids)`: ragged int32 `[N, (P)]` -> tf.string `[N]` (the base
  accepts dense, ragged or one row and returns the same rank).

Its constructor calls `super().__init__(**kwargs)` first, keeps each argument
as an attribute of the same name (what `get_config()` returns; a kind that
keeps one otherwise adjusts it in its own `get_config`), and sets
`_token_to_id` (token -> id) and `_vocab_size`. Class attributes say the rest:
`special_token_roles` (which tokens give `pad_id`, ...), `packing` and
`pair_type_id` (how `packer_for` packs pairs), `pair_truncation` (how it cuts
them to fit), and `continuation_mark` or `word_start_mark` (how its vocabulary
marks the pieces that continue a word: `continuation_ids`). A kind that keeps
tokens written in the text whole calls
`_set_added_tokens(added_token_entries(...), split_special_tokens)` and splits
its rows with `_segments`. Register it with
`keras.saving.register_keras_serializable`, and declare its files to the
checkpoint code with `bert_tf.text.kinds.register(TokenizerKind(...))`.
tests/text/base_test.py defines such a kind in a few lines and checks what it
inherits.

Shape legend: `N` strings, `S` segments, `P` pieces.
"""

import inspect

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text.offsets import bytes_to_chars, offsets_in_unit

# Unicode White_Space as an RE2 class (Rust `char::is_whitespace`, Oniguruma's `\s`, what Hugging Face's
# pre-tokenizers and `lstrip`/`rstrip` use); RE2's own `\s` is ASCII only.
WHITESPACE = r"\t\n\x0B\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}"
WHITESPACE_CLASS = f"[{WHITESPACE}]"

OFFSET_UNITS = ("byte", "char")


def re2_escape(text):
    """An RE2 pattern matching `text` literally.

    Every ASCII character other than a letter or digit is escaped (RE2 reads
    a backslash before any of them as the character itself); other characters
    stand for themselves, as RE2 refuses a backslash before a non-ASCII
    character ("invalid escape sequence") and none of them is an operator.
    """
    return "".join("\\" + c if ord(c) < 128 and not c.isalnum() else c for c in text)


def added_token_entries(special_tokens, id_of):
    """The tokens kept whole in the text, as dicts `content`, `id`, `lstrip`, `rstrip`, `special`.

    Args:
        special_tokens: a list of strings, or of dicts as in `tokenizer.json`'s
            `added_tokens` (`content`, `lstrip`, `rstrip`, `special`, ...).
        id_of: the entry (a dict with `content`) -> its id; raises the kind's
            error where the vocabulary lacks it.

    Raises:
        ValueError: where `special_tokens` is not such a list, or an entry has
            `single_word` (not supported).
    """
    if not isinstance(special_tokens, (list, tuple)):
        raise ValueError(
            f"`special_tokens` must be a list of strings or dicts. Received: special_tokens={special_tokens!r}"
        )
    entries = []
    for entry in special_tokens:
        if isinstance(entry, str):
            entry = {"content": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not entry["content"]:
            raise ValueError(
                f"`special_tokens` entries must be non-empty strings or dicts with 'content'. Received: {entry!r}"
            )
        token_id = id_of(entry)
        if entry.get("single_word"):
            raise ValueError(f"Special tokens with single_word=True are not supported. Received: {entry!r}")
        entries.append(
            {
                "content": entry["content"],
                "id": int(token_id),
                "lstrip": bool(entry.get("lstrip", False)),
                "rstrip": bool(entry.get("rstrip", False)),
                "special": bool(entry.get("special", True)),
            }
        )
    return entries


def added_tokens_pattern(entries):
    """An RE2 pattern matching any of the entries' tokens ("" for none).

    Longest first, so that a token holding another one wins (leftmost-longest,
    as Hugging Face's matcher); an entry with `lstrip`/`rstrip` also takes the
    whitespace before/after it.
    """
    ordered = sorted(entries, key=lambda entry: -len(entry["content"]))
    return "|".join(
        (f"{WHITESPACE_CLASS}*" if entry.get("lstrip") else "")
        + re2_escape(entry["content"])
        + (f"{WHITESPACE_CLASS}*" if entry.get("rstrip") else "")
        for entry in ordered
    )


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


class Tokenizer(keras.layers.Layer):
    """Base of the in-graph tokenizer layers: raw strings in, ids (and offsets) out.

    Runs entirely in-graph (tf.data, tf.function, SavedModel). Calling the
    layer tokenizes (`tokenize`): tf.string `[N]` -> ragged int32 `[N, (P)]`,
    without special tokens added; a scalar gives one row `[P]`.

    A kind implements two methods (the module docstring says what they take
    and give, and what its constructor sets):

    - `_tokenize(strings, with_offsets)`: a batch of strings -> ids (and
      their byte offsets);
    - `_detokenize(ids)`: a batch of ids -> text.

    Args:
        **kwargs: standard `keras.layers.Layer` arguments (`dtype` defaults to
            "int32", the ids' type).
    """

    # How pairs are framed, as a kind's file says (its post-processor's template): the separators between the two
    # texts (1: `[CLS] A [SEP] B [SEP]`; 2: `<s> A </s></s> B </s>`) and the segment of B (None: the packing's own).
    _separators = 1
    _pair_type_id = None
    # Why `packer_for` cannot pack as the tokenizer's file frames texts (a template of another shape), or None.
    pair_layout_error = None

    @property
    def packing(self):
        """How `packer_for` packs pairs: "roberta" (two separators between the texts, `<s> A </s></s> B </s>`, one
        segment) or "bert" (one, `[CLS] A [SEP] B [SEP]`, B in segment 1)."""
        return "roberta" if self._separators == 2 else "bert"

    @property
    def pair_type_id(self):
        """The segment id of a pair's second text (and its separator), as the template says; None: the packing's."""
        return self._pair_type_id

    # How `packer_for` cuts a pair to fit by default (`bert_tf.text.PAIR_TRUNCATIONS`): the original BERT's
    # "longest_first", or "hf_longest_first" for a checkpoint whose `tokenizer.json` says how (set on the
    # instance by `checkpoints.build_tokenizer` from `bert_tf.json`'s `pair_truncation`).
    pair_truncation = "longest_first"
    # Whether `_tokenize`'s offsets are bytes of the input rows (else of the rows with invalid UTF-8 replaced).
    offsets_into_input = False
    # Each special role's tokens (`pad_id`, ...): the first one the vocabulary has gives the role's id.
    special_token_roles = {"pad": (), "unk": (), "cls": (), "sep": (), "mask": ()}
    # How the vocabulary marks the pieces that continue the word before them (`continuation_ids`): the prefix of
    # such a piece (`continuation_mark`: WordPiece's "##"), or the prefix of a word's first piece (`word_start_mark`:
    # byte-level BPE's "Ġ", SentencePiece's "▁"), every other piece continuing a word. A kind sets one.
    continuation_mark = None
    word_start_mark = None

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        # Strings are no floats to cast, and may come as Python lists.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self._added_pattern = None  # no token kept whole unless `_set_added_tokens`
        self._added_table = None
        self._added_ids = frozenset()
        self.built = True  # no weights

    # === What a kind implements ===

    # The public methods below are marked `do_not_convert`: tokenizers are graph code (explicit `tf.cond`, no
    # Python control flow on tensors), so autograph has nothing to convert, yet converting them whenever a
    # dataset map or an autograph `tf.function` calls them cost 10 of the 13 s a WordPiece `tf.function` took to
    # trace (2-core AVX2 EPYC). A kind's `_tokenize` and `_detokenize` must be graph code too.

    def _tokenize(self, strings, with_offsets):
        """tf.string `[N]` -> ids ragged int32 `[N, (P)]`, with offsets `(ids, starts, ends)` (int64 bytes)."""
        raise NotImplementedError(f"{type(self).__name__} must implement `_tokenize(strings, with_offsets)`.")

    def _detokenize(self, ids):
        """Ragged int32 `[N, (P)]` -> tf.string `[N]`."""
        raise NotImplementedError(f"{type(self).__name__} must implement `_detokenize(ids)`.")

    # === Tokenization ===

    def _batch(self, inputs):
        """`(strings, scalar)`: the inputs as tf.string `[N]` and whether they were one string."""
        strings = tf.convert_to_tensor(inputs, tf.string)
        scalar = strings.shape.rank == 0
        if scalar:
            strings = strings[None]
        if strings.shape.rank != 1:
            raise ValueError(
                f"`inputs` must be a tf.string scalar or vector [N]. Received: inputs.shape={strings.shape}"
            )
        return strings, scalar

    @tf.autograph.experimental.do_not_convert
    def tokenize(self, inputs):
        """Tokenizes strings into ids, without special tokens added.

        Args:
            inputs: tf.string `[N]` (or a scalar).

        Returns:
            ragged int32 `[N, (P)]` (or `[P]` for a scalar).
        """
        strings, scalar = self._batch(inputs)
        ids = self._tokenize(strings, with_offsets=False)
        return ids[0] if scalar else ids

    @tf.autograph.experimental.do_not_convert
    def tokenize_with_offsets(self, inputs, unit="byte"):
        """Tokenizes strings and locates every piece in its input.

        `inputs[i][starts[i, j]:ends[i, j]]` is the text piece j came from
        (what each kind counts as a piece's text: its class docstring).

        Args:
            inputs: tf.string `[N]` (or a scalar).
            unit: "byte" for UTF-8 byte offsets into each input (as
                tensorflow-text gives), or "char" for character (code point)
                offsets, i.e. indices into the Python `str` the bytes decode
                to with `errors="replace"`.

        Returns:
            `(ids, starts, ends)`: ragged int32 `[N, (P)]` and two ragged
            int64 `[N, (P)]` (or `[P]` each for a scalar).
        """
        if unit not in OFFSET_UNITS:
            raise ValueError(f"`unit` must be 'byte' or 'char'. Received: unit={unit!r}")
        strings, scalar = self._batch(inputs)
        ids, starts, ends = self._tokenize(strings, with_offsets=True)
        if not self.offsets_into_input:
            starts, ends = offsets_in_unit(strings, starts, ends, unit)
        elif unit == "char":
            starts, ends = bytes_to_chars(strings, starts), bytes_to_chars(strings, ends)
        if scalar:
            return ids[0], starts[0], ends[0]
        return ids, starts, ends

    @tf.autograph.experimental.do_not_convert
    def call(self, inputs):
        return self.tokenize(inputs)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor([inputs.shape[0], None], dtype="int32", ragged=True)

    @tf.autograph.experimental.do_not_convert
    def detokenize(self, ids):
        """Joins ids back into text (how: the kind's class docstring).

        Args:
            ids: int `[N, (P)]` ragged or dense (or `[P]`).

        Returns:
            tf.string `[N]` (or a scalar).
        """
        ids, scalar = ragged_ids(ids)
        text = self._detokenize(ids)
        return text[0] if scalar else text

    # === Tokens kept whole ===

    def _set_added_tokens(self, entries, split_special_tokens=False):
        """Keeps the entries' tokens whole where the text holds them (`_segments`).

        Args:
            entries: dicts `content`, `id`, `lstrip`, `rstrip`, `special` (`added_token_entries`).
            split_special_tokens: whether those marked `special` are ordinary text instead.
        """
        self._added_ids = frozenset(e["id"] for e in entries)
        matched = [e for e in entries if not (split_special_tokens and e["special"])]
        self._added_pattern = added_tokens_pattern(matched) or None
        if matched:
            self._added_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant([e["content"] for e in matched], tf.string),
                    tf.constant([e["id"] for e in matched], tf.int32),
                ),
                -1,
            )

    def _segments(self, strings):
        """Splits valid rows `[N]` at the tokens kept whole (`_set_added_tokens`).

        Returns:
            `(segments, starts, special)`: ragged `[N, (S)]` tf.string, their
            int64 byte starts, and ragged int32 `[N, (S)]`, the kept token's
            id of a segment or -1.
        """
        return split_added_tokens(strings, self._added_pattern, self._added_table)

    # === Vocabulary ===

    @property
    def vocab_size(self):
        """Number of ids (one past the largest)."""
        return self._vocab_size

    def token_to_id(self, token):
        """Id of a vocabulary token as the vocabulary writes it ("##s", "Ġthe", "▁the"), or `None`."""
        return self._token_to_id.get(token)

    def get_vocabulary(self):
        """The tokens by id (ids no token has are "")."""
        tokens = [""] * self._vocab_size
        for token, token_id in self._token_to_id.items():
            tokens[token_id] = token
        return tokens

    def _special_id(self, role):
        """Id of the first of `special_token_roles[role]` the vocabulary has, or `None`."""
        for token in self.special_token_roles.get(role, ()):
            token_id = self.token_to_id(token)
            if token_id is not None:
                return token_id
        return None

    def continuation_ids(self):
        """Ids of the pieces that continue the word before them: those with `continuation_mark`, or those without
        `word_start_mark`, except the tokens kept whole in the text and the kind's `_never_continuing()` ids.
        Whole-word and span masking and the tagger's word starts read them. (With a word-start mark, a word's
        first piece at the start of a text or after punctuation has none either: such pieces join the word
        before.)"""
        continuation, word_start = self.continuation_mark, self.word_start_mark
        if (continuation is None) == (word_start is None):
            raise NotImplementedError(
                f"{type(self).__name__} must set one of `continuation_mark` and `word_start_mark`. Received: "
                f"continuation_mark={continuation!r}, word_start_mark={word_start!r}"
            )
        excluded = self._added_ids | self._never_continuing()
        return [
            i
            for i, token in enumerate(self.get_vocabulary())
            if token
            and i not in excluded
            and (token.startswith(continuation) if continuation is not None else not token.startswith(word_start))
        ]

    def _never_continuing(self):
        """Ids of the pieces that continue no word whatever they read, besides the tokens kept whole (a kind's
        unknown or byte pieces)."""
        return frozenset()

    pad_id = property(lambda self: self._special_id("pad"), doc="Id of the padding token, or `None`.")
    unk_id = property(lambda self: self._special_id("unk"), doc="Id of the unknown token, or `None`.")
    cls_id = property(lambda self: self._special_id("cls"), doc="Id of the classification (first) token, or `None`.")
    sep_id = property(lambda self: self._special_id("sep"), doc="Id of the separator (last) token, or `None`.")
    mask_id = property(lambda self: self._special_id("mask"), doc="Id of the mask token, or `None`.")

    # === Config ===

    def get_config(self):
        """The layer's config and each named constructor argument, read from the attribute of the same name."""
        config = super().get_config()
        for name, parameter in inspect.signature(type(self).__init__).parameters.items():
            if name != "self" and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                config[name] = _plain(getattr(self, name))
        return config


def _plain(value):
    """`value` with the lists and dicts attribute tracking wrapped it in made plain again."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
