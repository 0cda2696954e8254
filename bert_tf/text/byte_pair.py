"""In-graph byte-level BPE tokenizer (GPT-2, RoBERTa) with Hugging Face's ids.

`BytePairTokenizer` turns raw UTF-8 strings into byte-level BPE ids with
TensorFlow and tensorflow-text ops only, so it runs inside `tf.data`,
`tf.function` and an exported SavedModel. Its ids are exactly those of
Hugging Face `tokenizers` with a `BPE` model and a `ByteLevel` pre-tokenizer
(`encode(text, add_special_tokens=False)`), e.g. RoBERTa's `tokenizer.json`.

Pipeline (the reference's order):

1. Invalid UTF-8 is replaced by U+FFFD, as Python's
   `bytes.decode("utf-8", errors="replace")` would before the reference.
2. Added tokens (`<s>`, `</s>`, `<mask>`, ...) written verbatim in the text
   are split out and kept whole as their one id (unless
   `split_special_tokens=True`); one with `lstrip`/`rstrip` also takes the
   whitespace before/after it.
3. Each other segment (a space prepended if `add_prefix_space` and it does
   not start with one) is split by GPT-2's pattern
   `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`.
   RE2 has no lookahead: the segment is first cut before the last character
   of every run of two or more whitespace characters followed by a
   non-space, which is where `\\s+(?!\\S)` stops, and the pattern without
   the lookahead runs on the pieces.
4. Each pre-token's UTF-8 bytes are merged by BPE: repeatedly, the adjacent
   pair of lowest merge rank is merged (all its occurrences, left to right).
   Byte-level vocabularies hold the 256 bytes, so no byte is unknown.

The work happens on raw bytes: the vocabulary and merges are mapped back
through GPT-2's bytes-to-unicode table once, when the layer is built.

Speed: the distinct words of a batch are tokenized once. A word that is a
vocabulary token whose BPE gives itself is looked up in a hash table; the
others go through one `tf.while_loop` that merges all of them at once, one
merge rank a step, dropping finished words as it goes.

Shape legend: `N` strings, `S` segments, `W` words, `P` pieces.
"""

import json

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text.normalization import VALID_UTF8_PATTERN

# Unicode White_Space (Rust `char::is_whitespace`, Oniguruma's `\s`): RE2's
# `\s` is ASCII only.
_WS = r"\t\n\x0B\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}"
_WS_CLASS = f"[{_WS}]"
_NON_WS_CLASS = f"[^{_WS}]"

# GPT-2's pattern without the lookahead (see the module docstring).
PRETOKENIZE_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+" + f"| ?[^{_WS}\\p{{L}}\\p{{N}}]+|{_WS_CLASS}+"
# Runs where `\s+(?!\S)` stops before the run's last character.
_CUT_RUN_PATTERN = f"{_WS_CLASS}{{2,}}"
_NEEDS_CUT_PATTERN = f"(?s).*{_WS_CLASS}{{2,}}{_NON_WS_CLASS}.*"

# RoBERTa's special tokens, in its vocabulary's order.
ROBERTA_SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")

_NO_MERGE = np.iinfo(np.int64).max


