"""Vocabulary builder: layout, cased/uncased, invalid UTF-8 counted, real corpus."""

import json
import os

import pytest
from tokenizers import BertWordPieceTokenizer

from bert_tf.text.vocab import (
    BERT_BPE_SPECIAL_TOKENS,
    BPE_SPECIAL_TOKENS,
    SPECIAL_TOKENS,
    UNIGRAM_SPECIAL_TOKENS,
    build_bert_bpe_vocab,
    build_bpe_vocab,
    build_unigram_vocab,
    build_vocab,
)
from tests.conftest import DATA_DIR

TEXT = ("The Quick brown fox jumps over the lazy dog.\nÉmile naïvely jumped; the dogs were jumping quickly!\n") * 50


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def test_specials_first_and_uncased(tmp_path):
    corpus = tmp_path / "a.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    summary = build_vocab(
        [str(corpus)], str(tmp_path / "vocab.txt"), vocab_size=120, min_frequency=1, show_progress=False
    )
    pieces = _read(tmp_path / "vocab.txt")
    assert tuple(pieces[:5]) == SPECIAL_TOKENS
    assert len(pieces) == summary.vocab_size <= 120
    assert "the" in pieces and "The" not in pieces and "emile" in pieces
    assert summary.lines == 100 and summary.replaced_lines == 0


def test_cased_keeps_case_and_accents(tmp_path):
    corpus = tmp_path / "a.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    build_vocab(
        str(corpus),
        str(tmp_path / "vocab.txt"),
        vocab_size=200,
        lowercase=False,
        strip_accents=False,
        min_frequency=1,
        show_progress=False,
    )
    pieces = _read(tmp_path / "vocab.txt")
    assert "The" in pieces and "É" in pieces


def test_invalid_utf8_lines_are_counted_not_fatal(tmp_path):
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes(b"caf\xe9 au lait\nplain line\n\xff\xfe broken\n")
    summary = build_vocab(str(corpus), str(tmp_path / "vocab.txt"), vocab_size=50, min_frequency=1, show_progress=False)
    assert summary.replaced_lines == 2 and summary.lines == 3


def test_bad_limit_alphabet_is_named(tmp_path):
    with pytest.raises(ValueError, match="limit_alphabet=0"):
        build_vocab(str(tmp_path / "a.txt"), str(tmp_path / "vocab.txt"), limit_alphabet=0, show_progress=False)


def test_missing_input_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        build_vocab(str(tmp_path / "nothing-here*.txt"), str(tmp_path / "vocab.txt"), show_progress=False)


def test_gutenberg_vocab_tokenizes_its_corpus(tmp_path):
    output = str(tmp_path / "vocab.txt")
    summary = build_vocab(
        os.path.join(DATA_DIR, "corpus", "gutenberg", "*.txt"), output, vocab_size=30522, show_progress=False
    )
    assert summary.files == 13
    assert summary.replaced_lines > 0  # the two Latin-1 books
    assert 25_000 < summary.vocab_size <= 30522
    reference = BertWordPieceTokenizer(output, lowercase=True)
    encoded = reference.encode("It is a truth universally acknowledged.", add_special_tokens=False)
    assert "[UNK]" not in encoded.tokens


def test_two_builds_of_one_corpus_write_the_same_file(tmp_path):
    # Hugging Face's trainer alone numbers the letters that continue a word in a hash order new at every build, and
    # breaks ties by those numbers: on UDHR's scripts with a 300-letter alphabet its vocabularies differed every time.
    corpus = os.path.join(DATA_DIR, "multilingual", "udhr", "*")
    written = []
    for k in range(2):
        path = tmp_path / f"vocab-{k}.txt"
        build_vocab(corpus, str(path), vocab_size=3000, min_frequency=1, limit_alphabet=300, show_progress=False)
        written.append(path.read_bytes())
    assert written[0] == written[1]
    pieces = _read(tmp_path / "vocab-0.txt")
    # BERT's layout: the special tokens, the letters, the continuing letters, then the merges.
    letters = [p for p in pieces if len(p) == 1]
    continuing = [p for p in pieces if p.startswith("##") and len(p) == 3]
    assert len(letters) == 300 and pieces[5 : 5 + 300] == sorted(letters)
    assert pieces[305 : 305 + len(continuing)] == sorted(continuing) and set(c[2] for c in continuing) <= set(letters)
    assert len(pieces) == 3000


def _corpus(tmp_path):
    """TEXT's 100 lines and one that is not UTF-8 (its byte replaced)."""
    corpus = tmp_path / "a.txt"
    corpus.write_bytes(TEXT.encode("utf-8") + b"caf\xe9\n")
    return corpus


