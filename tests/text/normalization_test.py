"""The uncased fast path's one-pass normalization (`normalize_uncased_fast_path`).

tensorflow-text's `FastBertNormalizer` normalizes most characters as the
reference does; `_FOLDING_DIFFERENCES` lists the others, measured here on
every code point, and rows with one of them take the ICU and RE2 passes.
"""

import unicodedata

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text import normalization
from bert_tf.text.normalization import (
    FAST_PATH_PATTERN,
    FOLDING_KEPT_PATTERN,
    FOLDING_PATTERN,
    normalize_fast_path,
    normalize_uncased_fast_path,
)

# Tab, newline and carriage return become spaces under FastBertNormalizer: the same words, the same bytes.
_SPACED = [b"\t", b"\n", b"\r"]
# ICU's NFD moves a character of combining class 2 or more in front of this one (class 1).
_OVERLAY = "\u0334"


def folding_differences():
    """Code points of the fast path that `FastBertNormalizer` must not normalize, as a sorted int array.

    Those whose result differs from `normalize_fast_path` (tabs, newlines and
    carriage returns turned into spaces aside), and those whose result keeps a
    combining mark, which the reference's NFD would reorder next to another
    and `FastBertNormalizer`, a character at a time, does not.
    """
    code_points = np.array([c for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF])
    chars = tf.constant([chr(c).encode("utf-8") for c in code_points])
    fast = tf.strings.regex_full_match(chars, FAST_PATH_PATTERN).numpy()
    want = normalize_fast_path(chars, True, True)
    got = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=True).normalize(chars).numpy()
    same = (want.numpy() == got) | (np.isin(want.numpy(), _SPACED) & (got == b" "))
    # Combining classes from ICU (TensorFlow's NFD) and from Python's tables, which know fewer characters.
    alone = tf_text.normalize_utf8(want, "NFD").numpy()
    with_overlay = tf_text.normalize_utf8(tf.strings.join([want, _OVERLAY]), "NFD").numpy()
    moves = with_overlay != np.char.add(alone.astype(object), _OVERLAY.encode("utf-8"))
    marked = np.array([any(unicodedata.combining(ch) for ch in text.decode("utf-8")) for text in want.numpy()])
    return code_points[fast & (~same | moves | marked)]


def test_folding_differences_are_measured_on_every_code_point():
    table = [
        c
        for first, last in normalization._parse_ranges(normalization._FOLDING_DIFFERENCES)
        for c in range(first, last + 1)
    ]
    np.testing.assert_array_equal(np.array(table), folding_differences())


def _lines(*texts):
    return tf.constant([t.encode("utf-8") for t in texts])


MIXED = _lines(
    "Η Οικουμενική Διακήρυξη, ΟΔΟΣ και δρόμος",  # final sigma: FastBertNormalizer folds it to σ, the reference keeps ς
    "Vietnamese Tiếng Việt có dấu",
    "Straße, Fußball",  # sharp s: it folds to ss
    "全角，括号（）",  # full-width forms: it decomposes them
    "plain ascii\tline\r\n",
    "",
    "한국어 문장",
)


def test_rows_with_differences_take_the_passes():
    folds = tf.strings.regex_full_match(MIXED, FOLDING_PATTERN).numpy().tolist()
    assert folds == [False, True, False, False, True, True, True]
    want = normalize_fast_path(MIXED, True, True).numpy().tolist()
    got = normalize_uncased_fast_path(MIXED).numpy().tolist()
    # Row 4: its tab and newline became spaces (the same words); every other row is byte for byte the same.
    assert got[4] == b"plain ascii line  " and want[4] == b"plain ascii\tline\r\n"
    assert [g for i, g in enumerate(got) if i != 4] == [w for i, w in enumerate(want) if i != 4]


def test_known_folding_rows_skip_the_check():
    rows = tf.gather(MIXED, [1, 5, 6])
    want = normalize_fast_path(rows, True, True)
    graph = tf.function(lambda s: normalize_uncased_fast_path(s, all_fold=True))
    assert graph(rows).numpy().tolist() == want.numpy().tolist()
    assert normalize_uncased_fast_path(tf.constant([], tf.string)).numpy().tolist() == []
    graph_def = graph.get_concrete_function(rows).graph.as_graph_def()
    ops = [n.op for n in graph_def.node] + [n.op for f in graph_def.library.function for n in f.node_def]
    assert "FastBertNormalize" in ops and "StaticRegexFullMatch" not in ops
    checked = tf.function(normalize_uncased_fast_path).get_concrete_function(rows).graph.as_graph_def()
    assert "StaticRegexFullMatch" in [n.op for f in checked.library.function for n in f.node_def]


def test_final_sigma_and_sharp_s_hide_behind_placeholders():
    rows = tf.gather(MIXED, [0, 1, 2, 4, 5, 6])  # Greek with final sigma, German with sharp s, and others
    assert tf.strings.regex_full_match(rows, FOLDING_KEPT_PATTERN).numpy().all()
    want = normalize_fast_path(rows, True, True).numpy().tolist()
    got = normalize_uncased_fast_path(rows, all_fold_kept=True).numpy().tolist()
    assert got[0] == "η οικουμενικη διακηρυξη, οδοσ και δρομος".encode() and got[2] == "straße, fußball".encode()
    assert [g for i, g in enumerate(got) if i != 3] == [w for i, w in enumerate(want) if i != 3]
    # The placeholders: characters no row of FOLDING_KEPT_PATTERN holds, which FastBertNormalizer keeps as they are.
    placeholders = "".join(chr(p) for p in normalization._FOLDING_KEPT.values())
    assert not tf.strings.regex_full_match(placeholders, FOLDING_KEPT_PATTERN).numpy()
    folded = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=True).normalize(tf.constant([placeholders]))
    assert folded.numpy().tolist() == [placeholders.encode()]
