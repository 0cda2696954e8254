"""Edge-case inputs for tokenizer parity tests.

`EDGE_CASES` holds `bytes` (UTF-8, sometimes deliberately invalid): the
reference tokenizer receives `line.decode("utf-8", errors="replace")`. Its
tail, `SPECIAL_TOKEN_CASES`, writes BERT's special tokens in the text: alone,
glued to words and to each other, in look-alike case or spacing, next to
accents, CJK, Unicode spaces and removed characters.
"""

_TEXT = [
    # Empty and whitespace-only.
    "",
    " ",
    "\t\n\r ",
    "\u00a0\u3000\u2028\u2029",
    # Unicode spaces between words.
    "a\u00a0b",
    "a\u1680b",
    *["a%sb" % chr(c) for c in range(0x2000, 0x200B)],
    "a\u202fb a\u205fb a\u3000b a\u2028b a\u2029b a\u0085b",
    # Zero-width and format characters.
    "a\u200bb a\u200cb a\u200db a\u2060b \ufeffbom a\u00adb a\u180eb",
    "a\u202ab\u202ec \u2066x\u2069 \U000e0041tag \U000e0001",
    # Private use, noncharacters, unassigned.
    "a\ue000b a\U000f0001b \ufffe \uffff a\u0378b \U0010fffd",
    # Controls.
    "".join(chr(c) for c in range(0x00, 0x20)) + "x",
    "a\x00b a\x01b a\x0bb a\x0cb a\x1cb a\x1fb a\x7fb a\x85b a\x9fb",
    "line\r\nwindows\rmac\nunix",
    # Combining marks, composed and decomposed.
    "Café café Cafe\u0301 cafe\u0301 naïve nai\u0308ve résumé",
    "\u0301start a\u0301\u0302\u0303 \u0301 \u20dd \u0488",
    "e\u0316\u0301 e\u0301\u0316 a\u034fb",
    # Spacing modifiers and spacing accents.
    "\u00b4 a\u00b4b \u02dc a\u02dcb \u00a8 \u02c6 \u02cb \u02bc \u0060 \u00af \u02d8",
    "\u1fef \u1fed \u1fee \u1fc1 \u0385 \u0374 \u037e \u0387",
    # CJK, Japanese, Hangul.
    "中文字符测试 漢字 \u3400\U00020000\U0002a700\U0002b820\U0002ceb0\U0002f800",
    "日本語のテキスト、カタカナ。ｶﾀｶﾅ",
    "한국어 텍스트 \u1100\u1161\u11a8 \u314f",
    "\uf900\ufa6d\u2f00\u3007\u30fc",
    # Emoji.
    "\U0001f600 \U0001f44d\U0001f3fd \U0001f468\u200d\U0001f469\u200d\U0001f467",
    "\U0001f1fa\U0001f1f8 \U0001f3f3\ufe0f\u200d\U0001f308 \u2764\ufe0f #\ufe0f\u20e3",
    "\U0001f970 \U0001f97a \U0001fae0 a\U0001f600b",
    # Case mapping.
    "\u0130stanbul \u0131 I\u0307 \u0049 \u0069",
    "Stra\u00dfe STRASSE \u1e9e",
    "\u039f\u0394\u039f\u03a3 \u03a3\u0391\u03a3 \u03c3\u03c2 \u039c\u0386\u03a1\u03a4\u0399\u039f\u03a3.",
    "\ufb01 \ufb02 \ufb00 \u0132 \u01c4 \u01c5 \u01c6",
    "\uff21\uff22\uff23 \uff41\uff42\uff43 \uff10\uff11",
    "\u00b2 \u00b3 \u00b9 x\u00b2 \u2070 \u2080 \u00bd \u2153",
    "\u216b \u2170 \u2160 \u216f \u2183",
    "\u212a \u212b \u2126 \u00b5 \u017f \u1e9b",
    "\u10a0\u10a1 \u1c90\u1c91 \u13a0 \uab70 \u1c89 \u2c2f \ua7c0 \U00010570",
    # Right-to-left and Indic scripts with combining marks.
    "\u0627\u0644\u0639\u064e\u0631\u064e\u0628\u0650\u064a\u0651\u0629 \u0640\u0640 \u06dd",
    "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd \u05be \u05f3",
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u0915\u094d\u0937 \u0964 \u0965",
    "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22 \u0e4f \u0e5a",
    "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u",
    # Punctuation, symbols, special-token look-alikes.
    "Hello, world! (a) [b] {c} <d> \"e\" 'f' `g` ~h^ $5 100% a&b a|b \\ /",
    "\u00a1Hola! \u00bfQu\u00e9? \u00ab\u00bb \u2018\u2019 \u201c\u201d \u2026 \u2013 \u2014 \u00a7 \u00b6",
    "$ \u00a3 \u20ac \u00a5 \u00a9 \u00ae \u2122 \u00b0 \u00b1 \u00d7 \u00f7 + = < >",
    "[CLS] [SEP] [MASK] [PAD] [UNK] x[MASK]y [mask] [MASK [ MASK ]",
    "[[MASK]] [SEP][SEP] a[UNK]b",
    # Long words around max_input_chars_per_word.
    "a" * 99,
    "a" * 100,
    "a" * 101,
    "\u00e9" * 100 + " " + "\u00e9" * 101,
    "\u4e2d" * 300,
    "supercalifragilisticexpialidocious " * 3,
    "unaffable unbelievable tokenization ##ing ## #",
    # Numbers.
    "1,234.56 3.14159 1e10 2023-01-01 12:30pm",
    # Noncharacters / supplementary planes.
    "\U00010000 \U0001d400 \U0001d7ce \U000e0100",
    # Recently assigned characters whose tables differ between Unicode versions.
    "a\u1ac1b a\u08d3b a\u0890b a\u2e5db \U00011938 \U000105c9 \U00016d68 \u0897",
]

