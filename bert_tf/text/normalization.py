"""Reference BERT normalization and word splitting, in-graph.

The text half of `BertTokenizer` before WordPiece, in the reference's order
(Hugging Face `tokenizers.normalizers.BertNormalizer` with `clean_text=True`,
`handle_chinese_chars=True`, then `BertPreTokenizer`; google-research/bert
`BasicTokenizer`):

1. Clean (`normalize`): drop NUL, U+FFFD and control/format/private-use
   characters (`Cc`, `Cf`, `Co`, `Cs`), except tab, newline and carriage
   return.
2. Strip accents (default: when lowercasing): NFD, then drop `Mn` characters.
3. Lowercase per character (no final-sigma context: "Σ" becomes "σ").
4. Split (`split_words`) on whitespace; isolate punctuation (ASCII symbols and
   Unicode `P*`) and CJK ideographs as one-character words.

The character classes below are those of the reference, not of the newest
Unicode: the reference's category tables (Rust crate `unicode_categories`)
predate Unicode 10, while RE2 and ICU in TensorFlow are newer, so `\\p{Mn}` or
`\\p{P}` would disagree on a few hundred recently assigned characters. The
tables were measured against the reference on every code point, and
`tests/text/parity_test.py` re-checks them on every code point. Where ICU's
case mapping or NFD (used for speed) disagree with the reference on a
character, a per-character fix-up runs, only on batches that contain one.

`PLAIN_ASCII_PATTERN`, `FAST_PATH_PATTERN`, `UNCHANGED_CASED_PATTERN`, `FOLDING_PATTERN`,
`FOLDING_KEPT_PATTERN` and `VALID_UTF8_PATTERN` are the RE2 patterns the tokenizer routes rows with;
`normalize_fast_path` is `normalize` in fewer passes for the rows of
`FAST_PATH_PATTERN` (almost all real text), whose words tensorflow-text's own
BERT pretokenization then splits as the reference does, and
`normalize_uncased_fast_path` its uncased form in one pass (tensorflow-text's
`FastBertNormalizer`) for the rows of `FOLDING_PATTERN`. `FastPathLengths` holds the bytes each code point
becomes under `normalize_fast_path`, which locate normalized text in the
original (`bert_tf.text.offsets`).
"""

import functools

import numpy as np
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

# Characters tensorflow-text's own BERT pretokenization (ICU's newer Unicode, used by
# `FastWordpieceTokenizer(no_pretokenization=False)`) splits differently from the reference:
# punctuation it isolates and the reference keeps in words (Unicode 10+ additions, CJK Extension
# E's first 256 code points) and U+166D, U+111C9, which the reference isolates and it does not.
# Measured on every code point, as is that no other character normalizes to one of them;
# tests/text/parity_test.py runs every other code point through the fast path against the reference.
_SPLIT_DIFFERENCES = """
61D 9FD A76 C77 C84 166D 1B4E-1B4F 1B7D-1B7F 2E43-2E4F 2E52-2E5D 10D6E 10EAD 10F55-10F59
10F86-10F89 111C9 113D4-113D5 113D7-113D8 1144B-1144F 1145A-1145B 1145D 11660-1166C 116B9
1183B 11944-11946 119E2 11A3F-11A46 11A9A-11A9C 11A9E-11AA2 11B00-11B09 11BE1 11C41-11C45
11C70-11C71 11EF7-11EF8 11F43-11F4F 11FFF 12FF1-12FF2 16D6D-16D6F 16E97-16E9A 16FE2 1E5FF
1E95E-1E95F 2B820-2B91F
"""

