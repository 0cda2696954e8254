"""Unit tests of the offset helpers (bert_tf.text.offsets) and the fast path's length table
(bert_tf.text.normalization.FastPathLengths), on tiny inputs with multi-byte, removed, expanding and
combining characters."""

import pytest
import tensorflow as tf

from bert_tf.text import BertTokenizer
from bert_tf.text.normalization import FastPathLengths, normalize_fast_path
from bert_tf.text.offsets import normalized_owners, normalized_to_original, owners_at, row_ids

# ß (kept), İ (shrinks uncased, grows lowercased alone), ﬁ (one ligature), é precomposed and combining,
# a lone combining mark, CJK, Hangul (NFD: 3 jamo), zero-width space (removed), capital sigma, ASCII and a
# removed control character.
CHARACTERS = ["ß", "İ", "ﬁ", "é", "e\u0301", "\u0323", "中", "한", "\u200b", "Σ", "A", "\x01", "ǅ", "Å"]
SETTINGS = [(True, True), (False, False), (True, False), (False, True)]


@pytest.mark.parametrize("lowercase,strip_accents", SETTINGS)
def test_lengths_are_those_of_each_character_normalized(lowercase, strip_accents):
    table = FastPathLengths(lowercase, strip_accents)
    bmp = [c for text in CHARACTERS for c in text]
    # Only Basic Multilingual Plane code points (one table), then also supplementary ones (emoji, Deseret
    # capital letter: the two-level table).
    for chars in (bmp, bmp + ["\U0001f600", "\U00010400"]):
        code_points = tf.constant([ord(c) for c in chars], tf.int32)
        expected = tf.strings.length(normalize_fast_path(tf.constant(chars), lowercase, strip_accents))
        assert table.lookup(code_points).numpy().tolist() == expected.numpy().tolist()


def test_same_length_pattern_finds_rows_that_keep_their_offsets():
    uncased = FastPathLengths(True)
    rows = tf.constant(["plain", "Дом ΣΑΣ 中文 ß", "café", "İstanbul", "a\u200bb", ""])
    kept = tf.strings.regex_full_match(rows, uncased.same_length_pattern).numpy().tolist()
    assert kept == [True, True, False, False, False, True]
    cased = FastPathLengths(False)
    kept = tf.strings.regex_full_match(rows, cased.same_length_pattern).numpy().tolist()
    assert kept == [True, True, True, True, False, True]
    changed = tf.strings.regex_full_match(tf.constant(["é\u200b", "e"]), cased.changed_run_pattern)
    assert changed.numpy().tolist() == [False, False]
    assert tf.strings.regex_full_match(tf.constant(["\u200b\u00ad"]), cased.changed_run_pattern).numpy()[0]


def test_normalized_to_original():
    # Characters of 1, 0 (removed), 3 (expanded) and 2 normalized bytes, at original bytes 0, 1, 4, 6, 8.
    char_starts = tf.constant([0, 1, 4, 6], tf.int64)
    char_ends = tf.constant([1, 4, 6, 8], tf.int64)
    lengths = tf.constant([1, 0, 3, 2])
    # Normalized bytes 0 | 1 2 3 | 4 5: pieces [0, 2), [2, 4), [4, 6).
    starts, ends = normalized_to_original(
        char_starts, char_ends, lengths, tf.constant([0, 2, 4], tf.int64), tf.constant([2, 4, 6], tf.int64)
    )
    assert starts.numpy().tolist() == [0, 4, 6]
    assert ends.numpy().tolist() == [6, 6, 8]


def test_owners_at_equals_owners_gathered():
    lengths = tf.constant([0, 2, 1, 0, 0, 3, 1, 4, 0, 2])
    owners, normalized_ends = normalized_owners(lengths)
    total = int(tf.reduce_sum(lengths))
    assert owners.numpy().tolist()[:4] == [1, 1, 2, 5]
    positions = tf.constant([0, 0, 1, 3, 4, 6, 6, 8, 12, total - 1], tf.int64)
    assert owners_at(normalized_ends, positions).numpy().tolist() == tf.gather(owners, positions).numpy().tolist()
    assert owners_at(normalized_ends, tf.zeros([0], tf.int64)).numpy().tolist() == []


def test_row_ids_equal_value_rowids():
    ragged = tf.ragged.constant([[], [1, 2], [], [], [3], [4, 5, 6], []])
    assert row_ids(ragged.row_splits).numpy().tolist() == ragged.value_rowids().numpy().tolist()
    assert row_ids(tf.constant([0, 0], tf.int64)).numpy().tolist() == []


VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "fox", "cafe", "café", "##s", "i", "a", "b"]
VOCAB += ["中", "文", "ß", "fi", "##fi", "e", "stan", "##bul", "is", "##tan", "σ", "Σ", "ı", ",", "."]


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return str(path)


# Few characters change length (the sparse mapping) and many do (every character decoded: of all rows, or of the
# rows that change where those that keep their offsets hold most bytes), in one batch and alone.
SPARSE_ROWS = ["the quick fox " * 20 + "café", "the fox " * 30, "cafe\u200b the İstanbul " + "quick " * 30]
DENSE_ROWS = ["ÇAFÉ İSTANBUL ß ﬁ 한국 中文 e\u0301\u0323 ΣΑΣ", "é" * 40, "a\u200b\u200bb ǅ Åfi", "the fox"]
SOME_ROWS = ["\u200b" * 30, "the fox " * 15, "中文 ß fox", "", "İİ"]


@pytest.mark.slow
@pytest.mark.parametrize("lowercase", [True, False])
@pytest.mark.parametrize(
    "rows", [SPARSE_ROWS, DENSE_ROWS, SOME_ROWS, SPARSE_ROWS + DENSE_ROWS], ids=["sparse", "dense", "some", "all"]
)
def test_offsets_equal_the_reference(vocab_file, lowercase, rows):
    tokenizers = pytest.importorskip("tokenizers")
    ours = BertTokenizer(vocab_file, lowercase=lowercase)
    reference = tokenizers.BertWordPieceTokenizer(vocab_file, lowercase=lowercase)
    ids, starts, ends = tf.function(lambda x: ours.tokenize_with_offsets(x, unit="char"))(tf.constant(rows))
    for row, row_ids_, row_starts, row_ends, encoding in zip(
        rows, ids.to_list(), starts.to_list(), ends.to_list(), reference.encode_batch(rows, add_special_tokens=False)
    ):
        assert row_ids_ == encoding.ids, row
        assert list(zip(row_starts, row_ends)) == encoding.offsets, row