_BYTES = [
    b"a\xffb",
    b"\xfe\xff",
    b"caf\xe9 na\xefve",
    b"a\xe2\x82b",
    b"\xe2\x82\xac\xe2\x82",
    b"\xed\xa0\x80 surrogate",
    b"\xc0\x80 overlong",
    b"\xf4\x90\x80\x80 too big",
    b"\xf0\x9f\x98 truncated emoji",
    b"a\x80\x80\x80b",
    b"[MA\xffSK] [MASK]\xff",
]

# Literal special tokens: kept whole (exact case, matched on the raw text before normalization) unless
# split_special_tokens, as Hugging Face's tokenizers do.
_SPECIAL_TOKEN_TEXT = [
    "[MASK]",
    "[SEP]",
    "[CLS]",
    "[PAD]",
    "[UNK]",
    "The [MASK] sat on the mat.",
    "[CLS] Hello world [SEP] Second sentence [SEP]",
    # Look-alikes that are not special: other case, inner spaces, half brackets, fullwidth, zero-width inside.
    "[mask] [Mask] [MASK [ MASK ] [ MASK] MASK] [MAS K] [MASKS] [[MASK]]",
    "[\uff2d\uff21\uff33\uff2b] \uff3bMASK\uff3d [MASK\u200b] [\u200bMASK] [MA\x00SK]",
    # Glued to words, punctuation, continuations and each other.
    "x[SEP]y [CLS][SEP] a[MASK]b [MASK][MASK] [SEP]. ,[SEP], [MASK]S [SEP]ARATE ##[MASK] [SEP]##s",
    # Next to accents (composed, decomposed, a combining mark right after the token), case mapping, CJK, emoji.
    "caf\u00e9[MASK]na\u00efve Caf\u00e9 [MASK] CAF\u00c9[SEP]\u00c9",
    "\u00e9[UNK]\u0301 [UNK]\u0301 [MASK]\u0301x e\u0301[SEP]",
    "I\u0307[MASK]\u0130 \u0130[SEP] Stra\u00dfe[MASK]STRASSE",
    "\u4e2d[MASK]\u6587 [SEP]\u4e2d\u6587[CLS] \u65e5\u672c\u8a9e[MASK]\u3002",
    "\U0001f600[MASK]\U0001f600 [SEP]\ufeff",
    # Whitespace variants and characters cleaning removes around them.
    "a\u00a0[MASK]\u3000b\t[SEP]\n[CLS]\u2028x \u200b[MASK]\u200b",
    "  [PAD]  [PAD][PAD]  ",
    "a\x00[MASK] [SEP]\x7f \x01[CLS]\x01",
]

SPECIAL_TOKEN_CASES = [t.encode("utf-8") for t in _SPECIAL_TOKEN_TEXT] + [b"[MASK]\xff[SEP]", b"\xfe[CLS]\xc3"]

EDGE_CASES = [t.encode("utf-8") for t in _TEXT] + _BYTES + SPECIAL_TOKEN_CASES

# Byte-level BPE (GPT-2 pre-tokenization and RoBERTa's special tokens), used with EDGE_CASES.
_BPE_TEXT = [
    # Runs of spaces: `\s+(?!\S)` leaves the last one to the next word.
    "a  b",
    "a   b    c",
    "  leading",
    "trailing  ",
    "trailing ",
    "   ",
    " x ",
    "a \tb a\t b a\t\tb a \n b a\n\n b",
    "\n\nfoo\n",
    "a\u00a0 b a \u00a0b a\u3000\u3000b \u2028 x",
    "  's  'S 't",
    # Contractions, case and apostrophes.
    "it's I'm we're they've he'll she'd don't",
    "IT'S I'M WE'RE THEY'VE HE'LL SHE'D DON'T",
    "'s's 'll'd ''s '' 'x \u2019s",
    "rock'n'roll o'clock 'tis",
    # Digits, letters, punctuation runs.
    "1234567890 12,345.67 3rd 2nd 10x x10 \u0661\u0662\u0663 \u2460\u2461 \u00bd",
    "!!!??? ... --- *** ### $$$ a--b a...b (a) [b] {c}",
    "email@example.com https://example.com/a?b=c&d=e#f",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa " + "-" * 80,
    "ababababababab aaaaaaa bbbbbbb",
    # Emoji, CJK, combining marks.
    "\U0001f600\U0001f600\U0001f600 a\U0001f44d b \U0001f468\u200d\U0001f469",
    "\u4e2d\u6587 \u65e5\u672c\u8a9e \ud55c\uad6d\uc5b4 \u4e2d\u6587abc",
    "e\u0301 a\u0300\u0301 \u0301x x\u0301y \u0915\u094d\u0937",
    # Literal special tokens glued to words and after spaces.
    "<s>",
    "</s>",
    "<mask>",
    "<s>a</s>",
    "a<s>b</s>c",
    "Hello <mask>.",
    "Hello  <mask>",
    "Hello\t<mask> world",
    "<mask><mask> <mask>  <mask>",
    "x<mask>y <pad> <unk> </s></s>",
    "< s> <s > <mask <MASK> </ s>",
    " <s> ",
]

BPE_EDGE_CASES = [t.encode("utf-8") for t in _BPE_TEXT] + [b"a\xff <mask>\xff", b"\xff\xfe  \xff"]