# Characters tensorflow-text's `FastBertNormalizer` (lower_case_nfd_strip_accents: ICU case folding
# and NFKD, one table look-up a character) normalizes otherwise than the reference's lowercasing, NFD
# and accent stripping, among those the fast path takes: compatibility forms, case folds (final sigma,
# sharp s), controls it turns into spaces, private-use and unassigned code points, and characters that
# keep a combining mark the reference's NFD would reorder. Tab, newline and carriage return, which it
# turns into spaces, split words alike. Measured on every code point (tests/text/normalization_test.py).
_FOLDING_DIFFERENCES = """
1-8 B-C E-1F 7F-A0 A8 AA AF B2-B5 B8-BA BC-BE DF 132-133 13F-140 149 17F 1C4-1CC 1F1-1F3 2B0-2B8
2D8-2DD 2E0-2E4 345 37A 384-385 3C2 3D0-3D6 3F0-3F2 3F5 3F9 587 600-605 675-678 6DD 70F 7FD 890-891
897-89F 8CA-8E2 9FE AFA-AFF B55 C04 C3C D00 D3B-D3C D81 E33 EB3 EBA ECE EDC-EDD F0C 10FC 115F-1160
13A0-13F5 13F8-13FD 1715 1734 180F 1885-1886 1ABF-1ACE 1B44 1BAA 1BF2-1BF3 1C80-1C88 1D2C-1D2E
1D30-1D3A 1D3C-1D4D 1D4F-1D6A 1D78 1D9B-1DBF 1DF6-1DFB 1E9A-1E9B 1E9E 1F80-1FAF 1FB2-1FB4 1FB7
1FBC-1FBD 1FBF-1FC4 1FC7 1FCC-1FCF 1FDD-1FDF 1FED-1FEE 1FF2-1FF4 1FF7 1FFC-1FFE 2000-200A 2011 2017
2024-2026 202F 2033-2034 2036-2037 203C 203E 2047-2049 2057 205F 2065 2070-2071 2074-208E 2090-209C
20A8 2100-2103 2105-2107 2109-2113 2115-2116 2119-211D 2120-2122 2124 2128 212C-212D 212F-2131
2133-2139 213B-2140 2145-2149 2150-217F 2189 222C-222D 222F-2230 2460-24EA 2A0C 2A74-2A76 2C7C-2C7D
2D6F 2E9F 2EF3 2F00-2FD5 3000 302E-302F 3036 3038-303A 309B-309C 309F 30FF 3131-318E 3192-319F
3200-321E 3220-3247 3250-327E 3280-33FF A69C-A69D A770 A7F2-A7F4 A7F8-A7F9 A82C A8C5 A8FF A953 A9BD
A9C0 AB5C-AB5F AB69 AB70-ABBF E000-F8FF FB00-FB06 FB13-FB17 FB20-FB29 FB4F-FBB1 FBD3-FD3D FD50-FD8F
FD92-FDC7 FDF0-FDFC FE10-FE19 FE30-FE44 FE47-FE52 FE54-FE66 FE68-FE6B FE70-FE72 FE74 FE76-FEFC
FF01-FFBE FFC2-FFC7 FFCA-FFCF FFD2-FFD7 FFDA-FFDC FFE0-FFE6 FFE8-FFEE FFF0-FFFB FFFD 10781-10785
10787-107B0 107B2-107BA 10D24-10D27 10D69-10D6D 10EAB-10EAC 10EFD-10EFF 10F46-10F50 10F82-10F85
11070 11073-11074 110BD 110C2 110CD 111C0 111CF 11235 1123E 11241 1133B 1134D 113CE-113D0
11438-1143F 11442-11444 11446 1145E 116B6 1182F-11837 11839-1183A 1193B-1193E 11943 119D4-119D7
119DA-119DB 119E0 11A01-11A0A 11A33-11A38 11A3B-11A3E 11A47 11A51-11A56 11A59-11A5B 11A8A-11A96
11A98-11A99 11C30-11C36 11C38-11C3D 11C3F 11C92-11CA7 11CAA-11CB0 11CB2-11CB3 11CB5-11CB6
11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D45 11D47 11D90-11D91 11D95 11D97 11EF3-11EF4 11F00-11F01
11F36-11F3A 11F40-11F42 13430-13440 13447-13455 1612F 16F4F 16FE4 16FF0-16FF1 1CCD6-1CCF9
1CF00-1CF2D 1CF30-1CF46 1D15E-1D166 1D16D-1D172 1D1BB-1D1C0 1D400-1D454 1D456-1D49C 1D49E-1D49F
1D4A2 1D4A5-1D4A6 1D4A9-1D4AC 1D4AE-1D4B9 1D4BB 1D4BD-1D4C3 1D4C5-1D505 1D507-1D50A 1D50D-1D514
1D516-1D51C 1D51E-1D539 1D53B-1D53E 1D540-1D544 1D546 1D54A-1D550 1D552-1D6A5 1D6A8-1D7CB
1D7CE-1D7FF 1E000-1E006 1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A 1E030-1E06D 1E08F
1E130-1E136 1E2AE 1E2EC-1E2EF 1E4EC-1E4EF 1E5EE-1E5EF 1E944-1E94A 1EE00-1EE03 1EE05-1EE1F
1EE21-1EE22 1EE24 1EE27 1EE29-1EE32 1EE34-1EE37 1EE39 1EE3B 1EE42 1EE47 1EE49 1EE4B 1EE4D-1EE4F
1EE51-1EE52 1EE54 1EE57 1EE59 1EE5B 1EE5D 1EE5F 1EE61-1EE62 1EE64 1EE67-1EE6A 1EE6C-1EE72
1EE74-1EE77 1EE79-1EE7C 1EE7E 1EE80-1EE89 1EE8B-1EE9B 1EEA1-1EEA3 1EEA5-1EEA9 1EEAB-1EEBB
1F100-1F10A 1F110-1F12E 1F130-1F14F 1F16A-1F16C 1F190 1F200-1F202 1F210-1F23B 1F240-1F248
1F250-1F251 1FBF0-1FBF9 E0000 E0002-E001F E0080-E00FF E01F0-E0FFF F0000-FFFFD 100000-10FFFD
"""

