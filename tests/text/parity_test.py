"""Parity of `bert_tf.text.BertTokenizer` ids with the reference tokenizer.

The reference is Hugging Face `tokenizers.BertWordPieceTokenizer` with the
same vocabulary and settings (`clean_text=True`, `handle_chinese_chars=True`),
`encode_batch(lines, add_special_tokens=False)`, built as Hugging Face builds
it: the vocabulary's special tokens registered and kept whole where the text
writes them (its default; `encode_special_tokens=True` for our
`split_special_tokens=True`). The first `SAMPLE_LINES` lines of every text
file under ../shared/data are compared, uncased and cased (every line: the
slow tier's `test_corpus_parity_every_line`), plus the edge cases of
`edge_cases.py` (ids and character offsets) and a sweep over every Unicode
code point; the tokenizer read from the MiniLM folder's `tokenizer.json` is
compared with `tokenizers.Tokenizer.from_file` on the same edge cases. Input
bytes go to our tokenizer as they are; the reference gets
`line.decode("utf-8", errors="replace")`.
"""

import glob
import json
import os

import pytest
import tensorflow as tf

from bert_tf.text import BertTokenizer, normalization
from bert_tf.text.normalization import (
    FAST_PATH_PATTERN,
    FOLDING_KEPT_PATTERN,
    FOLDING_PATTERN,
    UNCHANGED_CASED_PATTERN,
    normalize,
    split_words,
)
from tests.text.edge_cases import EDGE_CASES, SPECIAL_TOKEN_CASES

tokenizers = pytest.importorskip("tokenizers")

DATA_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data")
BATCH_SIZE = 4096
# Lines of each data file the default tier compares (the multilingual samples are shorter: whole); the slow tier
# compares every line (about 150 s more on 2 cores).
SAMPLE_LINES = 5000

# (lowercase, strip_accents): uncased BERT and cased BERT.
SETTINGS = {"uncased": (True, True), "cased": (False, False)}


def _data_path(*parts):
    return os.path.normpath(os.path.join(DATA_DIR, *parts))


def _lines_of(path):
    with open(path, "rb") as f:
        return f.read().split(b"\n")


def _conll_sentences(path):
    sentences, words = [], []
    for line in _lines_of(path):
        fields = line.split()
        if not fields or fields[0] == b"-DOCSTART-":
            if words:
                sentences.append(b" ".join(words))
            words = []
        else:
            words.append(fields[0])
    if words:
        sentences.append(b" ".join(words))
    return sentences


def _squad_texts(path):
    with open(path, "rb") as f:
        data = json.load(f)["data"]
    texts = []
    for article in data:
        for paragraph in article["paragraphs"]:
            texts.append(paragraph["context"])
            texts.extend(qa["question"] for qa in paragraph["qas"])
    return [t.encode("utf-8") for t in texts]


def _corpora():
    """{name: [bytes lines]} of every data file (whole lines for TSVs)."""
    corpora = {}
    text_files = (
        glob.glob(_data_path("corpus", "*", "*"))
        + glob.glob(_data_path("glue", "*", "*.tsv"))
        + glob.glob(_data_path("multilingual", "udhr", "*"))
    )
    for path in sorted(text_files):
        corpora[os.path.relpath(path, _data_path())] = lambda p=path: _lines_of(p)
    for path in sorted(glob.glob(_data_path("conll2003", "eng.*"))):
        corpora[os.path.relpath(path, _data_path())] = lambda p=path: _conll_sentences(p)
    squad = _data_path("squad", "xquad.en.json")
    if os.path.exists(squad):
        corpora["squad/xquad.en.json"] = lambda: _squad_texts(squad)
    return corpora


CORPORA = _corpora()


def _reference(vocab, lowercase, strip_accents, encode_special_tokens=False):
    """Hugging Face's tokenizer of `vocab`: it registers the vocabulary's [PAD], [UNK], [CLS], [SEP], [MASK] as
    special tokens, kept whole in the text unless `encode_special_tokens`."""
    ref = tokenizers.BertWordPieceTokenizer(
        vocab,
        lowercase=lowercase,
        strip_accents=strip_accents,
        clean_text=True,
        handle_chinese_chars=True,
    )
    # True: literal "[MASK]" is plain text, as BertTokenizer(split_special_tokens=True).
    ref._tokenizer.encode_special_tokens = encode_special_tokens
    return ref


def _mismatches(ours_fn, ref, lines):
    """Indices of lines whose ids differ, comparing in batches."""
    bad = []
    for begin in range(0, len(lines), BATCH_SIZE):
        batch = lines[begin : begin + BATCH_SIZE]
        ours = ours_fn(tf.constant(batch, tf.string)).to_list()
        theirs = ref.encode_batch(
            [line.decode("utf-8", errors="replace") for line in batch],
            add_special_tokens=False,
        )
        bad.extend(begin + i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b.ids)
    return bad


