"""In-graph BERT WordPiece tokenizer with reference-exact ids.

`BertTokenizer` turns raw UTF-8 strings into WordPiece ids with TensorFlow and
tensorflow-text ops only, so it runs inside `tf.data`, `tf.function` and an
exported SavedModel. Its ids are exactly those of the reference BERT
tokenizer: Hugging Face `tokenizers.BertWordPieceTokenizer` (`clean_text=True`,
`handle_chinese_chars=True`), which follows google-research/bert
`tokenization.FullTokenizer`.

Pipeline (the reference's order):

1. Invalid UTF-8 is replaced by U+FFFD (which step 2 then removes), as Python's
   `bytes.decode("utf-8", errors="replace")` would before the reference.
2. Clean: drop NUL, U+FFFD and control/format/private-use characters (`Cc`,
   `Cf`, `Co`, `Cs`), except tab, newline and carriage return.
3. Strip accents (default: when lowercasing): NFD, then drop `Mn` characters.
4. Lowercase per character (no final-sigma context: "Σ" becomes "σ").
5. Split on whitespace; isolate punctuation (ASCII symbols and Unicode `P*`)
   and CJK ideographs as one-character words.
6. WordPiece (greedy longest match first, `##` continuations); a word longer
   than `max_input_chars_per_word` characters becomes `[UNK]`.

The character classes below are those of the reference, not of the newest
Unicode: the reference's category tables (Rust crate `unicode_categories`)
predate Unicode 10, while RE2 and ICU in TensorFlow are newer, so `\\p{Mn}` or
`\\p{P}` would disagree on a few hundred recently assigned characters. The
tables were measured against the reference on every code point, and
`tests/text/parity_test.py` re-checks them on every code point. Where ICU's
case mapping or NFD (used for speed) disagree with the reference on a
character, a per-character fix-up runs, only on batches that contain one.

Speed: rows of plain ASCII (printable, tab, newline, carriage return; most
real text) need no cleaning, NFD or special tables: they are lowercased and go
to tensorflow-text's end-to-end WordPiece, whose BERT pretokenization splits
ASCII exactly as the reference does. Only the other rows take the pipeline
above, and only the non-ASCII characters of those are normalized one at a time
for offsets.

Shape legend: `N` strings, `W` words, `P` pieces.
"""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

# === Unicode tables of the reference ===
# Hexadecimal code point ranges, "A-B" inclusive or a single "A".

# Removed by clean_text: NUL, U+FFFD and Cc/Cf/Co/Cs except \t \n \r.
_REMOVED = """
0-8 B-C E-1F 7F-9F AD 600-605 61C 6DD 70F 180E 200B-200F 202A-202E 2060-2064
2066-206F E000-F8FF FEFF FFF9-FFFB FFFD 110BD 1BCA0-1BCA3 1D173-1D17A E0001
E0020-E007F F0000-FFFFD 100000-10FFFD
"""

# Whitespace (Rust `char::is_whitespace` plus \t \n \r): word boundaries.
_WHITESPACE = "9-D 20 85 A0 1680 2000-200A 2028-2029 202F 205F 3000"

# CJK ideographs padded with spaces by handle_chinese_chars.
_CJK = """
3400-4DBF 4E00-9FFF F900-FAFF 20000-2A6DF 2A700-2B81F 2B920-2CEAF 2F800-2FA1F
"""