# Private-use code points stand in for _NFD_KEEP characters during NFD; clean
# has already removed every private-use character of the input.
_PLACEHOLDER_BASE = 0xF0000


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
PLAIN_ASCII_PATTERN = "[\\t\\n\\r\\x20-\\x7e]*"

# Valid UTF-8 (no surrogates, overlong forms or code points past U+10FFFF):
# RE2 matches its classes against well-formed UTF-8 only.
VALID_UTF8_PATTERN = "[\\x{0}-\\x{D7FF}\\x{E000}-\\x{10FFFF}]*"


def _complement_class(*tables):
    """RE2 character class of every valid code point but NUL outside the tables."""
    taken = sorted(r for table in tables for r in _parse_ranges(table))
    parts, next_free = [], 1
    for first, last in taken + [(0x110000, 0x110000)]:
        if first > next_free:
            parts.append((next_free, first - 1))
        next_free = max(next_free, last + 1)
    # Surrogates are no characters of valid UTF-8.
    parts = [r for a, b in parts for r in ((a, min(b, 0xD7FF)), (max(a, 0xE000), b)) if r[0] <= r[1]]
    return "[" + "".join("\\x{%X}-\\x{%X}" % (a, b) for a, b in parts) + "]"


_CAPITAL_SIGMA = 0x3A3


def _lowercase_fixes_but_sigma():
    keys, _ = _code_point_map(_LOWERCASE_FIXES)
    return " ".join("%X" % k for k in keys if k != _CAPITAL_SIGMA)


# Rows `normalize_fast_path` normalizes exactly and tensorflow-text's BERT pretokenization then
# splits as the reference does: valid UTF-8 without NUL (tensorflow-text's regex ops stop there),
# without characters that need one of `normalize`'s per-character fix-ups (ICU's NFD and case
# mapping; U+03A3 aside, which `normalize_fast_path` maps itself) and without _SPLIT_DIFFERENCES.
FAST_PATH_PATTERN = _complement_class(_NFD_KEEP, _lowercase_fixes_but_sigma(), _SPLIT_DIFFERENCES) + "*"

_REMOVED_OR_NONSPACING_RE = _regex_class(_REMOVED, _NONSPACING_MARKS)

# Rows of FAST_PATH_PATTERN without a character clean_text removes: cased without accent stripping,
# `normalize_fast_path` returns them as they are (one RE2 pass over a batch's rows joined says so for all of them,
# where the removal would be a pass that copies every row).
UNCHANGED_CASED_PATTERN = _complement_class(_NFD_KEEP, _lowercase_fixes_but_sigma(), _SPLIT_DIFFERENCES, _REMOVED) + "*"

# Rows of FAST_PATH_PATTERN that `FastBertNormalizer` normalizes as the reference does, uncased.
FOLDING_PATTERN = (
    _complement_class(_NFD_KEEP, _lowercase_fixes_but_sigma(), _SPLIT_DIFFERENCES, _FOLDING_DIFFERENCES) + "*"
)

# Characters of _FOLDING_DIFFERENCES that FastBertNormalizer case-folds and the reference keeps, common in
# real text (Greek final sigma, German sharp s): `normalize_uncased_fast_path` can hide them from it behind
# private-use placeholders (no row of FOLDING_KEPT_PATTERN holds a private-use character).
_FOLDING_KEPT = {0x3C2: 0x10FF00, 0xDF: 0x10FF01}


def _without(table, code_points):
    """A table string of `table`'s code points but `code_points`."""
    kept = [c for first, last in _parse_ranges(table) for c in range(first, last + 1) if c not in code_points]
    return " ".join("%X" % c for c in kept)


