"""In-graph byte-level BPE tokenizer (GPT-2, RoBERTa, ModernBERT) with Hugging Face's ids.

`BytePairTokenizer` turns raw UTF-8 strings into byte-level BPE ids with
TensorFlow and tensorflow-text ops only, so it runs inside `tf.data`,
`tf.function` and an exported SavedModel. Its ids are exactly those of
Hugging Face `tokenizers` with a `BPE` model and a `ByteLevel` pre-tokenizer
(`encode(text, add_special_tokens=False)`), e.g. RoBERTa's or ModernBERT's
`tokenizer.json`.

What the families differ in is said by the file, not by the family: the
added tokens (RoBERTa's `<s>` ... `<mask>`, ModernBERT's `[CLS]` ...
`[MASK]`, each with its `lstrip`/`rstrip`) and the post-processor, which
says how a text and a pair are framed (`post_processor`: RoBERTa's
`<s> A </s></s> B </s>`, or a `TemplateProcessing` such as ModernBERT's
`[CLS] A [SEP] B [SEP]`, every token in segment 0). `bert_tf.text.packer_for`
packs as it says, and the special ids (`cls_id`, `sep_id`) are its tokens.

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
   RE2 has no lookahead, and a regex split is slow with Unicode classes, so
   the pattern is evaluated on code points instead (`_pretokenize`): each
   character gets its class (letter, number, whitespace, space, other) from
   the tables below, and a word starts where the class changes, except where
   a space joins the word after it, where a contraction takes the letters
   after an apostrophe, and before the last whitespace of a run followed by a
   non-space (where `\\s+(?!\\S)` stops).
4. Each pre-token's UTF-8 bytes are merged by BPE: repeatedly, the adjacent
   pair of lowest merge rank is merged (all its occurrences, left to right).
   Byte-level vocabularies hold the 256 bytes, so no byte is unknown.

The work happens on raw bytes: the vocabulary and merges are mapped back
through GPT-2's bytes-to-unicode table once, when the layer is built.

Speed: the distinct words of a batch are tokenized once. A word that is a
vocabulary token whose BPE gives itself is looked up in a hash table; the
others go through one `tf.while_loop` that merges all of them at once, one
merge rank a step, dropping finished words as it goes.

Limits: a word's merges take one loop step per merge rank used, so a very
long word of varied letters is slow (a 100,000-letter random word: about 9 s
on 2 cores; a 5 MB line of ordinary text: 0.2 s). Memory stays linear in the
input: a 1,000,000-letter word beside a thousand short rows peaks near 1 GB
(row ids come from `offsets.row_ids`, never from `value_rowids` or `tf.repeat`, which
build a `[rows, longest row]` mask), as Hugging Face's does (0.15 GB for the
word alone); no word is cut or refused. All occurrences of the
lowest-ranked pair in a word merge in one step, as GPT-2's `bpe()` does; this
equals Hugging Face's priority queue for merge tables where a merge's result
is only used by later merges, as every trained table is.

Shape legend: `N` strings, `S` segments, `W` words, `P` pieces.
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from bert_tf.text import kinds
from bert_tf.text.base import WHITESPACE_CLASS, Tokenizer, added_token_entries
from bert_tf.text.offsets import concat_rows, replace_invalid_utf8, row_ids

# Unicode White_Space (Rust `char::is_whitespace`, Oniguruma's `\s`): RE2's
# `\s` is ASCII only.

# === Character classes of the pre-tokenization pattern ===
# Hexadecimal code point ranges, "A-B" inclusive or a single "A": RE2's `\p{L}` and `\p{N}` (the
# pattern's classes; tests/text/byte_pair_test.py checks every code point against the reference's).

_LETTERS = """
41-5A 61-7A AA B5 BA C0-D6 D8-F6 F8-2C1 2C6-2D1 2E0-2E4 2EC 2EE 370-374 376-377 37A-37D 37F 386 388-38A 38C
38E-3A1 3A3-3F5 3F7-481 48A-52F 531-556 559 560-588 5D0-5EA 5EF-5F2 620-64A 66E-66F 671-6D3 6D5 6E5-6E6
6EE-6EF 6FA-6FC 6FF 710 712-72F 74D-7A5 7B1 7CA-7EA 7F4-7F5 7FA 800-815 81A 824 828 840-858 860-86A 870-887
889-88E 8A0-8C9 904-939 93D 950 958-961 971-980 985-98C 98F-990 993-9A8 9AA-9B0 9B2 9B6-9B9 9BD 9CE 9DC-9DD
9DF-9E1 9F0-9F1 9FC A05-A0A A0F-A10 A13-A28 A2A-A30 A32-A33 A35-A36 A38-A39 A59-A5C A5E A72-A74 A85-A8D
A8F-A91 A93-AA8 AAA-AB0 AB2-AB3 AB5-AB9 ABD AD0 AE0-AE1 AF9 B05-B0C B0F-B10 B13-B28 B2A-B30 B32-B33 B35-B39
B3D B5C-B5D B5F-B61 B71 B83 B85-B8A B8E-B90 B92-B95 B99-B9A B9C B9E-B9F BA3-BA4 BA8-BAA BAE-BB9 BD0 C05-C0C
C0E-C10 C12-C28 C2A-C39 C3D C58-C5A C5D C60-C61 C80 C85-C8C C8E-C90 C92-CA8 CAA-CB3 CB5-CB9 CBD CDD-CDE
CE0-CE1 CF1-CF2 D04-D0C D0E-D10 D12-D3A D3D D4E D54-D56 D5F-D61 D7A-D7F D85-D96 D9A-DB1 DB3-DBB DBD DC0-DC6
E01-E30 E32-E33 E40-E46 E81-E82 E84 E86-E8A E8C-EA3 EA5 EA7-EB0 EB2-EB3 EBD EC0-EC4 EC6 EDC-EDF F00 F40-F47
F49-F6C F88-F8C 1000-102A 103F 1050-1055 105A-105D 1061 1065-1066 106E-1070 1075-1081 108E 10A0-10C5 10C7 10CD
10D0-10FA 10FC-1248 124A-124D 1250-1256 1258 125A-125D 1260-1288 128A-128D 1290-12B0 12B2-12B5 12B8-12BE 12C0
12C2-12C5 12C8-12D6 12D8-1310 1312-1315 1318-135A 1380-138F 13A0-13F5 13F8-13FD 1401-166C 166F-167F 1681-169A
16A0-16EA 16F1-16F8 1700-1711 171F-1731 1740-1751 1760-176C 176E-1770 1780-17B3 17D7 17DC 1820-1878 1880-1884
1887-18A8 18AA 18B0-18F5 1900-191E 1950-196D 1970-1974 1980-19AB 19B0-19C9 1A00-1A16 1A20-1A54 1AA7 1B05-1B33
1B45-1B4C 1B83-1BA0 1BAE-1BAF 1BBA-1BE5 1C00-1C23 1C4D-1C4F 1C5A-1C7D 1C80-1C88 1C90-1CBA 1CBD-1CBF 1CE9-1CEC
1CEE-1CF3 1CF5-1CF6 1CFA 1D00-1DBF 1E00-1F15 1F18-1F1D 1F20-1F45 1F48-1F4D 1F50-1F57 1F59 1F5B 1F5D 1F5F-1F7D
1F80-1FB4 1FB6-1FBC 1FBE 1FC2-1FC4 1FC6-1FCC 1FD0-1FD3 1FD6-1FDB 1FE0-1FEC 1FF2-1FF4 1FF6-1FFC 2071 207F
2090-209C 2102 2107 210A-2113 2115 2119-211D 2124 2126 2128 212A-212D 212F-2139 213C-213F 2145-2149 214E
2183-2184 2C00-2CE4 2CEB-2CEE 2CF2-2CF3 2D00-2D25 2D27 2D2D 2D30-2D67 2D6F 2D80-2D96 2DA0-2DA6 2DA8-2DAE
2DB0-2DB6 2DB8-2DBE 2DC0-2DC6 2DC8-2DCE 2DD0-2DD6 2DD8-2DDE 2E2F 3005-3006 3031-3035 303B-303C 3041-3096
309D-309F 30A1-30FA 30FC-30FF 3105-312F 3131-318E 31A0-31BF 31F0-31FF 3400-4DBF 4E00-A48C A4D0-A4FD A500-A60C
A610-A61F A62A-A62B A640-A66E A67F-A69D A6A0-A6E5 A717-A71F A722-A788 A78B-A7CA A7D0-A7D1 A7D3 A7D5-A7D9
A7F2-A801 A803-A805 A807-A80A A80C-A822 A840-A873 A882-A8B3 A8F2-A8F7 A8FB A8FD-A8FE A90A-A925 A930-A946
A960-A97C A984-A9B2 A9CF A9E0-A9E4 A9E6-A9EF A9FA-A9FE AA00-AA28 AA40-AA42 AA44-AA4B AA60-AA76 AA7A AA7E-AAAF
AAB1 AAB5-AAB6 AAB9-AABD AAC0 AAC2 AADB-AADD AAE0-AAEA AAF2-AAF4 AB01-AB06 AB09-AB0E AB11-AB16 AB20-AB26
AB28-AB2E AB30-AB5A AB5C-AB69 AB70-ABE2 AC00-D7A3 D7B0-D7C6 D7CB-D7FB F900-FA6D FA70-FAD9 FB00-FB06 FB13-FB17
FB1D FB1F-FB28 FB2A-FB36 FB38-FB3C FB3E FB40-FB41 FB43-FB44 FB46-FBB1 FBD3-FD3D FD50-FD8F FD92-FDC7 FDF0-FDFB
FE70-FE74 FE76-FEFC FF21-FF3A FF41-FF5A FF66-FFBE FFC2-FFC7 FFCA-FFCF FFD2-FFD7 FFDA-FFDC 10000-1000B
1000D-10026 10028-1003A 1003C-1003D 1003F-1004D 10050-1005D 10080-100FA 10280-1029C 102A0-102D0 10300-1031F
1032D-10340 10342-10349 10350-10375 10380-1039D 103A0-103C3 103C8-103CF 10400-1049D 104B0-104D3 104D8-104FB
10500-10527 10530-10563 10570-1057A 1057C-1058A 1058C-10592 10594-10595 10597-105A1 105A3-105B1 105B3-105B9
105BB-105BC 10600-10736 10740-10755 10760-10767 10780-10785 10787-107B0 107B2-107BA 10800-10805 10808
1080A-10835 10837-10838 1083C 1083F-10855 10860-10876 10880-1089E 108E0-108F2 108F4-108F5 10900-10915
10920-10939 10980-109B7 109BE-109BF 10A00 10A10-10A13 10A15-10A17 10A19-10A35 10A60-10A7C 10A80-10A9C
10AC0-10AC7 10AC9-10AE4 10B00-10B35 10B40-10B55 10B60-10B72 10B80-10B91 10C00-10C48 10C80-10CB2 10CC0-10CF2
10D00-10D23 10E80-10EA9 10EB0-10EB1 10F00-10F1C 10F27 10F30-10F45 10F70-10F81 10FB0-10FC4 10FE0-10FF6
11003-11037 11071-11072 11075 11083-110AF 110D0-110E8 11103-11126 11144 11147 11150-11172 11176 11183-111B2
111C1-111C4 111DA 111DC 11200-11211 11213-1122B 1123F-11240 11280-11286 11288 1128A-1128D 1128F-1129D
1129F-112A8 112B0-112DE 11305-1130C 1130F-11310 11313-11328 1132A-11330 11332-11333 11335-11339 1133D 11350
1135D-11361 11400-11434 11447-1144A 1145F-11461 11480-114AF 114C4-114C5 114C7 11580-115AE 115D8-115DB
11600-1162F 11644 11680-116AA 116B8 11700-1171A 11740-11746 11800-1182B 118A0-118DF 118FF-11906 11909
1190C-11913 11915-11916 11918-1192F 1193F 11941 119A0-119A7 119AA-119D0 119E1 119E3 11A00 11A0B-11A32 11A3A
11A50 11A5C-11A89 11A9D 11AB0-11AF8 11C00-11C08 11C0A-11C2E 11C40 11C72-11C8F 11D00-11D06 11D08-11D09
11D0B-11D30 11D46 11D60-11D65 11D67-11D68 11D6A-11D89 11D98 11EE0-11EF2 11F02 11F04-11F10 11F12-11F33 11FB0
12000-12399 12480-12543 12F90-12FF0 13000-1342F 13441-13446 14400-14646 16800-16A38 16A40-16A5E 16A70-16ABE
16AD0-16AED 16B00-16B2F 16B40-16B43 16B63-16B77 16B7D-16B8F 16E40-16E7F 16F00-16F4A 16F50 16F93-16F9F
16FE0-16FE1 16FE3 17000-187F7 18800-18CD5 18D00-18D08 1AFF0-1AFF3 1AFF5-1AFFB 1AFFD-1AFFE 1B000-1B122 1B132
1B150-1B152 1B155 1B164-1B167 1B170-1B2FB 1BC00-1BC6A 1BC70-1BC7C 1BC80-1BC88 1BC90-1BC99 1D400-1D454
1D456-1D49C 1D49E-1D49F 1D4A2 1D4A5-1D4A6 1D4A9-1D4AC 1D4AE-1D4B9 1D4BB 1D4BD-1D4C3 1D4C5-1D505 1D507-1D50A
1D50D-1D514 1D516-1D51C 1D51E-1D539 1D53B-1D53E 1D540-1D544 1D546 1D54A-1D550 1D552-1D6A5 1D6A8-1D6C0
1D6C2-1D6DA 1D6DC-1D6FA 1D6FC-1D714 1D716-1D734 1D736-1D74E 1D750-1D76E 1D770-1D788 1D78A-1D7A8 1D7AA-1D7C2
1D7C4-1D7CB 1DF00-1DF1E 1DF25-1DF2A 1E030-1E06D 1E100-1E12C 1E137-1E13D 1E14E 1E290-1E2AD 1E2C0-1E2EB
1E4D0-1E4EB 1E7E0-1E7E6 1E7E8-1E7EB 1E7ED-1E7EE 1E7F0-1E7FE 1E800-1E8C4 1E900-1E943 1E94B 1EE00-1EE03
1EE05-1EE1F 1EE21-1EE22 1EE24 1EE27 1EE29-1EE32 1EE34-1EE37 1EE39 1EE3B 1EE42 1EE47 1EE49 1EE4B 1EE4D-1EE4F
1EE51-1EE52 1EE54 1EE57 1EE59 1EE5B 1EE5D 1EE5F 1EE61-1EE62 1EE64 1EE67-1EE6A 1EE6C-1EE72 1EE74-1EE77
1EE79-1EE7C 1EE7E 1EE80-1EE89 1EE8B-1EE9B 1EEA1-1EEA3 1EEA5-1EEA9 1EEAB-1EEBB 20000-2A6DF 2A700-2B739
2B740-2B81D 2B820-2CEA1 2CEB0-2EBE0 2F800-2FA1D 30000-3134A 31350-323AF
"""

_NUMBERS = """
30-39 B2-B3 B9 BC-BE 660-669 6F0-6F9 7C0-7C9 966-96F 9E6-9EF 9F4-9F9 A66-A6F AE6-AEF B66-B6F B72-B77 BE6-BF2
C66-C6F C78-C7E CE6-CEF D58-D5E D66-D78 DE6-DEF E50-E59 ED0-ED9 F20-F33 1040-1049 1090-1099 1369-137C
16EE-16F0 17E0-17E9 17F0-17F9 1810-1819 1946-194F 19D0-19DA 1A80-1A89 1A90-1A99 1B50-1B59 1BB0-1BB9 1C40-1C49
1C50-1C59 2070 2074-2079 2080-2089 2150-2182 2185-2189 2460-249B 24EA-24FF 2776-2793 2CFD 3007 3021-3029
3038-303A 3192-3195 3220-3229 3248-324F 3251-325F 3280-3289 32B1-32BF A620-A629 A6E6-A6EF A830-A835 A8D0-A8D9
A900-A909 A9D0-A9D9 A9F0-A9F9 AA50-AA59 ABF0-ABF9 FF10-FF19 10107-10133 10140-10178 1018A-1018B 102E1-102FB
10320-10323 10341 1034A 103D1-103D5 104A0-104A9 10858-1085F 10879-1087F 108A7-108AF 108FB-108FF 10916-1091B
109BC-109BD 109C0-109CF 109D2-109FF 10A40-10A48 10A7D-10A7E 10A9D-10A9F 10AEB-10AEF 10B58-10B5F 10B78-10B7F
10BA9-10BAF 10CFA-10CFF 10D30-10D39 10E60-10E7E 10F1D-10F26 10F51-10F54 10FC5-10FCB 11052-1106F 110F0-110F9
11136-1113F 111D0-111D9 111E1-111F4 112F0-112F9 11450-11459 114D0-114D9 11650-11659 116C0-116C9 11730-1173B
118E0-118F2 11950-11959 11C50-11C6C 11D50-11D59 11DA0-11DA9 11F50-11F59 11FC0-11FD4 12400-1246E 16A60-16A69
16AC0-16AC9 16B50-16B59 16B5B-16B61 16E80-16E96 1D2C0-1D2D3 1D2E0-1D2F3 1D360-1D378 1D7CE-1D7FF 1E140-1E149
1E2F0-1E2F9 1E4F0-1E4F9 1E8C7-1E8CF 1E950-1E959 1EC71-1ECAB 1ECAD-1ECAF 1ECB1-1ECB4 1ED01-1ED2D 1ED2F-1ED3D
1F100-1F10C 1FBF0-1FBF9
"""

# Unicode White_Space (Oniguruma's `\s`, Rust `char::is_whitespace`); U+0020 is told apart.
_WHITESPACE = "9-D 85 A0 1680 2000-200A 2028-2029 202F 205F 3000"

# Classes: other (not a letter, number or whitespace), letter, number, whitespace, and the space U+0020.
_OTHER, _LETTER, _NUMBER, _SPACE_LIKE, _SPACE = range(5)

# RoBERTa's special tokens, in its vocabulary's order.
ROBERTA_SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
# The pair layout of RoBERTa's `RobertaProcessing` (`<s> A </s></s> B </s>`, one segment): what vocab.json and
# merges.txt alone are read with, and a `tokenizer.json` without a post-processor.
ROBERTA_TEMPLATE = {"cls": "<s>", "sep": "</s>", "separators": 2, "pair_type_id": 0}
# Roles the post-processor does not name, by the names families give them: the first that is a special added token
# wins, then the first the vocabulary has.
_ROLE_NAMES = {"pad": ("<pad>", "[PAD]"), "unk": ("<unk>", "[UNK]"), "mask": ("<mask>", "[MASK]")}

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


def _parse_ranges(text):
    for item in text.split():
        first, _, last = item.partition("-")
        yield int(first, 16), int(last or first, 16)


def _class_ranges():
    """(starts, classes): the first code point of each run of one class, and the class."""
    classes = np.full([0x110000], _OTHER, np.int32)
    for table, value in ((_LETTERS, _LETTER), (_NUMBERS, _NUMBER), (_WHITESPACE, _SPACE_LIKE)):
        for first, last in _parse_ranges(table):
            classes[first : last + 1] = value
    classes[0x20] = _SPACE
    starts = np.concatenate([[0], np.flatnonzero(np.diff(classes)) + 1]).astype(np.int32)
    return starts, classes[starts]


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

    def id_of(entry):
        if entry["content"] not in vocabulary:
            raise ValueError(
                f"Special token {entry['content']!r} is not in the vocabulary. Received: special_tokens entry {entry!r}"
            )
        return vocabulary[entry["content"]]

    return added_token_entries(special_tokens, id_of)


def pair_template(post_processor):
    """The pair layout a `tokenizer.json` post-processor says: `{cls, sep, separators, pair_type_id}`.

    `cls` and `sep` are the tokens framing a text (`cls` A `sep`); a pair is `cls` A `sep` x `separators` B
    `sep`, B and its `sep` in segment `pair_type_id`. Read from `RobertaProcessing` (2 separators, segment 0),
    `BertProcessing` (1, segment 1) or a `TemplateProcessing` of that shape (ModernBERT: `[CLS] $A [SEP] $B
    [SEP]`, all in segment 0), alone or in a `Sequence` (a `ByteLevel` step beside it only trims offsets).
    None (no post-processor, or a `Sequence` without such a step): RoBERTa's (`ROBERTA_TEMPLATE`).

    Raises:
        ValueError: naming the post-processor, for one `BertPacker` cannot pack as it says (another type, a
            template of another shape, a special token of several ids).
    """
    if post_processor is None:
        return dict(ROBERTA_TEMPLATE)
    if not isinstance(post_processor, dict):
        raise ValueError(
            f"`post_processor` must be a tokenizer.json post_processor (a dict). Received: {post_processor!r:.300}"
        )
    shown = json.dumps(post_processor)[:300]
    kind = post_processor.get("type")
    if kind == "Sequence":
        steps = [p for p in post_processor.get("processors") or [] if isinstance(p, dict)]
        framing = [p for p in steps if p.get("type") != "ByteLevel"]
        if len(framing) > 1 or len(steps) != len(post_processor.get("processors") or []):
            raise ValueError(f"post_processor: a Sequence of several framing steps is not read. Received: {shown}")
        return pair_template(framing[0] if framing else None)
    if kind == "ByteLevel":
        return dict(ROBERTA_TEMPLATE)
    if kind in ("RobertaProcessing", "BertProcessing"):
        try:
            (cls, cls_id), (sep, sep_id) = post_processor["cls"], post_processor["sep"]
        except (KeyError, ValueError, TypeError):
            raise ValueError(f"post_processor: {kind} needs `cls` and `sep` [token, id]. Received: {shown}") from None
        ids = {"cls_id": cls_id, "sep_id": sep_id}
        if kind == "RobertaProcessing":
            return {"cls": cls, "sep": sep, "separators": 2, "pair_type_id": 0, **ids}
        return {"cls": cls, "sep": sep, "separators": 1, "pair_type_id": 1, **ids}
    if kind != "TemplateProcessing":
        raise ValueError(
            "post_processor: bert_tf packs pairs as RobertaProcessing, BertProcessing or a TemplateProcessing "
            f"`CLS $A SEP (SEP) $B SEP` says. Received: type={kind!r} in {shown}"
        )
    return _template_processing(post_processor, shown)


def _template_processing(post_processor, shown):
    """`pair_template` of a `TemplateProcessing`: `single` CLS $A SEP, `pair` CLS $A SEP (SEP) $B SEP."""

    def pieces(name):
        out = []
        for piece in post_processor.get(name) or []:
            what, spec = next(iter(piece.items())) if isinstance(piece, dict) and len(piece) == 1 else (None, None)
            if what not in ("SpecialToken", "Sequence") or not isinstance(spec, dict):
                raise ValueError(f"post_processor: cannot read the `{name}` template piece {piece!r}: {shown}")
            out.append((what, spec.get("id"), spec.get("type_id", 0)))
        return out

    single, pair = pieces("single"), pieces("pair")
    specials = post_processor.get("special_tokens") or {}

    def token(name):
        """(token, id) of a template's special token."""
        entry = specials.get(name) or {}
        tokens, ids = entry.get("tokens") or [], entry.get("ids") or []
        if len(tokens) != 1 or len(ids) != 1:
            raise ValueError(
                f"post_processor: special token {name!r} must stand for one token of one id. Received: {shown}"
            )
        return tokens[0], ids[0]

    if len(single) == 3 and 5 <= len(pair) <= 6:
        cls, sep = single[0][1], single[2][1]
        separators, pair_type_id = len(pair) - 4, pair[-1][2]
        expected = (
            [("SpecialToken", cls, 0), ("Sequence", "A", 0)]
            + [("SpecialToken", sep, 0)] * separators
            + [("Sequence", "B", pair_type_id), ("SpecialToken", sep, pair_type_id)]
        )
        single_ok = single == expected[:2] + [("SpecialToken", sep, 0)]
        if single_ok and pair == expected and pair_type_id in (0, 1) and not isinstance(pair_type_id, bool):
            (cls, cls_id), (sep, sep_id) = token(cls), token(sep)
            return {
                "cls": cls,
                "sep": sep,
                "separators": separators,
                "pair_type_id": pair_type_id,
                "cls_id": cls_id,
                "sep_id": sep_id,
            }
    raise ValueError(
        "post_processor: bert_tf packs a TemplateProcessing of the shape single `CLS:0 $A:0 SEP:0`, pair "
        f"`CLS:0 $A:0 SEP:0 (SEP:0) $B:t SEP:t` (t 0 or 1). Received: {shown}"
    )