# Punctuation: ASCII 33-47, 58-64, 91-96, 123-126 and the reference's `P*`.
_PUNCTUATION = """
21-2F 3A-40 5B-60 7B-7E A1 A7 AB B6-B7 BB BF 37E 387 55A-55F 589-58A 5BE 5C0
5C3 5C6 5F3-5F4 609-60A 60C-60D 61B 61E-61F 66A-66D 6D4 700-70D 7F7-7F9
830-83E 85E 964-965 970 AF0 DF4 E4F E5A-E5B F04-F12 F14 F3A-F3D F85 FD0-FD4
FD9-FDA 104A-104F 10FB 1360-1368 1400 166D-166E 169B-169C 16EB-16ED
1735-1736 17D4-17D6 17D8-17DA 1800-180A 1944-1945 1A1E-1A1F 1AA0-1AA6
1AA8-1AAD 1B5A-1B60 1BFC-1BFF 1C3B-1C3F 1C7E-1C7F 1CC0-1CC7 1CD3 2010-2027
2030-2043 2045-2051 2053-205E 207D-207E 208D-208E 2308-230B 2329-232A
2768-2775 27C5-27C6 27E6-27EF 2983-2998 29D8-29DB 29FC-29FD 2CF9-2CFC
2CFE-2CFF 2D70 2E00-2E2E 2E30-2E42 3001-3003 3008-3011 3014-301F 3030 303D
30A0 30FB A4FE-A4FF A60D-A60F A673 A67E A6F2-A6F7 A874-A877 A8CE-A8CF
A8F8-A8FA A8FC A92E-A92F A95F A9C1-A9CD A9DE-A9DF AA5C-AA5F AADE-AADF
AAF0-AAF1 ABEB FD3E-FD3F FE10-FE19 FE30-FE52 FE54-FE61 FE63 FE68 FE6A-FE6B
FF01-FF03 FF05-FF0A FF0C-FF0F FF1A-FF1B FF1F-FF20 FF3B-FF3D FF3F FF5B FF5D
FF5F-FF65 10100-10102 1039F 103D0 1056F 10857 1091F 1093F 10A50-10A58 10A7F
10AF0-10AF6 10B39-10B3F 10B99-10B9C 11047-1104D 110BB-110BC 110BE-110C1
11140-11143 11174-11175 111C5-111C9 111CD 111DB 111DD-111DF 11238-1123D
112A9 114C6 115C1-115D7 11641-11643 1173C-1173E 12470-12474 16A6E-16A6F
16AF5 16B37-16B3B 16B44 1BC9F 1DA87-1DA8B
"""

# Nonspacing marks (`Mn`) dropped after NFD when stripping accents.
_NONSPACING_MARKS = """
300-36F 483-487 591-5BD 5BF 5C1-5C2 5C4-5C5 5C7 610-61A 64B-65F 670 6D6-6DC
6DF-6E4 6E7-6E8 6EA-6ED 711 730-74A 7A6-7B0 7EB-7F3 816-819 81B-823 825-827
829-82D 859-85B 8E3-902 93A 93C 941-948 94D 951-957 962-963 981 9BC 9C1-9C4
9CD 9E2-9E3 A01-A02 A3C A41-A42 A47-A48 A4B-A4D A51 A70-A71 A75 A81-A82 ABC
AC1-AC5 AC7-AC8 ACD AE2-AE3 B01 B3C B3F B41-B44 B4D B56 B62-B63 B82 BC0 BCD
C00 C3E-C40 C46-C48 C4A-C4D C55-C56 C62-C63 C81 CBC CBF CC6 CCC-CCD CE2-CE3
D01 D41-D44 D4D D62-D63 DCA DD2-DD4 DD6 E31 E34-E3A E47-E4E EB1 EB4-EB9
EBB-EBC EC8-ECD F18-F19 F35 F37 F39 F71-F7E F80-F84 F86-F87 F8D-F97 F99-FBC
FC6 102D-1030 1032-1037 1039-103A 103D-103E 1058-1059 105E-1060 1071-1074
1082 1085-1086 108D 109D 135D-135F 1712-1714 1732-1734 1752-1753 1772-1773
17B4-17B5 17B7-17BD 17C6 17C9-17D3 17DD 180B-180D 18A9 1920-1922 1927-1928
1932 1939-193B 1A17-1A18 1A1B 1A56 1A58-1A5E 1A60 1A62 1A65-1A6C 1A73-1A7C
1A7F 1AB0-1ABD 1B00-1B03 1B34 1B36-1B3A 1B3C 1B42 1B6B-1B73 1B80-1B81
1BA2-1BA5 1BA8-1BA9 1BAB-1BAD 1BE6 1BE8-1BE9 1BED 1BEF-1BF1 1C2C-1C33
1C36-1C37 1CD0-1CD2 1CD4-1CE0 1CE2-1CE8 1CED 1CF4 1CF8-1CF9 1DC0-1DF5
1DFC-1DFF 20D0-20DC 20E1 20E5-20F0 2CEF-2CF1 2D7F 2DE0-2DFF 302A-302D
3099-309A A66F A674-A67D A69E-A69F A6F0-A6F1 A802 A806 A80B A825-A826 A8C4
A8E0-A8F1 A926-A92D A947-A951 A980-A982 A9B3 A9B6-A9B9 A9BC A9E5 AA29-AA2E
AA31-AA32 AA35-AA36 AA43 AA4C AA7C AAB0 AAB2-AAB4 AAB7-AAB8 AABE-AABF AAC1
AAEC-AAED AAF6 ABE5 ABE8 ABED FB1E FE00-FE0F FE20-FE2F 101FD 102E0
10376-1037A 10A01-10A03 10A05-10A06 10A0C-10A0F 10A38-10A3A 10A3F
10AE5-10AE6 11001 11038-11046 1107F-11081 110B3-110B6 110B9-110BA
11100-11102 11127-1112B 1112D-11134 11173 11180-11181 111B6-111BE
111CA-111CC 1122F-11231 11234 11236-11237 112DF 112E3-112EA 11300-11301
1133C 11340 11366-1136C 11370-11374 114B3-114B8 114BA 114BF-114C0
114C2-114C3 115B2-115B5 115BC-115BD 115BF-115C0 115DC-115DD 11633-1163A
1163D 1163F-11640 116AB 116AD 116B0-116B5 116B7 1171D-1171F 11722-11725
11727-1172B 16AF0-16AF4 16B30-16B36 16F8F-16F92 1BC9D-1BC9E 1D167-1D169
1D17B-1D182 1D185-1D18B 1D1AA-1D1AD 1D242-1D244 1DA00-1DA36 1DA3B-1DA6C
1DA75 1DA84 1DA9B-1DA9F 1DAA1-1DAAF 1E8D0-1E8D6 E0100-E01EF
"""