# Rows of FAST_PATH_PATTERN that FastBertNormalizer normalizes as the reference does once _FOLDING_KEPT is hidden.
FOLDING_KEPT_PATTERN = (
    _complement_class(
        _NFD_KEEP, _lowercase_fixes_but_sigma(), _SPLIT_DIFFERENCES, _without(_FOLDING_DIFFERENCES, _FOLDING_KEPT)
    )
    + "*"
)


def normalize_fast_path(strings, lowercase=True, strip_accents=None):
    """`normalize` of rows that match `FAST_PATH_PATTERN`, in fewer passes.

    Removal and accent stripping are one pass after NFD (which leaves removed
    characters as they are), and capital sigma becomes small sigma before ICU's
    lowercasing, which would make a final one U+03C2 (the reference maps
    characters without context).

    Args:
        strings: tf.string, any shape, each matching `FAST_PATH_PATTERN`.
        lowercase: whether to lowercase.
        strip_accents: whether to drop accents; `None` follows `lowercase`.

    Returns:
        tf.string of the same shape, equal to `normalize(strings, lowercase, strip_accents)`.
    """
    if strip_accents is None:
        strip_accents = lowercase
    if strip_accents:
        strings = tf_text.normalize_utf8(strings, "NFD")
        # Runs (`+`): one replacement per run of marks (Vietnamese stacks two on a letter), not per mark.
        strings = tf.strings.regex_replace(strings, _REMOVED_OR_NONSPACING_RE + "+", "")
    else:
        strings = tf.strings.regex_replace(strings, _REMOVED_RE + "+", "")
    if lowercase:
        strings = tf.strings.regex_replace(strings, "\\x{3A3}", "\u03c3")
        strings = tf.strings.lower(strings, encoding="utf-8")
    return strings


@functools.cache
def _folding_normalizer():
    # Built outside any graph being traced: its table (250 KB) is a constant every graph captures.
    with tf.init_scope():
        return tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=True)


def normalize_uncased_fast_path(strings, all_fold=False, all_fold_kept=False):
    """`normalize_fast_path(strings, True, True)` of rows `[N]`, those of `FOLDING_PATTERN` in one pass.

    tensorflow-text's `FastBertNormalizer` lowercases, decomposes and strips
    accents in one table look-up a character, three to five times faster than
    the ICU and RE2 passes; rows with a character it normalizes otherwise
    (`_FOLDING_DIFFERENCES`) take those passes. Each character becomes the
    same bytes as under `normalize_fast_path` (tab, newline and carriage
    return may become spaces), so words, pieces and offsets are the same.

    Args:
        strings: tf.string `[N]` of `FAST_PATH_PATTERN`.
        all_fold: bool scalar (tensor or Python): true when every row is
            known to be of `FOLDING_PATTERN` (then no row is checked; Python
            `True` leaves the check out of the graph).
        all_fold_kept: bool scalar: true when every row is known to be of
            `FOLDING_KEPT_PATTERN`. Then its final sigmas and sharp s hide
            behind placeholders while FastBertNormalizer runs (a literal RE2
            pass each way per character), and no row is checked.
    """
    fold = _folding_normalizer().normalize

    def fold_kept():
        hidden = strings
        for kept, placeholder in _FOLDING_KEPT.items():
            hidden = tf.strings.regex_replace(hidden, chr(kept), chr(placeholder))
        folded = fold(hidden)
        for kept, placeholder in _FOLDING_KEPT.items():
            folded = tf.strings.regex_replace(folded, chr(placeholder), chr(kept))
        return folded

    def checked():
        folds = tf.strings.regex_full_match(strings, FOLDING_PATTERN)  # [N]
        return tf.cond(tf.reduce_all(folds), lambda: fold(strings), lambda: mixed(folds))

    def mixed(folds):
        folded_rows = tf.cast(tf.where(folds)[:, 0], tf.int32)
        other_rows = tf.cast(tf.where(tf.logical_not(folds))[:, 0], tf.int32)
        return tf.dynamic_stitch(
            [folded_rows, other_rows],
            [fold(tf.gather(strings, folded_rows)), normalize_fast_path(tf.gather(strings, other_rows), True, True)],
        )

    if all_fold is True:
        return fold(strings)
    return tf.cond(
        tf.convert_to_tensor(all_fold, tf.bool),
        lambda: fold(strings),
        lambda: tf.cond(tf.convert_to_tensor(all_fold_kept, tf.bool), fold_kept, checked),
    )


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