def _role_tokens(template, specials, vocabulary):
    """`special_token_roles` of a tokenizer: `cls` and `sep` the post-processor's tokens (which must be in the
    vocabulary with the ids it gives them), the others by `_ROLE_NAMES`, special added tokens first. (RoBERTa's
    default names no ids: a vocabulary without `<s>` has no `cls_id`, as before.)"""
    for role in ("cls", "sep"):
        token, token_id = template[role], template.get(f"{role}_id")
        if token_id is not None and vocabulary.get(token) != token_id:
            raise ValueError(
                f"The post-processor's {role} token {token!r} has id {token_id}, the vocabulary's is "
                f"{vocabulary.get(token)}. Received: post_processor {role}={token!r}"
            )
    added = {entry["content"] for entry in specials if entry["special"]}
    roles = {"cls": (template["cls"],), "sep": (template["sep"],)}
    for role, names in _ROLE_NAMES.items():
        roles[role] = tuple([n for n in names if n in added] + [n for n in names if n not in added])
    return roles


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
class BytePairTokenizer(Tokenizer):
    """Byte-level BPE tokenizer layer (GPT-2, RoBERTa, ModernBERT) with Hugging Face's ids.

    Runs entirely in-graph (tf.data, tf.function, SavedModel). Ids equal those
    of Hugging Face `tokenizers` with the same `BPE` model and `ByteLevel`
    pre-tokenizer, `encode_batch(texts, add_special_tokens=False)`.

    Invalid UTF-8 bytes are replaced by U+FFFD: the ids are those the
    reference gives for `line.decode("utf-8", errors="replace")`.

    Offsets (`tokenize_with_offsets`): a piece spans the text it came from,
    without the spaces at its ends (Hugging Face's `trim_offsets`: "Ġthe"
    spans "the"; a piece of spaces alone is empty, at its end). A piece
    holding part of a character's bytes spans those bytes ("byte") or the
    whole character ("char", as Hugging Face). A verbatim added token spans
    its text (not the whitespace `lstrip`/`rstrip` took). With
    `add_prefix_space`, the added space is empty, at the segment's start.

    `detokenize` joins each id's bytes (GPT-2's bytes-to-unicode table undone;
    added tokens give their text) and decodes them as UTF-8, invalid bytes (a
    character cut between pieces) as U+FFFD, as Hugging Face's `ByteLevel`
    decoder does.

    Special ids: `cls_id` (and `bos_id`) and `sep_id` (and `eos_id`) are the
    tokens the post-processor frames a text with (RoBERTa's `<s>` and `</s>`,
    ModernBERT's `[CLS]` and `[SEP]`); `pad_id`, `unk_id`, `mask_id` the
    first of `<pad>`/`[PAD]`, `<unk>`/`[UNK]`, `<mask>`/`[MASK]` that is a
    special added token, else the first in the vocabulary.

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
        post_processor: how a text and a pair are framed: a `tokenizer.json`
            `post_processor` (`RobertaProcessing`, `BertProcessing`, or a
            `TemplateProcessing` `CLS $A SEP (SEP) $B SEP`; `pair_template`
            reads it), kept as given in `get_config()`. `None` (default):
            RoBERTa's `<s> A </s></s> B </s>`. `packing`, `pair_type_id`,
            `cls_id` and `sep_id` follow it. One `bert_tf.text.BertPacker`
            cannot follow (another shape) leaves tokenizing as it is, and
            `packer_for` refuses the tokenizer (`pair_layout_error` says why).
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:

    >>> tokenizer = BytePairTokenizer("vocab.json", "merges.txt")
    >>> ids = tokenizer(tf.constant(["Hello world!"]))  # ragged [1, (P)]
    >>> tokenizer = BytePairTokenizer.from_tokenizer_json("tokenizer.json")
    """

    # Without a post-processor (vocab.json and merges.txt): RoBERTa's roles. An instance's follow its
    # `post_processor` and added tokens (`_role_tokens`).
    special_token_roles = {"pad": ("<pad>",), "unk": ("<unk>",), "cls": ("<s>",), "sep": ("</s>",), "mask": ("<mask>",)}
    word_start_mark = "\u0120"  # "Ġ", the byte-level space

    def __init__(
        self,
        vocabulary,
        merges,
        add_prefix_space=False,
        special_tokens=None,
        split_special_tokens=False,
        ignore_merges=False,
        post_processor=None,
        **kwargs,
    ):
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
        self.post_processor = post_processor
        # A post-processor BertPacker cannot follow (Llama 3's `<|begin_of_text|> $A`) leaves tokenizing as it is;
        # `packer_for` refuses to pack with it, naming it.
        try:
            template, self.pair_layout_error = pair_template(post_processor), None
        except ValueError as e:
            template, self.pair_layout_error = dict(ROBERTA_TEMPLATE), str(e)
        vocab = _load_vocabulary(vocabulary)
        pairs = _load_merges(merges)
        specials = _special_entries(special_tokens, vocab)
        self._build_tables(vocab, pairs, specials)
        self.special_token_roles = _role_tokens(template, specials, vocab)
        self._separators, self._pair_type_id = template["separators"], template["pair_type_id"]

    @classmethod
    def from_tokenizer_json(cls, path, **kwargs):
        """A tokenizer from a Hugging Face `tokenizer.json` with a byte-level `BPE` model.

        Reads `model.vocab`, `model.merges` (pairs or "a b" strings),
        `model.ignore_merges`, the `ByteLevel` pre-tokenizer's
        `add_prefix_space`, `added_tokens` (kept whole in the text, with
        their `lstrip`/`rstrip`) and `post_processor` (how texts and pairs
        are framed: RoBERTa's, ModernBERT's template). The vocabulary and
        merges are held as data in `get_config()`.

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
        kwargs.setdefault("post_processor", data.get("post_processor"))
        tokenizer = cls(vocab, [list(m) if not isinstance(m, str) else m for m in model["merges"]], **kwargs)
        if tokenizer.pair_layout_error:
            tokenizer.pair_layout_error = f"{path}: {tokenizer.pair_layout_error}"
        return tokenizer

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
        ranks = {}  # a repeated merge keeps its last rank, as in Hugging Face
        merged = {}
        for rank, (left, right) in enumerate(pairs):
            missing = [t for t in (left, right, left + right) if t not in vocab]
            if missing:
                raise ValueError(f"Merge {rank} ({left!r} {right!r}) has tokens not in the vocabulary: {missing}")
            key = (vocab[left], vocab[right])
            ranks[key] = rank
            merged[key] = vocab[left + right]
        keys = [left * self._vocab_size + right for left, right in ranks]
        values = [rank << 32 | merged[key] for key, rank in ranks.items()]
        class_starts, class_of_range = _class_ranges()
        self._class_starts = tf.constant(class_starts)
        self._class_of_range = tf.constant(class_of_range)
        # The Basic Multilingual Plane as one table (64 KB): one gather for most text.
        bmp = class_of_range[np.searchsorted(class_starts, np.arange(0x10000), side="right") - 1]
        self._bmp_classes = tf.constant(bmp.astype(np.int8))
        byte_ids = np.array([by_bytes.get(bytes([b]), -1) for b in range(256)], np.int32)
        self._byte_ids = tf.constant(byte_ids)
        self._missing_bytes = bool((byte_ids < 0).any())  # not a byte-level vocabulary: those bytes are dropped
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
        self._set_added_tokens(specials, self.split_special_tokens)

    @property
    def bos_id(self):
        return self.cls_id

    @property
    def eos_id(self):
        return self.sep_id

    # === Tokenization ===

    def _pretokenize(self, segments):
        """GPT-2's pre-tokenization pattern on text segments, on code points.

        Args:
            segments: valid UTF-8 tf.string `[S]`.

        Returns:
            `(words, starts)`: ragged `[S, (W)]` tf.string and their int64 byte starts in the segment.
        """
        code_points, offsets = tf.strings.unicode_decode_with_offsets(segments, "UTF-8")  # [S, (C)]
        c = code_points.flat_values
        row = row_ids(code_points.row_splits)
        kind = tf.cast(tf.gather(self._bmp_classes, tf.minimum(c, 0xFFFF)), tf.int32)
        beyond = c > 0xFFFF
        kind = tf.cond(
            tf.reduce_any(beyond),
            lambda: tf.where(
                beyond, tf.gather(self._class_of_range, tf.searchsorted(self._class_starts, c, side="right") - 1), kind
            ),
            lambda: kind,
        )
        first = tf.concat([[True], tf.not_equal(row[1:], row[:-1])], 0)  # the first character of a segment
        last = tf.concat([tf.not_equal(row[1:], row[:-1]), [True]], 0)
        is_ws = kind >= _SPACE_LIKE
        run_kind = tf.where(is_ws, _SPACE_LIKE, kind)  # runs: letters, numbers, others, whitespace

        def before(x, fill, steps=1):  # x[i - steps]
            return tf.concat([tf.fill([tf.minimum(steps, tf.size(x))], fill), x[:-steps]], 0)

        def after(x, fill, steps=1):  # x[i + steps]
            return tf.concat([x[steps:], tf.fill([tf.minimum(steps, tf.size(x))], fill)], 0)

        run_start = tf.logical_or(first, tf.not_equal(run_kind, before(run_kind, -1)))
        after_space = tf.logical_and(tf.logical_not(first), tf.equal(before(kind, -1), _SPACE))
        # ` ?X+`: a space joins the letters, numbers or others after it.
        joined = tf.logical_and(tf.logical_not(is_ws), after_space)
        # `\s+(?!\S)`: a run of 2+ whitespace followed by a non-space ends before its last character.
        next_ws = tf.logical_and(tf.logical_not(last), after(is_ws, False))
        previous_ws = tf.logical_and(tf.logical_not(first), before(is_ws, False))
        split_ws = tf.logical_and(
            tf.logical_and(is_ws, previous_ws), tf.logical_and(tf.logical_not(last), tf.logical_not(next_ws))
        )
        # Contractions 's 't 're 've 'm 'll 'd, tried first where a word starts with an apostrophe.
        next1 = tf.where(last, -1, after(c, -1))
        next2 = tf.where(tf.logical_or(last, after(last, True)), -1, after(c, -1, 2))
        apostrophe = tf.logical_and(tf.equal(c, ord("'")), tf.logical_and(run_start, tf.logical_not(after_space)))
        two = tf.reduce_any(tf.equal(next1[:, None], tf.constant([ord(x) for x in "stmd"])), axis=1)
        three = tf.logical_or(
            tf.logical_and(
                tf.logical_or(tf.equal(next1, ord("r")), tf.equal(next1, ord("v"))), tf.equal(next2, ord("e"))
            ),
            tf.logical_and(tf.equal(next1, ord("l")), tf.equal(next2, ord("l"))),
        )
        two = tf.logical_and(apostrophe, two)
        three = tf.logical_and(apostrophe, three)
        contraction = tf.logical_or(two, three)
        taken = before(contraction, False)  # the letter after the apostrophe: in the contraction
        # The letters after the contraction start a word.
        resumes = tf.logical_or(before(two, False, 2), before(three, False, 3))
        starts = tf.logical_or(
            tf.logical_and(run_start, tf.logical_not(tf.logical_or(joined, taken))),
            tf.logical_or(tf.logical_or(split_ws, resumes), first),
        )
        word_of_char = tf.cumsum(tf.cast(starts, tf.int64)) - 1
        word_starts = tf.where(starts)[:, 0]
        num_words = tf.size(word_starts, out_type=tf.int64)
        words = tf.strings.unicode_encode(
            tf.RaggedTensor.from_value_rowids(c, word_of_char, nrows=num_words, validate=False), "UTF-8"
        )
        word_rows = tf.gather(row, word_starts)
        nrows = tf.size(segments, out_type=tf.int64)
        return (
            tf.RaggedTensor.from_value_rowids(words, word_rows, nrows=nrows, validate=False),
            tf.RaggedTensor.from_value_rowids(
                tf.gather(offsets.flat_values, word_starts), word_rows, nrows=nrows, validate=False
            ),
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
            rows = row_ids(tf.concat([[0], tf.cumsum(lengths)], 0))
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
        return tf.ragged.boolean_mask(ids, ids >= 0) if self._missing_bytes else ids

    def _substrings(self, strings, rows, starts, like):
        """Substrings of rows read from their bytes (for rows holding NUL, which regex ops stop at).

        Args:
            strings: tf.string `[N]`.
            rows, starts: int64 `[S]`: each substring's row and byte start.
            like: tf.string `[S]`, strings of the substrings' lengths.

        Returns:
            tf.string `[S]`.
        """
        raw = tf.io.decode_raw(tf.strings.reduce_join(strings), tf.uint8)
        row_base = tf.cumsum(tf.cast(tf.strings.length(strings), tf.int64), exclusive=True)
        begin = tf.gather(row_base, rows) + starts
        indices = tf.ragged.range(begin, begin + tf.cast(tf.strings.length(like), tf.int64))
        byte_strings = tf.constant([bytes([b]) for b in range(256)])
        return tf.strings.reduce_join(tf.gather(byte_strings, tf.cast(tf.gather(raw, indices), tf.int32)), axis=1)

    def _tokenize(self, strings, with_offsets):
        valid = replace_invalid_utf8(strings)
        # tensorflow-text's regex ops stop at NUL: they see U+0001 (the same class, the same length) instead,
        # and the words are then read from the bytes themselves.
        has_nul = tf.reduce_any(tf.strings.regex_full_match(valid, "(?s).*\x00.*"))
        searchable = tf.cond(has_nul, lambda: tf.strings.regex_replace(valid, "\x00", "\x01"), lambda: valid)
        segments, seg_starts, special = self._segments(searchable)  # [N, (S)]
        segment_text = tf.cond(
            has_nul,
            lambda: self._substrings(valid, row_ids(segments.row_splits), seg_starts.flat_values, segments.flat_values),
            lambda: segments.flat_values,
        )
        is_special = special.flat_values >= 0  # [S]
        text = tf.where(is_special, "", segment_text)
        prefixed = tf.zeros_like(is_special)
        if self.add_prefix_space:
            prefixed = tf.logical_and(
                tf.logical_not(tf.strings.regex_full_match(text, "(?s)(?: .*)?")), tf.strings.length(text) > 0
            )
            text = tf.where(prefixed, tf.strings.join([" ", text]), text)
        words, word_starts = self._pretokenize(text)  # [S, (W)]
        word_segments = row_ids(words.row_splits)  # [W']
        # Each word's start in its segment (-1: the prefix space).
        word_in_segment = word_starts.flat_values - tf.gather(tf.cast(prefixed, tf.int64), word_segments)
        flat_words = words.flat_values
        ids = self._bpe(flat_words)  # [W', (P)]
        seg_ids = words.with_flat_values(ids).merge_dims(1, 2)  # [S, (P)]
        special_ids = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(special.flat_values, is_special), tf.cast(is_special, tf.int64), validate=False
        )
        seg_ids = concat_rows(seg_ids, special_ids)  # specials have no text pieces
        out_ids = segments.with_flat_values(seg_ids).merge_dims(1, 2)  # [N, (P)]
        if not with_offsets:
            return out_ids
        # Byte spans of pieces in their segment, then in the valid row.
        lengths = tf.gather(self._id_lengths, ids.values)
        piece_words = row_ids(ids.row_splits)  # [P']
        word_lengths = tf.math.unsorted_segment_sum(lengths, piece_words, ids.nrows())
        word_base = tf.cumsum(word_lengths, exclusive=True)
        local_ends = tf.cumsum(lengths) - tf.gather(word_base, piece_words)
        local_starts = local_ends - lengths
        base = tf.gather(word_in_segment, piece_words)
        starts = base + local_starts
        ends = base + local_ends
        # Hugging Face's trim_offsets: spaces at either end of a piece are not its text.
        starts = tf.minimum(starts + tf.gather(self._id_leading_spaces, ids.values), ends)
        ends = tf.maximum(ends - tf.gather(self._id_trailing_spaces, ids.values), starts)
        starts = tf.maximum(starts, 0)
        ends = tf.maximum(ends, 0)
        # Segment coordinates -> row, specials spanning their segment.
        pieces_rows = tf.gather(word_segments, piece_words)
        seg_base = tf.gather(seg_starts.flat_values, pieces_rows)

        def to_segments(values):
            return tf.RaggedTensor.from_value_rowids(
                values + seg_base, pieces_rows, nrows=tf.size(is_special, out_type=tf.int64)
            )

        # An added token spans its text, without the whitespace lstrip/rstrip took (trim_offsets).
        special_text = tf.boolean_mask(segments.flat_values, is_special)
        special_lengths = tf.cast(tf.strings.length(special_text), tf.int64)
        leading = special_lengths - tf.cast(
            tf.strings.length(tf.strings.regex_replace(special_text, f"^{WHITESPACE_CLASS}+", "")), tf.int64
        )
        trailing = special_lengths - tf.cast(
            tf.strings.length(tf.strings.regex_replace(special_text, f"{WHITESPACE_CLASS}+$", "")), tf.int64
        )
        special_starts = tf.boolean_mask(seg_starts.flat_values, is_special) + leading
        special_ends = special_starts - leading + special_lengths - trailing
        out = []
        for values, special_values in ((starts, special_starts), (ends, special_ends)):
            per_segment = concat_rows(to_segments(values), special_ids.with_values(special_values))
            out.append(segments.with_flat_values(per_segment).merge_dims(1, 2))
        out_starts, out_ends = out
        return out_ids, out_starts, out_ends

    def _detokenize(self, ids):
        pieces = tf.ragged.map_flat_values(self._id_to_bytes.lookup, tf.cast(ids, tf.int64))
        text = tf.strings.reduce_join(pieces, axis=-1)
        return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)

    # === Config ===

    def get_config(self):
        config = super().get_config()
        if not isinstance(self.merges, str):
            config["merges"] = [" ".join(p) if not isinstance(p, str) else p for p in self.merges]
        return config


# === The kind ===


def _build(files, settings, read_options, **kwargs):
    """A `BytePairTokenizer` from `vocab.json` + `merges.txt` and `bert_tf.json`'s `add_prefix_space`."""
    return BytePairTokenizer(
        files["vocab"], files["merges"], add_prefix_space=settings.get("add_prefix_space", False), **kwargs
    )