# Lowercase mappings the reference (Rust std, Unicode 16) has and ICU in
# `tf.strings.lower` lacks: "A-B:+D" maps each code point c in A..B to c + D.
# U+03A3 (capital sigma) is here because ICU lowercases a final one to U+03C2.
_LOWERCASE_FIXES = """
3A3:+20 1C89:+1 2C2F:+30 A7C0:+1 A7CB:-A567 A7CC:+1 A7CE:+1 A7D0:+1 A7D2:+1
A7D4:+1 A7D6:+1 A7D8:+1 A7DA:+1 A7DC:-A641 10570-1057A:+27 1057C-1058A:+27
1058C-10592:+27 10594-10595:+27 10D50-10D65:+20 16EA0-16EB8:+1B
"""

# Characters ICU's NFD decomposes and the reference's older NFD does not.
_NFD_KEEP = """
105C9 105E4 11383 11385 1138E 11391 113C5 113C7-113C8 11938 16121-16128
16D68-16D6A
"""

# Private-use code points stand in for _NFD_KEEP characters during NFD; clean
# has already removed every private-use character of the input.
_PLACEHOLDER_BASE = 0xF0000

_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _parse_ranges(table):
    """Returns [(first, last)] code point ranges of a table string."""
    ranges = []
    for item in table.split():
        first, _, last = item.partition("-")
        ranges.append((int(first, 16), int(last or first, 16)))
    return ranges


def _regex_class(*tables):
    """RE2 character class matching every code point of the tables."""
    parts = []
    for table in tables:
        for first, last in _parse_ranges(table):
            if first == last:
                parts.append("\\x{%X}" % first)
            else:
                parts.append("\\x{%X}-\\x{%X}" % (first, last))
    return "[" + "".join(parts) + "]"


def _code_point_map(table):
    """Sorted (keys, values) int32 lists of a "A-B:+D" mapping table."""
    pairs = []
    for item in table.split():
        span, _, delta = item.partition(":")
        first, _, last = span.partition("-")
        first, last, delta = int(first, 16), int(last or first, 16), int(delta, 16)
        pairs.extend((c, c + delta) for c in range(first, last + 1))
    pairs.sort()
    return [k for k, _ in pairs], [v for _, v in pairs]


def _nfd_keep_map():
    keys = [c for a, b in _parse_ranges(_NFD_KEEP) for c in range(a, b + 1)]
    values = [_PLACEHOLDER_BASE + i for i in range(len(keys))]
    return keys, values