# Code points of the per-code-point length table, in blocks of this many (a two-level table: most blocks repeat).
_BLOCK = 256


@functools.cache
def _fast_path_lengths(lowercase, strip_accents):
    """int32 `[0x110000]`: UTF-8 bytes each code point becomes under `normalize_fast_path`, on its own.

    Measured with the same ops, once per process and setting (0.1-0.3 s). Surrogates and NUL, which no
    fast-path row holds, keep their own length.
    """
    code_points = np.arange(0x110000, dtype=np.int32)
    code_points[0] = 0x20
    code_points[0xD800:0xE000] = 0x20
    with tf.init_scope():  # eager even while a function is traced
        chars = tf.strings.unicode_encode(tf.RaggedTensor.from_tensor(code_points[:, None]), "UTF-8")
        lengths = tf.strings.length(normalize_fast_path(chars, lowercase, strip_accents)).numpy()
    lengths[0] = 1
    lengths[0xD800:0xE000] = 3
    lengths.setflags(write=False)
    return lengths


def _utf8_lengths():
    """int32 `[0x110000]`: UTF-8 bytes of each code point (3 for surrogates)."""
    code_points = np.arange(0x110000)
    return (1 + (code_points >= 0x80) + (code_points >= 0x800) + (code_points >= 0x10000)).astype(np.int32)


class FastPathLengths:
    """The bytes each code point becomes under `normalize_fast_path`, alone, for one setting.

    Normalization works character by character (removal, NFD with accents dropped, context-free lowercasing:
    capital sigma is mapped before ICU's lowercasing), so a normalized row is its characters' normalized forms
    one after another, and these lengths say which original character each normalized byte came from.

    Args:
        lowercase, strip_accents: as `normalize_fast_path` (`strip_accents=None` follows `lowercase`).

    Attributes:
        same_length_pattern: RE2 pattern of rows none of whose characters changes its byte length (their
            normalized bytes sit where the original ones were).
        changed_run_pattern: RE2 pattern of a run of characters that change their byte length.
    """

    def __init__(self, lowercase, strip_accents=None):
        if strip_accents is None:
            strip_accents = lowercase
        lengths = _fast_path_lengths(bool(lowercase), bool(strip_accents))
        blocks = lengths.astype(np.uint8).reshape(-1, _BLOCK)  # [0x1100, _BLOCK]
        distinct, index = np.unique(blocks, axis=0, return_inverse=True)
        self._blocks = distinct.reshape(-1)  # [K * _BLOCK]
        self._index = (index.reshape(-1) * _BLOCK).astype(np.int32)  # [0x1100], each block's first entry
        self._bmp = lengths[:0x10000].astype(np.uint8)  # [0x10000] one gather where every code point is below
        changed = np.flatnonzero(lengths != _utf8_lengths())
        changed = changed[(changed > 0) & ((changed < 0xD800) | (changed > 0xDFFF))]
        ranges = (
            "".join(_class_range(a, b) for a, b in _runs(changed)) or "\\x{10FFFF}"
        )  # (none changes: a class is never empty)
        self.same_length_pattern = "[^" + ranges + "]*"
        self.changed_run_pattern = "[" + ranges + "]+"

    def lookup(self, code_points):
        """int32 `[C]` normalized byte lengths of valid code points int32 `[C]` (in-graph).

        One gather in a 64 KB table when every code point is in the Basic Multilingual Plane (about a fifth
        faster on 300,000 characters), else two in the two-level table.
        """

        def two_level():
            block = tf.gather(tf.constant(self._index), tf.bitwise.right_shift(code_points, 8))
            return tf.gather(tf.constant(self._blocks), block + tf.bitwise.bitwise_and(code_points, _BLOCK - 1))

        lengths = tf.cond(
            tf.reduce_all(code_points < 0x10000), lambda: tf.gather(tf.constant(self._bmp), code_points), two_level
        )
        return tf.cast(lengths, tf.int32)


def _runs(values):
    """[(first, last)] runs of consecutive ints in sorted `values`."""
    if values.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(values) != 1)
    firsts = np.concatenate([values[:1], values[breaks + 1]])
    lasts = np.concatenate([values[breaks], values[-1:]])
    return list(zip(firsts.tolist(), lasts.tolist()))


def _class_range(first, last):
    return "\\x{%X}" % first if first == last else "\\x{%X}-\\x{%X}" % (first, last)