def _report(name, lines, bad):
    examples = [lines[i][:120] for i in bad[:5]]
    return f"{name}: {len(bad)} of {len(lines)} lines differ, e.g. {examples}"


@pytest.fixture(scope="module", params=sorted(SETTINGS))
def pair(request, minilm_vocab):
    lowercase, strip_accents = SETTINGS[request.param]
    ours = BertTokenizer(minilm_vocab, lowercase=lowercase, strip_accents=strip_accents)
    ref = _reference(minilm_vocab, lowercase, strip_accents)
    return request.param, tf.function(ours.tokenize), ref


def test_data_files_found():
    assert len(CORPORA) >= 30, sorted(CORPORA)


@pytest.mark.parametrize("name", sorted(CORPORA))
def test_corpus_parity(pair, name):
    """The first `SAMPLE_LINES` lines of each file."""
    _assert_parity(pair, name, CORPORA[name]()[:SAMPLE_LINES])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CORPORA))
def test_corpus_parity_every_line(pair, name):
    _assert_parity(pair, name, CORPORA[name]())


def _assert_parity(pair, name, lines):
    setting, ours, ref = pair
    bad = _mismatches(ours, ref, lines)
    print(f"[{setting}] {_report(name, lines, bad)}")
    assert not bad, _report(name, lines, bad)


def test_edge_case_parity(pair):
    setting, ours, ref = pair
    bad = _mismatches(ours, ref, EDGE_CASES)
    assert not bad, [(EDGE_CASES[i], ours(tf.constant([EDGE_CASES[i]]))) for i in bad]


def test_edge_cases_hold_special_tokens(minilm_vocab):
    """The edge cases write special tokens both ways: kept whole, and look-alikes that are plain text."""
    kept = BertTokenizer(minilm_vocab)(tf.constant(SPECIAL_TOKEN_CASES)).to_list()
    split = BertTokenizer(minilm_vocab, split_special_tokens=True)(tf.constant(SPECIAL_TOKEN_CASES)).to_list()
    mask_id = BertTokenizer(minilm_vocab).mask_id
    assert sum(row.count(mask_id) for row in kept) >= 20
    assert not any(mask_id in row for row in split)
    look_alikes = SPECIAL_TOKEN_CASES[7]  # "[mask] [Mask] [MASK [ MASK ] ... [[MASK]]": one special token
    assert kept[7].count(mask_id) == 1, look_alikes


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_split_special_tokens_parity(minilm_vocab, setting):
    """split_special_tokens=True matches the reference with `encode_special_tokens=True`."""
    lowercase, strip_accents = SETTINGS[setting]
    ours = BertTokenizer(
        minilm_vocab,
        lowercase=lowercase,
        strip_accents=strip_accents,
        split_special_tokens=True,
    )
    ref = _reference(minilm_vocab, lowercase, strip_accents, encode_special_tokens=True)
    lines = EDGE_CASES + CORPORA["glue/SST-2/dev.tsv"]()
    assert not _mismatches(ours.tokenize, ref, lines)
    assert not _mismatches(lambda x: ours.tokenize_with_offsets(x)[0], ref, lines)


def _offset_mismatches(ours, ref, lines):
    """Lines whose `tokenize_with_offsets(unit="char")` ids or offsets differ from the reference's encoding."""
    ids, starts, ends = ours.tokenize_with_offsets(tf.constant(lines), unit="char")
    theirs = ref.encode_batch([line.decode("utf-8", errors="replace") for line in lines], add_special_tokens=False)
    bad = []
    for line, row_ids, row_starts, row_ends, encoding in zip(
        lines, ids.to_list(), starts.to_list(), ends.to_list(), theirs
    ):
        if row_ids != encoding.ids or list(zip(row_starts, row_ends)) != encoding.offsets:
            bad.append((line[:80], list(zip(row_ids, row_starts, row_ends))[:8], encoding.offsets[:8]))
    return bad


@pytest.mark.parametrize("split_special_tokens", [False, True])
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_edge_case_offsets_parity(minilm_vocab, setting, split_special_tokens):
    """Character offsets equal the reference's (a kept special token spans itself), special tokens kept or not."""
    lowercase, strip_accents = SETTINGS[setting]
    ours = BertTokenizer(
        minilm_vocab, lowercase=lowercase, strip_accents=strip_accents, split_special_tokens=split_special_tokens
    )
    ref = _reference(minilm_vocab, lowercase, strip_accents, encode_special_tokens=split_special_tokens)
    assert not _offset_mismatches(ours, ref, EDGE_CASES)