_REMOVED_RE = _regex_class(_REMOVED)
_NONSPACING_MARKS_RE = _regex_class(_NONSPACING_MARKS)
_ISOLATED_RE = _regex_class(_PUNCTUATION, _CJK)
_SPLIT_RE = _regex_class(_WHITESPACE) + "|" + _ISOLATED_RE


def _contains_re(table):
    return "(?s).*" + _regex_class(table) + ".*"


_NFD_KEEP_CONTAINS_RE = _contains_re(_NFD_KEEP)

# Rows of printable ASCII, tab, newline and carriage return: normalization
# only lowercases them, and tensorflow-text's own BERT pretokenization
# (whitespace, ASCII punctuation) splits them exactly as the reference does.
_PLAIN_ASCII_RE = "[\\t\\n\\r\\x20-\\x7e]*"

# Valid UTF-8 (no surrogates, overlong forms or code points past U+10FFFF):
# RE2 matches its classes against well-formed UTF-8 only.
_VALID_UTF8_RE = "[\\x{0}-\\x{D7FF}\\x{E000}-\\x{10FFFF}]*"


def _lowercase_fix_tables():
    keys, values = _code_point_map(_LOWERCASE_FIXES)
    spans = " ".join("%X" % k for k in keys)
    return keys, values, _contains_re(spans)


def _map_code_points(strings, keys, values):
    """Replaces code points `keys[i]` by `values[i]` in valid UTF-8 strings.

    Args:
        strings: tf.string, any shape.
        keys: sorted Python list of int code points.
        values: Python list of int code points, one per key.

    Returns:
        tf.string of the same shape.
    """
    keys = tf.constant(keys, tf.int32)
    values = tf.constant(values, tf.int32)
    code_points = tf.strings.unicode_decode(strings, "UTF-8")
    flat = code_points.flat_values  # [C]
    index = tf.minimum(tf.searchsorted(keys, flat), tf.size(keys) - 1)
    hit = tf.equal(tf.gather(keys, index), flat)
    flat = tf.where(hit, tf.gather(values, index), flat)
    return tf.strings.unicode_encode(code_points.with_flat_values(flat), "UTF-8")


def _map_if_any(strings, contains_pattern, keys, values):
    """`_map_code_points`, run only when some string contains a key."""
    needed = tf.reduce_any(tf.strings.regex_full_match(strings, contains_pattern))
    return tf.cond(
        needed,
        lambda: _map_code_points(strings, keys, values),
        lambda: tf.identity(strings),
    )


def normalize(strings, lowercase=True, strip_accents=None):
    """Normalizes valid UTF-8 strings as the reference BERT normalizer does.

    Args:
        strings: tf.string, any shape, valid UTF-8 (see `BertTokenizer` for
            invalid input).
        lowercase: whether to lowercase.
        strip_accents: whether to drop accents (NFD, then `Mn` removed);
            `None` follows `lowercase`.

    Returns:
        tf.string of the same shape. Whitespace is left as it is and CJK
        characters are not padded: word splitting handles both.
    """
    if strip_accents is None:
        strip_accents = lowercase
    strings = tf.strings.regex_replace(strings, _REMOVED_RE, "")
    if strip_accents:
        keys, placeholders = _nfd_keep_map()
        back = sorted(zip(placeholders, keys))

        def protected_nfd():
            # Placeholders keep _NFD_KEEP characters whole through ICU's NFD.
            protected = _map_code_points(strings, keys, placeholders)
            decomposed = tf_text.normalize_utf8(protected, "NFD")
            return _map_code_points(decomposed, [p for p, _ in back], [k for _, k in back])

        # One check for both fix-ups: the placeholders only exist if it hit.
        rare = tf.strings.regex_full_match(strings, _NFD_KEEP_CONTAINS_RE)
        strings = tf.cond(
            tf.reduce_any(rare),
            protected_nfd,
            lambda: tf_text.normalize_utf8(strings, "NFD"),
        )
        strings = tf.strings.regex_replace(strings, _NONSPACING_MARKS_RE, "")
    if lowercase:
        keys, values, contains = _lowercase_fix_tables()
        strings = _map_if_any(strings, contains, keys, values)
        strings = tf.strings.lower(strings, encoding="utf-8")
    return strings