def bytes_to_unicode():
    """GPT-2's table: byte value -> the printable character standing for it in vocabularies."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


_BYTE_TO_CHAR = bytes_to_unicode()
_CHAR_TO_BYTE = {c: b for b, c in _BYTE_TO_CHAR.items()}


def _token_bytes(token):
    """The bytes a vocabulary token stands for, or `None` if it is not byte-level."""
    try:
        return bytes(_CHAR_TO_BYTE[c] for c in token)
    except KeyError:
        return None


def _read_text(path):
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read().decode("utf-8")


def _load_vocabulary(vocabulary):
    if isinstance(vocabulary, str):
        if not tf.io.gfile.exists(vocabulary):
            raise ValueError(f"`vocabulary` file does not exist. Received: vocabulary={vocabulary}")
        try:
            vocabulary = json.loads(_read_text(vocabulary))
        except json.JSONDecodeError as e:
            raise ValueError(f"`vocabulary` is not a JSON file ({e}). Received: vocabulary={vocabulary}") from None
    if not isinstance(vocabulary, dict) or not vocabulary:
        raise ValueError(
            "`vocabulary` must be a non-empty dict {token: id} or the path of a vocab.json. "
            f"Received: vocabulary={type(vocabulary).__name__}"
        )
    for token, token_id in vocabulary.items():
        if not isinstance(token, str) or not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
            raise ValueError(f"`vocabulary` must map strings to non-negative ints. Received: {token!r}: {token_id!r}")
    return dict(vocabulary)


def _load_merges(merges):
    """List of (left, right) pairs from a path, a list of "a b" strings or a list of pairs."""
    if isinstance(merges, str):
        if not tf.io.gfile.exists(merges):
            raise ValueError(f"`merges` file does not exist. Received: merges={merges}")
        lines = _read_text(merges).split("\n")
        if lines and lines[0].startswith("#version"):
            lines = lines[1:]
        merges = [line for line in lines if line]
    if not isinstance(merges, (list, tuple)):
        raise ValueError(
            "`merges` must be a list of 'a b' strings or pairs, or the path of a merges.txt. "
            f"Received: merges={type(merges).__name__}"
        )
    pairs = []
    for merge in merges:
        if isinstance(merge, str):
            parts = merge.split(" ")
        else:
            parts = list(merge) if isinstance(merge, (list, tuple)) else None
        if not parts or len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
            raise ValueError(f"`merges` entries must be 'a b' or [a, b]. Received: merge={merge!r}")
        pairs.append(tuple(parts))
    return pairs


def _special_entries(special_tokens, vocabulary):
    """Normalized special token entries: [{content, id, lstrip, rstrip, special}]."""
    if special_tokens is None:
        # RoBERTa's defaults, as transformers' RobertaTokenizer sets them: <mask> takes the space before it.
        special_tokens = [{"content": t, "lstrip": t == "<mask>"} for t in ROBERTA_SPECIAL_TOKENS if t in vocabulary]
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
        content = entry["content"]
        if content not in vocabulary:
            raise ValueError(
                f"Special token {content!r} is not in the vocabulary. Received: special_tokens entry {entry!r}"
            )
        if entry.get("single_word"):
            raise ValueError(f"Special tokens with single_word=True are not supported. Received: {entry!r}")
        entries.append(
            {
                "content": content,
                "id": vocabulary[content],
                "lstrip": bool(entry.get("lstrip", False)),
                "rstrip": bool(entry.get("rstrip", False)),
                "special": bool(entry.get("special", True)),
            }
        )
    return entries


def _escape(token):
    """RE2 pattern matching `token` literally."""
    return "".join("\\" + c if not c.isalnum() and ord(c) < 128 else c for c in token)


def bpe_reference(word, ranks, ignore_merges=False, vocabulary=None):
    """Python BPE of one word (a sequence of symbols) by merge rank, as Hugging Face applies it.

    Args:
        word: list of symbols (any hashable, e.g. bytes).
        ranks: {(left, right): rank}.
        ignore_merges: a word that is itself in `vocabulary` is returned whole.

    Returns:
        list of symbols.
    """
    symbols = list(word)
    if ignore_merges and vocabulary is not None:
        whole = symbols[0][:0].join(symbols) if symbols else None
        if whole in vocabulary:
            return [whole]
    while len(symbols) > 1:
        best = min((ranks.get((a, b), _NO_MERGE), i) for i, (a, b) in enumerate(zip(symbols[:-1], symbols[1:])))
        if best[0] == _NO_MERGE:
            break
        pair = (symbols[best[1]], symbols[best[1] + 1])
        merged, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                merged.append(pair[0] + pair[1])
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        symbols = merged
    return symbols


@keras.saving.register_keras_serializable(package="bert_tf")
class BytePairTokenizer(keras.layers.Layer):
    """Byte-level BPE tokenizer layer (GPT-2, RoBERTa) with Hugging Face's ids.

    Runs entirely in-graph (tf.data, tf.function, SavedModel). Ids equal those
    of Hugging Face `tokenizers` with the same `BPE` model and `ByteLevel`
    pre-tokenizer, `encode_batch(texts, add_special_tokens=False)`.

    Invalid UTF-8 bytes are replaced by U+FFFD: the ids are those the
    reference gives for `line.decode("utf-8", errors="replace")`.

    Args:
        vocabulary: a `vocab.json` path, or its data, a dict {token: id}
            (tokens written with GPT-2's bytes-to-unicode characters, "Ġ" for
            a space). A path is kept as a path in `get_config()`, data as data.
        merges: a `merges.txt` path (one "a b" merge a line, highest priority
            first; a first line starting with "#version" is skipped), or its
            data, a list of "a b" strings or of [a, b] pairs.
        add_prefix_space: prepend a space to each text segment that does not
            start with one (so that the first word is tokenized like the
            others), as the `ByteLevel` pre-tokenizer option.
        special_tokens: tokens kept whole when written verbatim in the text:
            a list of strings, or of dicts as in `tokenizer.json`'s
            `added_tokens` (`content`, `lstrip`, `rstrip`, `special`). `None`
            (default): those of `<s>`, `<pad>`, `</s>`, `<unk>`, `<mask>` in
            the vocabulary, `<mask>` with `lstrip=True` (it takes the
            whitespace before it), as transformers' `RobertaTokenizer` sets
            them up from vocab.json and merges.txt.
        split_special_tokens: if `True`, special tokens (those with
            `special=True`) in the text are ordinary text ("<", "s", ">"), as
            `tokenizer.encode_special_tokens = True` in Hugging Face. Default
            `False`, the Hugging Face default.
        ignore_merges: a word that is itself a vocabulary token is that token
            without BPE (`tokenizer.json` `model.ignore_merges`, Llama 3).
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:

    >>> tokenizer = BytePairTokenizer("vocab.json", "merges.txt")
    >>> ids = tokenizer(tf.constant(["Hello world!"]))  # ragged [1, (P)]
    >>> tokenizer = BytePairTokenizer.from_tokenizer_json("tokenizer.json")
    """

    def __init__(
        self,
        vocabulary,
        merges,
        add_prefix_space=False,
        special_tokens=None,
        split_special_tokens=False,
        ignore_merges=False,
        **kwargs,
    ):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        for name, value in (
            ("add_prefix_space", add_prefix_space),
            ("split_special_tokens", split_special_tokens),
            ("ignore_merges", ignore_merges),
        ):
            if not isinstance(value, bool):
                raise ValueError(f"`{name}` must be a bool. Received: {name}={value!r}")
        self.vocabulary = vocabulary
        self.merges = merges
        self.add_prefix_space = add_prefix_space
        self.special_tokens = special_tokens
        self.split_special_tokens = split_special_tokens
        self.ignore_merges = ignore_merges
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        vocab = _load_vocabulary(vocabulary)
        pairs = _load_merges(merges)
        self._build_tables(vocab, pairs, _special_entries(special_tokens, vocab))
        self.built = True

    @classmethod
    def from_tokenizer_json(cls, path, **kwargs):
        """A tokenizer from a Hugging Face `tokenizer.json` with a byte-level `BPE` model.

        Reads `model.vocab`, `model.merges` (pairs or "a b" strings),
        `model.ignore_merges`, the `ByteLevel` pre-tokenizer's
        `add_prefix_space` and `added_tokens` (kept whole in the text, with
        their `lstrip`/`rstrip`). The vocabulary and merges are held as data
        in `get_config()`.

        Args:
            path: path of the `tokenizer.json`.
            **kwargs: other `BytePairTokenizer` arguments (e.g.
                `split_special_tokens`).
        """
        if not tf.io.gfile.exists(path):
            raise ValueError(f"`path` does not exist. Received: path={path}")
        try:
            data = json.loads(_read_text(path))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not a JSON file: {e}") from None
        model = data.get("model") or {}
        if model.get("type") != "BPE":
            raise ValueError(f"{path}: model.type is {model.get('type')!r}; BytePairTokenizer reads 'BPE' models only.")
        unsupported = {
            "dropout": model.get("dropout") not in (None, 0, 0.0),
            "continuing_subword_prefix": model.get("continuing_subword_prefix") not in (None, ""),
            "end_of_word_suffix": model.get("end_of_word_suffix") not in (None, ""),
            "byte_fallback": bool(model.get("byte_fallback")),
        }
        bad = [f"model.{k}={model.get(k)!r}" for k, v in unsupported.items() if v]
        if data.get("normalizer") is not None:
            bad.append(f"normalizer={data['normalizer'].get('type')!r}")
        pre = data.get("pre_tokenizer") or {}
        if pre.get("type") != "ByteLevel" or not pre.get("use_regex", True):
            bad.append(f"pre_tokenizer={json.dumps(pre)[:200]} (expected ByteLevel with use_regex=true)")
        if bad:
            raise ValueError(f"{path}: not a GPT-2/RoBERTa byte-level BPE tokenizer: {', '.join(bad)}")
        vocab = dict(model["vocab"])
        added = data.get("added_tokens") or []
        for token in added:
            vocab.setdefault(token["content"], token["id"])
        kwargs.setdefault("add_prefix_space", bool(pre.get("add_prefix_space", False)))
        kwargs.setdefault("ignore_merges", bool(model.get("ignore_merges", False)))
        kwargs.setdefault("special_tokens", [dict(t) for t in added])
        return cls(vocab, [list(m) if not isinstance(m, str) else m for m in model["merges"]], **kwargs)

    # === Tables ===

    def _build_tables(self, vocab, pairs, specials):
        self._token_to_id = vocab
        self._vocab_size = max(len(vocab), max(vocab.values()) + 1)
        self._specials = specials
        by_bytes = {}  # bytes -> id of byte-level tokens
        token_bytes = {}  # id -> bytes (detokenize, offsets)
        for token, token_id in vocab.items():
            raw = _token_bytes(token)
            if raw is not None:
                by_bytes[raw] = token_id
            token_bytes.setdefault(token_id, raw)
        for entry in specials:  # written as their text
            token_bytes[entry["id"]] = entry["content"].encode("utf-8")
        for token, token_id in vocab.items():
            if token_bytes.get(token_id) is None:
                token_bytes[token_id] = token.encode("utf-8")
        # Merges as (left id, right id) -> rank, merged id.
        ranks = {}
        keys, values = [], []
        for rank, (left, right) in enumerate(pairs):
            missing = [t for t in (left, right, left + right) if t not in vocab]
            if missing:
                raise ValueError(f"Merge {rank} ({left!r} {right!r}) has tokens not in the vocabulary: {missing}")
            key = (vocab[left], vocab[right])
            if key in ranks:
                continue  # Hugging Face keeps the first rank of a repeated merge.
            ranks[key] = rank
            keys.append(key[0] * self._vocab_size + key[1])
            values.append(rank << 32 | vocab[left + right])
        self._ranks = ranks
        byte_ids = np.array([by_bytes.get(bytes([b]), -1) for b in range(256)], np.int32)
        self._byte_ids = tf.constant(byte_ids)
        keys = np.array(keys or [-1], np.int64)
        values = np.array(values or [-1], np.int64)
        self._merge_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values), -1)
        # Words that are one vocabulary token after BPE: looked up, not merged.
        byte_ranks = {}
        id_to_bytes = {i: b for b, i in by_bytes.items()}
        for (left, right), rank in ranks.items():
            if left in id_to_bytes and right in id_to_bytes:
                byte_ranks[(id_to_bytes[left], id_to_bytes[right])] = rank
        whole = []
        for raw, token_id in by_bytes.items():
            if len(raw) > 1:
                if self.ignore_merges or bpe_reference([raw[i : i + 1] for i in range(len(raw))], byte_ranks) == [raw]:
                    whole.append((raw, token_id))
        self._whole_words = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant([w for w, _ in whole] or [b"\x00\x00"], tf.string),
                tf.constant([i for _, i in whole] or [-1], tf.int32),
            ),
            -1,
        )
        ids = sorted(token_bytes)
        self._id_to_bytes = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(ids, tf.int64), tf.constant([token_bytes[i] for i in ids], tf.string)
            ),
            b"",
        )
        # Bytes of each id, and its leading and trailing spaces (offset trimming).
        lengths = np.zeros([self._vocab_size], np.int64)
        leading = np.zeros([self._vocab_size], np.int64)
        trailing = np.zeros([self._vocab_size], np.int64)
        for i, raw in token_bytes.items():
            lengths[i] = len(raw)
            leading[i] = len(raw) - len(raw.lstrip(b" "))
            trailing[i] = len(raw) - len(raw.rstrip(b" ")) if raw.strip(b" ") else 0
        self._id_lengths = tf.constant(lengths)
        self._id_leading_spaces = tf.constant(leading)
        self._id_trailing_spaces = tf.constant(trailing)
        # Verbatim tokens: split_special_tokens leaves out the special ones.
        matched = [e for e in specials if not (self.split_special_tokens and e["special"])]
        matched.sort(key=lambda e: -len(e["content"]))  # leftmost-longest, as Hugging Face's matcher
        alternatives = [
            (f"{_WS_CLASS}*" if e["lstrip"] else "") + _escape(e["content"]) + (f"{_WS_CLASS}*" if e["rstrip"] else "")
            for e in matched
        ]
        self._added_pattern = "|".join(alternatives) or None
        if matched:
            self._added_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant([e["content"] for e in matched], tf.string),
                    tf.constant([e["id"] for e in matched], tf.int32),
                ),
                -1,
            )

    def _special_id(self, token):
        return self._token_to_id.get(token)

    @property
    def vocab_size(self):
        """Number of ids (the vocabulary and added tokens)."""
        return self._vocab_size

    @property
    def pad_id(self):
        return self._special_id("<pad>")

    @property
    def unk_id(self):
        return self._special_id("<unk>")

    @property
    def cls_id(self):
        """Id of `<s>` (RoBERTa's classification/begin token)."""
        return self._special_id("<s>")

    @property
    def sep_id(self):
        """Id of `</s>` (RoBERTa's separator/end token)."""
        return self._special_id("</s>")

    @property
    def mask_id(self):
        return self._special_id("<mask>")

    @property
    def bos_id(self):
        return self.cls_id

    @property
    def eos_id(self):
        return self.sep_id

    def token_to_id(self, token):
        """Id of a vocabulary token as written in vocab.json ("Ġthe"), or `None`."""
        return self._token_to_id.get(token)

    # === Tokenization ===

    def _segments(self, strings):
        """Splits valid rows at verbatim added tokens.

        Returns:
            `(segments, starts, special)`: ragged `[N, (S)]` tf.string, their
            int64 byte starts, and ragged int32 `[N, (S)]`, the added token's
            id of a segment or -1.
        """
        if self._added_pattern is None:
            segments = tf.RaggedTensor.from_tensor(strings[:, None])
            starts = tf.zeros_like(segments, tf.int64)
            special = tf.fill(tf.shape(segments.flat_values), -1)
            return segments, starts, segments.with_flat_values(special)
        pattern = self._added_pattern
        segments, starts, _ = tf_text.regex_split_with_offsets(strings, pattern, keep_delim_regex_pattern=pattern)
        stripped = tf.strings.regex_replace(segments.flat_values, f"^{_WS_CLASS}+|{_WS_CLASS}+$", "")
        special = self._added_table.lookup(stripped)
        # Text that happens to read like a token after stripping is no token.
        special = tf.where(tf.strings.regex_full_match(segments.flat_values, pattern), special, -1)
        return segments, starts, segments.with_flat_values(special)

    def _cut(self, segments):
        """Cuts segments where `\\s+(?!\\S)` stops: before the last of 2+ whitespace followed by a non-space.

        Args:
            segments: tf.string `[S]`.

        Returns:
            `(pieces, starts)`: ragged `[S, (K)]` tf.string and int64 byte starts.
        """

        def no_cut():
            pieces = tf.RaggedTensor.from_tensor(segments[:, None])
            return pieces.flat_values, pieces.row_splits, tf.zeros_like(pieces.flat_values, tf.int64)

        def cut():
            runs, starts, ends = tf_text.regex_split_with_offsets(segments, _CUT_RUN_PATTERN, _CUT_RUN_PATTERN)
            lengths = tf.cast(tf.strings.length(segments), tf.int64)
            is_run = tf.strings.regex_full_match(runs.flat_values, _CUT_RUN_PATTERN)
            followed = ends.flat_values < tf.gather(lengths, runs.value_rowids())
            before_last = tf.cast(tf.strings.length(tf.strings.regex_replace(runs.flat_values, "(?s).$", "")), tf.int64)
            cuts = runs.with_flat_values(starts.flat_values + before_last)
            cuts = tf.ragged.boolean_mask(cuts, runs.with_flat_values(tf.logical_and(is_run, followed)))
            zeros = tf.zeros_like(lengths)[:, None]
            bounds = tf.concat([zeros, cuts, lengths[:, None]], axis=1)  # [S, (C + 2)]
            piece_starts = bounds[:, :-1]
            piece_lengths = bounds[:, 1:] - piece_starts
            flat = tf.strings.substr(
                tf.repeat(segments, piece_starts.row_lengths()), piece_starts.flat_values, piece_lengths.flat_values
            )
            return flat, piece_starts.row_splits, piece_starts.flat_values

        needs = tf.reduce_any(tf.strings.regex_full_match(segments, _NEEDS_CUT_PATTERN))
        flat, splits, starts = tf.cond(needs, cut, no_cut)
        return tf.RaggedTensor.from_row_splits(flat, splits, validate=False), tf.RaggedTensor.from_row_splits(
            starts, splits, validate=False
        )

    def _bpe_unique(self, words):
        """BPE of distinct words, no cache.

        Args:
            words: non-empty tf.string `[M]`.

        Returns:
            ragged int32 `[M, (P)]` (ids; -1 for a byte missing from the vocabulary).
        """
        count = tf.shape(words, out_type=tf.int64)[0]
        lengths = tf.cast(tf.strings.length(words), tf.int64)
        raw = tf.io.decode_raw(tf.strings.reduce_join(words), tf.uint8)
        values = tf.gather(self._byte_ids, tf.cast(raw, tf.int32))
        vocab_size = tf.constant(self._vocab_size, tf.int64)
        arrays = [
            tf.TensorArray(dtype, size=0, dynamic_size=True, infer_shape=False)
            for dtype in (tf.int64,) * 2 + (tf.int32,)
        ]

        def body(step, index, lengths, values, done_index, done_lengths, done_values):
            rows = tf.repeat(tf.range(tf.size(lengths, out_type=tf.int64)), lengths)
            same_row = tf.equal(rows[:-1], rows[1:])
            keys = tf.cast(values[:-1], tf.int64) * vocab_size + tf.cast(values[1:], tf.int64)
            keys = tf.where(tf.logical_and(same_row, tf.logical_and(values[:-1] >= 0, values[1:] >= 0)), keys, -1)
            packed = self._merge_table.lookup(keys)
            valid = packed >= 0
            rank = tf.where(valid, tf.bitwise.right_shift(packed, 32), _NO_MERGE)
            best = tf.math.unsorted_segment_min(rank, rows[:-1], tf.size(lengths))  # [A]
            selected = tf.logical_and(valid, tf.equal(rank, tf.gather(best, rows[:-1])))
            # Runs of the same pair (a a a): take every other one from the left.
            positions = tf.range(tf.size(selected, out_type=tf.int64))
            previous = tf.concat([[False], selected[:-1]], 0)
            run_start = tf.logical_and(selected, tf.logical_not(previous))
            start_positions = tf.concat([[0], tf.boolean_mask(positions, run_start)], 0)
            in_run = positions - tf.gather(start_positions, tf.cumsum(tf.cast(run_start, tf.int64)))
            take = tf.logical_and(selected, tf.equal(in_run % 2, 0))
            merged = tf.cast(tf.bitwise.bitwise_and(packed, 0xFFFFFFFF), tf.int32)
            new_values = tf.where(tf.concat([take, [False]], 0), tf.concat([merged, [0]], 0), values)
            keep = tf.logical_not(tf.concat([[False], take], 0))
            merges = tf.math.unsorted_segment_sum(tf.cast(take, tf.int64), rows[:-1], tf.size(lengths))
            # Finished words (no pair to merge) leave the loop.
            done = tf.equal(best, _NO_MERGE)
            done_symbols = tf.gather(done, rows)
            done_index = done_index.write(step, tf.boolean_mask(index, done))
            done_lengths = done_lengths.write(step, tf.boolean_mask(lengths, done))
            done_values = done_values.write(step, tf.boolean_mask(values, done_symbols))
            active = tf.logical_not(done)
            keep = tf.logical_and(keep, tf.logical_not(done_symbols))
            return (
                step + 1,
                tf.boolean_mask(index, active),
                tf.boolean_mask(lengths - merges, active),
                tf.boolean_mask(new_values, keep),
                done_index,
                done_lengths,
                done_values,
            )

        _, _, _, _, done_index, done_lengths, done_values = tf.while_loop(
            lambda step, index, *_: tf.size(index) > 0,
            body,
            (tf.constant(0), tf.range(count), lengths, values, *arrays),
            shape_invariants=(
                tf.TensorShape([]),
                tf.TensorShape([None]),
                tf.TensorShape([None]),
                tf.TensorShape([None]),
                tf.TensorShape(None),
                tf.TensorShape(None),
                tf.TensorShape(None),
            ),
            parallel_iterations=1,
        )
        ids = tf.RaggedTensor.from_row_lengths(done_values.concat(), done_lengths.concat(), validate=False)
        return tf.gather(ids, tf.math.invert_permutation(done_index.concat()))

    def _bpe(self, words):
        """BPE of words `[W]` -> ragged int32 `[W, (P)]`, bytes missing from the vocabulary dropped."""
        unique, index = tf.unique(words)
        whole = self._whole_words.lookup(unique)
        hit = whole >= 0
        hit_rows = tf.where(hit)[:, 0]
        miss_rows = tf.where(tf.logical_not(hit))[:, 0]
        hit_ids = tf.RaggedTensor.from_row_lengths(tf.gather(whole, hit_rows), tf.ones_like(hit_rows), validate=False)
        misses = tf.gather(unique, miss_rows)

        def empty():
            return tf.RaggedTensor.from_row_splits(tf.zeros([0], tf.int32), tf.zeros([1], tf.int64), validate=False)

        miss_ids = tf.cond(tf.size(misses) > 0, lambda: self._bpe_unique(misses), empty)
        order = tf.math.invert_permutation(tf.concat([hit_rows, miss_rows], 0))
        ids = tf.gather(tf.concat([hit_ids, miss_ids], 0), order)
        ids = tf.gather(ids, index)
        return tf.ragged.boolean_mask(ids, ids >= 0)

    def _words_from_bytes(self, strings, segments, seg_starts, word_segments, word_starts, word_lengths, prefixed):
        """The words' text read from the rows' bytes (for rows holding NUL).

        Args:
            strings: tf.string `[N]`, the valid rows.
            segments, seg_starts: ragged `[N, (S)]` segments and their byte starts.
            word_segments, word_starts, word_lengths, prefixed: int64 `[W]`: each word's segment, its start in
                the segment (-1 for a prefix space), its length in bytes and whether it starts with a prefix space.

        Returns:
            tf.string `[W]`.
        """
        raw = tf.io.decode_raw(tf.strings.reduce_join(strings), tf.uint8)
        row_base = tf.cumsum(tf.cast(tf.strings.length(strings), tf.int64), exclusive=True)
        segment_base = tf.gather(row_base, segments.value_rowids()) + seg_starts.flat_values  # [S]
        starts = tf.gather(segment_base, word_segments) + word_starts + prefixed
        indices = tf.ragged.range(starts, starts + word_lengths - prefixed)
        byte_strings = tf.constant([bytes([b]) for b in range(256)])
        text = tf.strings.reduce_join(tf.gather(byte_strings, tf.cast(tf.gather(raw, indices), tf.int32)), axis=1)
        return tf.where(prefixed > 0, tf.strings.join([" ", text]), text)

    def _tokenize(self, inputs, with_offsets):
        strings = tf.convert_to_tensor(inputs, tf.string)
        scalar = strings.shape.rank == 0
        if scalar:
            strings = strings[None]
        if strings.shape.rank != 1:
            raise ValueError(
                f"`inputs` must be a tf.string scalar or vector [N]. Received: inputs.shape={strings.shape}"
            )
        valid = tf.cond(
            tf.reduce_all(tf.strings.regex_full_match(strings, VALID_UTF8_PATTERN)),
            lambda: tf.identity(strings),
            lambda: tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD),
        )
        # tensorflow-text's regex ops stop at NUL: they see U+0001 (the same class, the same length) instead,
        # and the words are then read from the bytes themselves.
        has_nul = tf.reduce_any(tf.strings.regex_full_match(valid, "(?s).*\x00.*"))
        searchable = tf.cond(has_nul, lambda: tf.strings.regex_replace(valid, "\x00", "\x01"), lambda: valid)
        segments, seg_starts, special = self._segments(searchable)  # [N, (S)]
        is_special = special.flat_values >= 0  # [S]
        text = tf.where(is_special, "", segments.flat_values)
        prefixed = tf.zeros_like(is_special)
        if self.add_prefix_space:
            prefixed = tf.logical_and(
                tf.logical_not(tf.strings.regex_full_match(text, "(?s)(?: .*)?")), tf.strings.length(text) > 0
            )
            text = tf.where(prefixed, tf.strings.join([" ", text]), text)
        pieces, piece_starts = self._cut(text)  # [S, (K)]
        words, word_starts, word_ends = tf_text.regex_split_with_offsets(
            pieces.flat_values, PRETOKENIZE_PATTERN, keep_delim_regex_pattern=PRETOKENIZE_PATTERN
        )  # [K, (W)]
        # Each word's segment, and its start in the segment's text (the prefix space included).
        word_segments = tf.repeat(pieces.value_rowids(), words.row_lengths())  # [W']
        word_in_text = (word_starts + tf.expand_dims(piece_starts.flat_values, 1)).flat_values
        word_prefixed = tf.gather(tf.cast(prefixed, tf.int64), word_segments)
        word_in_segment = word_in_text - word_prefixed
        flat_words = tf.cond(
            has_nul,
            lambda: self._words_from_bytes(
                valid,
                segments,
                seg_starts,
                word_segments,
                word_in_segment,
                word_ends.flat_values - word_starts.flat_values,
                word_prefixed * tf.cast(tf.equal(word_in_text, 0), tf.int64),  # the prefix space
            ),
            lambda: words.flat_values,
        )
        ids = self._bpe(flat_words)  # [W', (P)]
        seg_ids = words.with_flat_values(ids).merge_dims(1, 2)  # [K, (P)]
        seg_ids = pieces.with_flat_values(seg_ids).merge_dims(1, 2)  # [S, (P)]
        special_ids = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(special.flat_values, is_special), tf.cast(is_special, tf.int64), validate=False
        )
        seg_ids = tf.concat([seg_ids, special_ids], axis=1)  # specials have no text pieces
        out_ids = segments.with_flat_values(seg_ids).merge_dims(1, 2)  # [N, (P)]
        if not with_offsets:
            return out_ids[0] if scalar else out_ids
        # Byte spans of pieces in their segment, then in the valid row.
        lengths = tf.gather(self._id_lengths, ids.values)
        word_lengths = tf.math.unsorted_segment_sum(lengths, ids.value_rowids(), ids.nrows())
        word_base = tf.cumsum(word_lengths, exclusive=True)
        local_ends = tf.cumsum(lengths) - tf.repeat(word_base, ids.row_lengths())
        local_starts = local_ends - lengths
        base = tf.repeat(word_in_segment, ids.row_lengths())
        starts = base + local_starts
        ends = base + local_ends
        # Hugging Face's trim_offsets: spaces at either end of a piece are not its text.
        starts = tf.minimum(starts + tf.gather(self._id_leading_spaces, ids.values), ends)
        ends = tf.maximum(ends - tf.gather(self._id_trailing_spaces, ids.values), starts)
        starts = tf.maximum(starts, 0)
        ends = tf.maximum(ends, 0)
        # Segment coordinates -> row, specials spanning their segment.
        pieces_rows = tf.repeat(word_segments, ids.row_lengths())
        seg_base = tf.gather(seg_starts.flat_values, pieces_rows)

        def to_segments(values):
            ragged = tf.RaggedTensor.from_value_rowids(
                values + seg_base, pieces_rows, nrows=tf.size(is_special, out_type=tf.int64)
            )
            return ragged

        special_starts = tf.boolean_mask(seg_starts.flat_values, is_special)
        special_ends = special_starts + tf.boolean_mask(
            tf.cast(tf.strings.length(segments.flat_values), tf.int64), is_special
        )
        out = []
        for values, special_values in ((starts, special_starts), (ends, special_ends)):
            per_segment = tf.concat([to_segments(values), special_ids.with_values(special_values)], axis=1)
            out.append(segments.with_flat_values(per_segment).merge_dims(1, 2))
        out_starts, out_ends = out
        if scalar:
            return out_ids[0], out_starts[0], out_ends[0]
        return out_ids, out_starts, out_ends

    def tokenize(self, inputs):
        """Tokenizes strings into BPE ids, without special tokens added.

        Args:
            inputs: tf.string `[N]` (or a scalar).

        Returns:
            ragged int32 `[N, (P)]` (or `[P]` for a scalar).
        """
        return self._tokenize(inputs, with_offsets=False)

    def tokenize_with_offsets(self, inputs, unit="byte"):
        """Tokenizes strings and locates every piece in its input.

        `inputs[i][starts[i, j]:ends[i, j]]` is the text piece j came from,
        without the spaces at its ends (Hugging Face's `trim_offsets`: "Ġthe"
        spans "the"; a piece of spaces alone is empty, at its end). A piece
        holding part of a character's bytes spans those bytes ("byte") or the
        whole character ("char", as Hugging Face). A verbatim added token
        spans its text (with the whitespace `lstrip`/`rstrip` took). With
        `add_prefix_space`, the added space is empty, at the segment's start.

        Args:
            inputs: tf.string `[N]` (or a scalar).
            unit: "byte" for UTF-8 byte offsets into each input, or "char" for
                character (code point) offsets, i.e. indices into the Python
                `str` the bytes decode to with `errors="replace"`.

        Returns:
            `(ids, starts, ends)`: ragged int32 `[N, (P)]` and two ragged
            int64 `[N, (P)]`.
        """
        if unit not in ("byte", "char"):
            raise ValueError(f"`unit` must be 'byte' or 'char'. Received: unit={unit!r}")
        strings = tf.convert_to_tensor(inputs, tf.string)
        scalar = strings.shape.rank == 0
        if scalar:
            strings = strings[None]
        ids, starts, ends = self._tokenize(strings, with_offsets=True)
        valid = tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
        # Offsets so far are bytes of the valid rows; characters are the same in both.
        _, char_starts = tf.strings.unicode_decode_with_offsets(valid, "UTF-8")  # [N, (C)]
        char_counts = tf.cast(char_starts.row_lengths(), tf.int64)
        # Character boundaries, the row's end included, shifted so that rows follow each other.
        lengths = tf.cast(tf.strings.length(valid), tf.int64)
        shift = tf.cumsum(lengths + 1, exclusive=True)
        flat_bounds = tf.concat([char_starts, lengths[:, None]], axis=1) + shift[:, None]
        flat_bounds = flat_bounds.flat_values
        bounds_shift = tf.cumsum(char_counts + 1, exclusive=True)

        def chars(offsets, side):
            rows = offsets.value_rowids()
            shifted = offsets.values + tf.gather(shift, rows)
            if side == "start":  # the character holding the byte
                index = tf.searchsorted(flat_bounds, shifted, side="right", out_type=tf.int64) - 1
            else:  # the characters starting before the offset
                index = tf.searchsorted(flat_bounds, shifted, side="left", out_type=tf.int64)
            index -= tf.gather(bounds_shift, rows)
            return offsets.with_values(tf.clip_by_value(index, 0, tf.gather(char_counts, rows)))

        if unit == "char":
            starts, ends = chars(starts, "start"), chars(ends, "end")
        else:

            def original():
                # The same characters, each at its original bytes; an offset inside a character keeps its
                # distance from the character's start, within the original character (U+FFFD for 1-3 bytes).
                _, orig_starts = tf.strings.unicode_decode_with_offsets(strings, "UTF-8", errors="replace")
                orig_lengths = tf.cast(tf.strings.length(strings), tf.int64)
                orig_bounds = tf.concat([orig_starts, orig_lengths[:, None]], axis=1).flat_values
                orig_next = tf.concat([orig_bounds[1:], [0]], 0)
                valid_bounds = flat_bounds - tf.repeat(shift, char_counts + 1)

                def one(offsets):
                    index = chars(offsets, "start").values + tf.gather(bounds_shift, offsets.value_rowids())
                    within = offsets.values - tf.gather(valid_bounds, index)
                    size = tf.maximum(tf.gather(orig_next, index) - tf.gather(orig_bounds, index), 0)
                    return tf.gather(orig_bounds, index) + tf.minimum(within, size)

                return one(starts), one(ends)

            s, e = tf.cond(
                tf.reduce_all(tf.equal(strings, valid)),
                lambda: (tf.identity(starts.values), tf.identity(ends.values)),
                original,
            )
            starts, ends = starts.with_values(s), ends.with_values(e)
        if scalar:
            return ids[0], starts[0], ends[0]
        return ids, starts, ends

    def call(self, inputs):
        return self.tokenize(inputs)

    def detokenize(self, ids):
        """Joins BPE ids back into text.

        Each id's bytes are joined (GPT-2's bytes-to-unicode table undone;
        added tokens give their text) and decoded as UTF-8, invalid bytes (a
        character cut between pieces) as U+FFFD, as Hugging Face's
        `ByteLevel` decoder does.

        Args:
            ids: int `[N, (P)]` ragged or dense (or `[P]`).

        Returns:
            tf.string `[N]` (or a scalar).
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
        scalar = ids.shape.rank == 1
        if scalar:
            ids = ids[None]
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        pieces = tf.ragged.map_flat_values(self._id_to_bytes.lookup, tf.cast(ids, tf.int64))
        text = tf.strings.reduce_join(pieces, axis=-1)
        text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
        return text[0] if scalar else text

    def compute_output_spec(self, inputs):
        return keras.KerasTensor([inputs.shape[0], None], dtype="int32", ragged=True)

    # === Config ===

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": self.vocabulary,
                "merges": self.merges
                if isinstance(self.merges, str)
                else [" ".join(p) if not isinstance(p, str) else p for p in self.merges],
                "add_prefix_space": self.add_prefix_space,
                "special_tokens": self.special_tokens,
                "split_special_tokens": self.split_special_tokens,
                "ignore_merges": self.ignore_merges,
            }
        )
        return config