def _recorded_settings(data, tokenizer_fn):
    """`add_prefix_space` of a `tokenizer.json`'s ByteLevel pre-tokenizer (the legacy files read as it says)."""
    if data is None:
        return {}
    pre = data.get("pre_tokenizer") or {}
    pres = pre.get("pretokenizers", [pre]) if pre else []
    return {"add_prefix_space": any(p.get("type") == "ByteLevel" and p.get("add_prefix_space") for p in pres)}


def legacy_files_say_it(data):
    """Whether `vocab.json` + `merges.txt` read (as RoBERTa's) into the tokenizer of a byte-level BPE
    `tokenizer.json`'s `data`: its post-processor frames texts as RoBERTa's `<s> A </s></s> B </s>`."""
    try:
        template = pair_template(data.get("post_processor"))
    except ValueError:
        return False
    return all(template[key] == value for key, value in ROBERTA_TEMPLATE.items())


def _write_files(directory, files, data, output, tokenizer_fn):
    """`vocab.json` + `merges.txt` copied, or made from `tokenizer.json` (copied too) where they read as it does;
    a `tokenizer.json` that frames texts otherwise (ModernBERT's `[CLS] A [SEP] B [SEP]`) goes alone, as its
    checkpoint ships it: the legacy files would read as RoBERTa's `<s>`/`</s>` tokenizer."""

    def from_json(output):
        if not legacy_files_say_it(data):
            kinds.tokens_by_id(data, files["json"])  # the same check as for the files written
            return []
        with open(os.path.join(output, BPE_VOCAB_FILE), "w", encoding="utf-8") as f:
            json.dump(
                {token: i for i, token in enumerate(kinds.tokens_by_id(data, files["json"]))}, f, ensure_ascii=False
            )
        with open(os.path.join(output, MERGES_FILE), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")
            for merge in data["model"].get("merges", []):
                f.write((merge if isinstance(merge, str) else " ".join(merge)) + "\n")
        return [BPE_VOCAB_FILE, MERGES_FILE]

    return kinds.write_legacy_or_json(files, output, from_json)


BPE_VOCAB_FILE = "vocab.json"
MERGES_FILE = "merges.txt"
BYTE_PAIR = kinds.register(
    kinds.TokenizerKind(
        name="bpe",
        layer=BytePairTokenizer,
        json_model="BPE",
        files=({"vocab": BPE_VOCAB_FILE, "merges": MERGES_FILE},),
        described="byte-level BPE",
        families="RoBERTa, ModernBERT",
        precedence=1,
        build=_build,
        recorded_settings=_recorded_settings,
        write_files=_write_files,
    )
)