def split_words(normalized):
    """Splits normalized strings into BERT words.

    Args:
        normalized: tf.string `[N]`, output of `normalize`.

    Returns:
        `(words, starts, ends)`: ragged `[N, (W)]` tf.string and int64 byte
        offsets into `normalized`.
    """
    return tf_text.regex_split_with_offsets(normalized, _SPLIT_RE, keep_delim_regex_pattern=_ISOLATED_RE)


def _read_vocab(vocab_file):
    """Reads a vocab file as the reference does: one token a line."""
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
        lines = f.read().decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip() for line in lines]


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenizer(keras.layers.Layer):
    """BERT WordPiece tokenizer layer with the reference tokenizer's ids.

    Runs entirely in-graph (tf.data, tf.function, SavedModel). Ids equal
    those of Hugging Face `tokenizers.BertWordPieceTokenizer(vocab_file,
    lowercase=lowercase, strip_accents=strip_accents, clean_text=True,
    handle_chinese_chars=True)` without special tokens added, and those of
    google-research/bert `FullTokenizer` (which never keeps special tokens, as
    `split_special_tokens=True` here).

    Invalid UTF-8 bytes are replaced by U+FFFD, which cleaning removes: the
    ids are those the reference gives for
    `line.decode("utf-8", errors="replace")`.

    Args:
        vocab_file: path to a `vocab.txt` (one token a line, id = line
            number). Kept as a path in `get_config()` and tracked as an asset
            in a SavedModel.
        lowercase: whether to lowercase (uncased models).
        strip_accents: whether to strip accents (NFD then drop `Mn`); `None`
            (default) follows `lowercase`, as BERT uncased does.
        max_input_chars_per_word: a word of more characters than this (after
            normalization) becomes one `[UNK]`.
        split_special_tokens: if `True` (default), literal "[MASK]", "[SEP]",
            ... in the text are ordinary text ("[", "mask", "]"), as in the
            original FullTokenizer. If `False`, the vocabulary's special tokens
            found verbatim in the raw text become their single ids, as the
            Hugging Face tokenizer does by default.
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:

    >>> tokenizer = BertTokenizer("vocab.txt")
    >>> ids = tokenizer(tf.constant(["Hello world!"]))  # ragged [1, (P)]
    """

    def __init__(
        self,
        vocab_file,
        lowercase=True,
        strip_accents=None,
        max_input_chars_per_word=100,
        split_special_tokens=True,
        **kwargs,
    ):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        if not isinstance(vocab_file, str) or not vocab_file:
            raise ValueError(f"`vocab_file` must be a non-empty path string. Received: vocab_file={vocab_file!r}")
        if not tf.io.gfile.exists(vocab_file):
            raise ValueError(f"`vocab_file` does not exist. Received: vocab_file={vocab_file}")
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
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.max_input_chars_per_word = max_input_chars_per_word
        self.split_special_tokens = split_special_tokens
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self._load_vocabulary(vocab_file)
        self.built = True

    # === Vocabulary ===

    def _load_vocabulary(self, vocab_file):
        vocab = _read_vocab(vocab_file)
        # The reference maps a token to its last line; earlier duplicates and
        # empty lines get placeholders no normalized word can contain (NUL is
        # removed by cleaning), so that no id shifts.
        last = {token: i for i, token in enumerate(vocab)}
        pieces = [token if token and last[token] == i else f"\x00{i}" for i, token in enumerate(vocab)]
        if "[UNK]" not in last:
            raise ValueError(f"The vocabulary has no '[UNK]' token. Received: vocab_file={vocab_file}")
        self._token_to_id = last
        self._vocab_size = len(vocab)
        self._specials = {t: last[t] for t in _SPECIAL_TOKENS if t in last}
        self._specials_re = "|".join(_escape(t) for t in self._specials)
        self._specials_contains_re = "(?s).*(?:%s).*" % self._specials_re
        # Words longer than the limit never reach WordPiece (they are [UNK]).
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=pieces,
            suffix_indicator="##",
            max_bytes_per_word=4 * self.max_input_chars_per_word + 4,
            token_out_type=tf.int32,
            unknown_token="[UNK]",
            no_pretokenization=True,
        )
        # Plain ASCII rows (see _PLAIN_ASCII_RE) in one op: tensorflow-text's
        # BERT pretokenization and WordPiece. One byte per character, so the
        # byte limit is the character limit.
        self._plain_wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=pieces,
            suffix_indicator="##",
            max_bytes_per_word=self.max_input_chars_per_word,
            token_out_type=tf.int32,
            unknown_token="[UNK]",
            no_pretokenization=False,
        )
        # id -> token for detokenize, initialized from the file: the file is
        # an asset of any SavedModel that holds this layer.
        self._vocab_asset = tf.saved_model.Asset(vocab_file)
        self._id_to_token = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(
                self._vocab_asset,
                key_dtype=tf.int64,
                key_index=tf.lookup.TextFileIndex.LINE_NUMBER,
                value_dtype=tf.string,
                value_index=tf.lookup.TextFileIndex.WHOLE_LINE,
            ),
            default_value="[UNK]",
        )

    def _special_id(self, token):
        return self._specials.get(token)

    @property
    def vocab_size(self):
        """Number of lines of the vocabulary file."""
        return self._vocab_size

    @property
    def pad_id(self):
        return self._special_id("[PAD]")

    @property
    def unk_id(self):
        return self._special_id("[UNK]")

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
        # "[UNK]" is itself a vocabulary entry: one piece, the unknown id.
        words = tf.where(too_long, "[UNK]", words)
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
        # Rows of plain ASCII take the one-op path, the others the general
        # one; the results go back to the input order.
        plain = tf.strings.regex_full_match(strings, _PLAIN_ASCII_RE)  # [N]
        if not self.split_special_tokens and self._specials:
            plain = tf.logical_and(
                plain,
                tf.logical_not(tf.strings.regex_full_match(strings, self._specials_contains_re)),
            )
        plain_rows = tf.where(plain)[:, 0]
        other_rows = tf.where(tf.logical_not(plain))[:, 0]
        plain_out = self._unless_empty(self._tokenize_plain, tf.gather(strings, plain_rows), with_offsets)
        other_out = self._unless_empty(self._tokenize_general, tf.gather(strings, other_rows), with_offsets)
        if not with_offsets:
            plain_out, other_out = (plain_out,), (other_out,)
        order = tf.math.invert_permutation(tf.concat([plain_rows, other_rows], 0))
        outputs = tuple(tf.gather(tf.concat([a, b], axis=0), order) for a, b in zip(plain_out, other_out))
        if scalar:
            outputs = tuple(x[0] for x in outputs)
        return outputs if with_offsets else outputs[0]

    def _unless_empty(self, tokenize, strings, with_offsets):
        """`tokenize(strings, with_offsets)`, its ops skipped for no rows."""

        def empty():
            ids = tf.RaggedTensor.from_row_splits(tf.zeros([0], tf.int32), tf.zeros([1], tf.int64), validate=False)
            if not with_offsets:
                return ids
            offsets = ids.with_values(tf.zeros([0], tf.int64))
            return ids, offsets, offsets

        return tf.cond(tf.size(strings) > 0, lambda: tokenize(strings, with_offsets), empty)

    def _tokenize_plain(self, strings, with_offsets):
        """Tokenizes rows of plain ASCII (see `_PLAIN_ASCII_RE`).

        Their normalization is lowercasing alone, which keeps every byte in
        place, so the offsets into the lowercased text are the input's.
        """
        if self.lowercase:
            strings = tf.strings.lower(strings)
        if with_offsets:
            return self._plain_wordpiece.tokenize_with_offsets(strings)
        return self._plain_wordpiece.tokenize(strings)

    def _tokenize_general(self, strings, with_offsets):
        """Tokenizes any rows `[N]` with the full reference normalization."""
        # Invalid UTF-8 -> U+FFFD, removed by normalize().
        valid = tf.cond(
            tf.reduce_all(tf.strings.regex_full_match(strings, _VALID_UTF8_RE)),
            lambda: tf.identity(strings),
            lambda: tf.strings.unicode_transcode(
                strings,
                "UTF-8",
                "UTF-8",
                errors="replace",
                replacement_char=0xFFFD,
            ),
        )
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
        c_ends = c_starts.flat_values + _utf8_length(flat_cp)
        c_norm = self._char_normalized_lengths(flat_cp)  # [C']
        # Global coordinates: segment k's normalized bytes start at base[k].
        seg_norm_len = tf.cast(tf.strings.length(normalized), tf.int64)  # [S]
        base = tf.cumsum(seg_norm_len, exclusive=True)
        p_rows = tf.repeat(words.value_rowids(), piece_starts.row_lengths())  # segment of each piece
        p_start_g = tf.gather(base, p_rows) + p_start
        p_end_g = tf.gather(base, p_rows) + p_end
        c_start_g = tf.cumsum(c_norm, exclusive=True)  # [C']
        nonempty = tf.where(c_norm > 0)[:, 0]
        nz_starts = tf.gather(c_start_g, nonempty)
        first = tf.gather(
            nonempty,
            tf.maximum(tf.searchsorted(nz_starts, p_start_g, side="right") - 1, 0),
        )
        last = tf.gather(
            nonempty,
            tf.maximum(tf.searchsorted(nz_starts, p_end_g - 1, side="right") - 1, 0),
        )
        starts = tf.gather(c_starts.flat_values, first)  # segment bytes
        ends = tf.gather(c_ends, last)
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
        return self._to_original_bytes(strings, valid, starts, ends)

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
        # Other characters are normalized one at a time.
        other = tf.where(code_points >= 0x80)[:, 0]
        chars = tf.strings.unicode_encode(tf.gather(code_points, other)[:, None], "UTF-8")
        other_lengths = tf.strings.length(normalize(chars, self.lowercase, self.strip_accents))
        return tf.tensor_scatter_nd_update(lengths, other[:, None], tf.cast(other_lengths, tf.int64))

    def _to_original_bytes(self, strings, valid, starts, ends):
        """Byte offsets into the valid (transcoded) rows -> original rows.

        They differ only where invalid UTF-8 was replaced.
        """

        def identity():
            return tf.identity(starts.values), tf.identity(ends.values)

        def convert():
            _, orig_starts = tf.strings.unicode_decode_with_offsets(strings, "UTF-8", errors="replace")
            _, valid_starts = tf.strings.unicode_decode_with_offsets(valid, "UTF-8")
            orig_len = tf.cast(tf.strings.length(strings), tf.int64)
            valid_len = tf.cast(tf.strings.length(valid), tf.int64)
            # Character boundaries including the end: [N, (C + 1)].
            orig_bounds = tf.concat([orig_starts, orig_len[:, None]], axis=1)
            valid_bounds = tf.concat([valid_starts, valid_len[:, None]], axis=1)
            # Global (row-shifted) positions keep searchsorted one-dimensional.
            valid_shift = tf.cumsum(valid_len + 1, exclusive=True)
            bounds_g = (valid_bounds + valid_shift[:, None]).flat_values

            def one(offsets):
                shifted = offsets.values + tf.gather(valid_shift, offsets.value_rowids())
                index = tf.searchsorted(bounds_g, shifted)
                return tf.gather(orig_bounds.flat_values, index)

            return one(starts), one(ends)

        starts_values, ends_values = tf.cond(tf.reduce_all(tf.equal(strings, valid)), identity, convert)
        return starts.with_values(starts_values), ends.with_values(ends_values)

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
            starts, ends = _bytes_to_chars(inputs, starts), _bytes_to_chars(inputs, ends)
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
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
        scalar = ids.shape.rank == 1
        if scalar:
            ids = ids[None]
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        tokens = tf.ragged.map_flat_values(self._id_to_token.lookup, tf.cast(ids, tf.int64))
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        text = tf.strings.regex_replace(text, " ##", "")
        return text[0] if scalar else text

    def compute_output_spec(self, inputs):
        return keras.KerasTensor([inputs.shape[0], None], dtype="int32", ragged=True)

    # === Config ===

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_file": self.vocab_file,
                "lowercase": self.lowercase,
                "strip_accents": self.strip_accents,
                "max_input_chars_per_word": self.max_input_chars_per_word,
                "split_special_tokens": self.split_special_tokens,
            }
        )
        return config


def _utf8_length(code_points):
    """UTF-8 byte length (int64) of each valid code point."""
    return (
        1
        + tf.cast(code_points >= 0x80, tf.int64)
        + tf.cast(code_points >= 0x800, tf.int64)
        + tf.cast(code_points >= 0x10000, tf.int64)
    )


def _escape(token):
    """RE2 pattern matching `token` literally."""
    return "".join("\\" + c if not c.isalnum() else c for c in token)


def _bytes_to_chars(strings, offsets):
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