@pytest.mark.parametrize("split_special_tokens", [False, True])
def test_tokenizer_json_parity(minilm_dir, split_special_tokens):
    """`BertTokenizer.from_tokenizer_json` (default: special tokens kept) against `Tokenizer.from_file`."""
    path = os.path.join(minilm_dir, "tokenizer.json")
    overrides = {"split_special_tokens": True} if split_special_tokens else {}
    ours = BertTokenizer.from_tokenizer_json(path, **overrides)
    assert ours.split_special_tokens == split_special_tokens
    ref = tokenizers.Tokenizer.from_file(path)
    ref.no_padding()  # the file pads and truncates to 128
    ref.no_truncation()
    ref.encode_special_tokens = split_special_tokens
    assert not _offset_mismatches(ours, ref, EDGE_CASES)
    lines = CORPORA["glue/SST-2/dev.tsv"]()
    assert not _mismatches(ours.tokenize, ref, lines)


@pytest.mark.slow
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_offsets_path_ids_parity(minilm_vocab, setting):
    """tokenize_with_offsets gives the same ids as tokenize."""
    lowercase, strip_accents = SETTINGS[setting]
    ours = BertTokenizer(minilm_vocab, lowercase=lowercase, strip_accents=strip_accents)
    ref = _reference(minilm_vocab, lowercase, strip_accents)
    lines = EDGE_CASES
    for name in sorted(CORPORA):
        if name.startswith("multilingual") or name.startswith("squad"):
            lines = lines + CORPORA[name]()
    fn = tf.function(lambda x: ours.tokenize_with_offsets(x)[0])
    assert not _mismatches(fn, ref, lines)


# (lowercase, strip_accents) for the code point sweep: uncased, cased, and
# lowercase without accent stripping.
SWEEP_SETTINGS = [(True, True), (False, False), (True, False), (False, True)]


@pytest.mark.slow
@pytest.mark.parametrize("lowercase,strip_accents", SWEEP_SETTINGS)
def test_every_code_point_normalizes_and_splits_like_reference(lowercase, strip_accents):
    """Normalization and word splitting of each code point, vocab-free.

    Each line holds 64 probes "A<c>b " so that removal, whitespace,
    punctuation, CJK, accents and case of every code point show in the
    reference's words.
    """
    normalizer = tokenizers.normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=True,
        strip_accents=strip_accents,
        lowercase=lowercase,
    )
    pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    code_points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    lines = ["".join("A%sb " % chr(c) for c in code_points[i : i + 64]) for i in range(0, len(code_points), 64)]
    theirs = [[w for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(line))] for line in lines]

    @tf.function
    def split(batch):
        normalized = normalize(batch, lowercase, strip_accents)
        return split_words(normalized)[0]

    bad = []
    for begin in range(0, len(lines), BATCH_SIZE):
        batch = [line.encode("utf-8") for line in lines[begin : begin + BATCH_SIZE]]
        ours = split(tf.constant(batch)).to_list()
        for i, words in enumerate(ours):
            words = [w.decode("utf-8") for w in words]
            if words != theirs[begin + i]:
                bad.append((lines[begin + i], words, theirs[begin + i]))
    assert not bad, f"{len(bad)} lines differ, first: {bad[:1]}"