def _assert_refuses(build, tmp_path, corpus, too_small, empty_text=""):
    """`build` refuses a `vocab_size` of `too_small` and a corpus of `empty_text` by name, writing nothing."""
    with pytest.raises(ValueError, match="vocab_size"):
        build([str(corpus)], str(tmp_path / "small"), vocab_size=too_small, show_progress=False)
    empty = tmp_path / "empty.txt"
    empty.write_text(empty_text)
    with pytest.raises(ValueError, match="No text"):
        build([str(empty)], str(tmp_path / "none"), vocab_size=300, show_progress=False)
    assert not os.path.exists(tmp_path / "small") and not os.path.exists(tmp_path / "none")


def test_bpe_vocab_layout_and_errors(tmp_path):
    corpus = _corpus(tmp_path)
    output = tmp_path / "bpe"
    summary = build_bpe_vocab([str(corpus)], str(output), vocab_size=400, min_frequency=1, show_progress=False)
    assert sorted(os.listdir(output)) == ["merges.txt", "vocab.json"]
    with open(output / "vocab.json", encoding="utf-8") as f:
        vocab = json.load(f)
    assert [vocab[t] for t in BPE_SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert len(vocab) == summary.vocab_size <= 400 and "The" in vocab and "Ġthe" in vocab  # cased
    assert summary.lines == 101 and summary.replaced_lines == 1
    _assert_refuses(build_bpe_vocab, tmp_path, corpus, too_small=261)


def test_bert_bpe_vocab_is_a_modernbert_tokenizer_json(tmp_path):
    """ModernBERT's kind: one tokenizer.json, BERT's special tokens at ids 0-4 in ModernBERT's order, its
    template; Hugging Face `tokenizers` and bert_tf's BytePairTokenizer give the same ids ([MASK] takes the space
    before it)."""
    import tensorflow as tf
    from tokenizers import Tokenizer

    from bert_tf.text import BytePairTokenizer, packer_for

    corpus = _corpus(tmp_path)
    output = tmp_path / "bpe"
    summary = build_bert_bpe_vocab([str(corpus)], str(output), vocab_size=400, min_frequency=1, show_progress=False)
    assert sorted(os.listdir(output)) == ["tokenizer.json"] and summary.output == str(output / "tokenizer.json")
    assert summary.lines == 101 and summary.replaced_lines == 1
    with open(output / "tokenizer.json", encoding="utf-8") as f:
        data = json.load(f)
    assert [data["model"]["vocab"][t] for t in BERT_BPE_SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert len(data["model"]["vocab"]) == summary.vocab_size <= 400
    assert [t["lstrip"] for t in data["added_tokens"] if t["content"] == "[MASK]"] == [True]
    theirs = Tokenizer.from_file(str(output / "tokenizer.json"))
    ours = BytePairTokenizer.from_tokenizer_json(str(output / "tokenizer.json"))
    assert (ours.cls_id, ours.sep_id, ours.pad_id, ours.mask_id, ours.unk_id) == (1, 2, 3, 4, 0)
    text, pair = "The quick dog [MASK] jumped.", "Émile was quick!"
    packed = packer_for(ours, 32)(ours.tokenize(tf.constant([text])), ours.tokenize(tf.constant([pair])))
    row = packed["token_ids"].numpy()[0]
    encoding = theirs.encode(text, pair)
    assert row[: len(encoding.ids)].tolist() == encoding.ids and set(encoding.type_ids) == {0}
    assert encoding.ids[0] == 1 and encoding.ids.count(2) == 2 and 4 in encoding.ids
    _assert_refuses(build_bert_bpe_vocab, tmp_path, corpus, too_small=261)


def test_unigram_vocab_layout_and_errors(tmp_path):
    from sentencepiece import SentencePieceProcessor

    corpus = _corpus(tmp_path)
    for family in ("albert", "deberta-v2"):
        output = tmp_path / family
        summary = build_unigram_vocab([str(corpus)], str(output), vocab_size=80, family=family, show_progress=False)
        name = "spiece.model" if family == "albert" else "spm.model"
        assert sorted(os.listdir(output)) == sorted([name, "tokenizer.json", "tokenizer_config.json"])
        model = SentencePieceProcessor(model_file=str(output / name))
        assert [model.id_to_piece(i) for i in range(5)] == list(UNIGRAM_SPECIAL_TOKENS[family])
        pieces = [model.id_to_piece(i) for i in range(5, model.get_piece_size())]
        assert any(p != p.lower() for p in pieces) == (family == "deberta-v2")  # ALBERT's is uncased
        assert summary.vocab_size == model.get_piece_size() <= 80 and summary.replaced_lines == 1
        with open(output / "tokenizer_config.json", encoding="utf-8") as f:
            config = json.load(f)
        assert config["do_lower_case"] == (family == "albert")
    with pytest.raises(ValueError, match="family"):
        build_unigram_vocab([str(corpus)], str(tmp_path / "x"), family="xlnet", show_progress=False)
    _assert_refuses(build_unigram_vocab, tmp_path, corpus, too_small=5, empty_text="\n\n")
    assert not os.path.exists(tmp_path / "x")