@pytest.mark.slow
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_ten_megabyte_line_parity(minilm_vocab, setting):
    lowercase, strip_accents = SETTINGS[setting]
    ours = BertTokenizer(minilm_vocab, lowercase=lowercase, strip_accents=strip_accents)
    ref = _reference(minilm_vocab, lowercase, strip_accents)
    sample = b" ".join(EDGE_CASES[:60]) + b" " + b" ".join(CORPORA["multilingual/udhr/Russian-UTF8"]())
    line = (sample * (10_000_000 // len(sample) + 1))[:10_000_000]
    unspaced = b"x" * 10_000_000  # one word, far too long: one [UNK]
    assert not _mismatches(ours.tokenize, ref, [line, unspaced])


# NLTK's UDHR samples name their encoding; decoded, each script is tested as the UTF-8 text users have.
UDHR_ENCODINGS = {"UTF8": "utf-8", "Latin1": "latin-1", "Arabic": "cp1256"}


def _udhr_texts(name):
    """The file's lines as they are (bytes) and decoded with its encoding (UTF-8 bytes), one list."""
    raw = CORPORA[name]()
    encoding = UDHR_ENCODINGS[name.rsplit("-", 1)[1]]
    decoded = b"\n".join(raw).decode(encoding, errors="replace").encode("utf-8").split(b"\n")
    return raw + decoded


@pytest.fixture(scope="module", params=sorted(SETTINGS))
def offsets_pair(request, minilm_vocab):
    lowercase, strip_accents = SETTINGS[request.param]
    ours = BertTokenizer(minilm_vocab, lowercase=lowercase, strip_accents=strip_accents)
    return ours, _reference(minilm_vocab, lowercase, strip_accents)


@pytest.mark.parametrize("name", [n for n in sorted(CORPORA) if n.startswith("multilingual/udhr/")])
def test_udhr_ids_and_offsets_parity(offsets_pair, name):
    """Every UDHR file, as stored and decoded with its encoding: ids and character offsets equal the reference's."""
    ours, ref = offsets_pair
    bad = _offset_mismatches(ours, ref, _udhr_texts(name))
    assert not bad, f"{name}: {len(bad)} lines differ, first: {bad[:1]}"


def test_cased_batches_with_nothing_to_normalize_parity(minilm_vocab):
    """Cased batches without a character clean_text removes skip normalization (`UNCHANGED_CASED_PATTERN`): every
    UDHR file decoded, its BOMs, U+FFFD and format characters left out, ids and character offsets equal the
    reference's."""
    ours = BertTokenizer(minilm_vocab, lowercase=False, strip_accents=False)
    ref = _reference(minilm_vocab, False, False)
    for name in [n for n in sorted(CORPORA) if n.startswith("multilingual/udhr/")]:
        decoded = tf.constant(_udhr_texts(name)[len(CORPORA[name]()) :])
        lines = tf.strings.regex_replace(decoded, normalization._REMOVED_RE, "").numpy().tolist()
        assert tf.strings.regex_full_match(b"\n".join(lines), UNCHANGED_CASED_PATTERN).numpy(), name
        bad = _offset_mismatches(ours, ref, lines)
        assert not bad, f"{name}: {len(bad)} lines differ, first: {bad[:1]}"


def test_udhr_files_take_the_fast_path():
    """The decoded UDHR files need no general-path character (the speed of every script rests on it)."""
    for name in [n for n in sorted(CORPORA) if n.startswith("multilingual/udhr/")]:
        lines = _udhr_texts(name)[len(CORPORA[name]()) :]
        fast = tf.strings.regex_full_match(tf.constant(lines), FAST_PATH_PATTERN).numpy()
        assert fast.all(), (name, [line[:60] for line, f in zip(lines, fast) if not f][:3])


@pytest.mark.slow
@pytest.mark.parametrize("lowercase,strip_accents", SWEEP_SETTINGS)
def test_every_code_point_fast_path_like_reference(minilm_vocab, lowercase, strip_accents):
    """Every code point through `tokenize_with_offsets` and `tokenize`: ids (and character offsets) equal the
    reference's.

    Probes "A<c>b " fill lines of their own by the route they take: code points of `FOLDING_PATTERN` (uncased:
    FastBertNormalizer, whole batches of them without a row check), those `FOLDING_KEPT_PATTERN` adds, the rest of `FAST_PATH_PATTERN` (its ICU and
    RE2 passes, then tensorflow-text's pretokenization), and the others (the general path).
    """
    code_points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    probes = tf.constant([("A%sb " % chr(c)).encode("utf-8") for c in code_points])
    fast = tf.strings.regex_full_match(probes, FAST_PATH_PATTERN).numpy()
    folds = tf.strings.regex_full_match(probes, FOLDING_PATTERN).numpy()
    kept = tf.strings.regex_full_match(probes, FOLDING_KEPT_PATTERN).numpy() & ~folds  # final sigma, sharp s
    assert not (folds & ~fast).any() and not (kept & ~fast).any() and 0 < kept.sum() < 10
    routes = 2 * fast.astype(int) + folds + 4 * kept
    lines = []
    # The kept characters' line goes into a batch of folding lines: that batch hides them (FOLDING_KEPT_PATTERN).
    for route in (3, 6, 2, 0):
        group = [c for c, r in zip(code_points, routes) if r == route]
        lines += [
            "".join("A%sb " % chr(c) for c in group[i : i + 64]).encode("utf-8") for i in range(0, len(group), 64)
        ]
    ours = BertTokenizer(minilm_vocab, lowercase=lowercase, strip_accents=strip_accents)
    ref = _reference(minilm_vocab, lowercase, strip_accents)
    bad = []
    for begin in range(0, len(lines), BATCH_SIZE):
        bad += _offset_mismatches(ours, ref, lines[begin : begin + BATCH_SIZE])
    assert not bad, f"{len(bad)} lines differ, first: {bad[:1]}"
    ids_bad = _mismatches(tf.function(ours.tokenize), ref, lines)
    assert not ids_bad, _report("tokenize", lines, ids_bad)
