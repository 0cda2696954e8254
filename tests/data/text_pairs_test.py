"""Text pairs for embedding training: readers (bad rows named by line) and the `[B, K, T]` batches."""

import json

import numpy as np
import pytest

from bert_tf.data import SquadExample, read_text_pairs, squad_pairs, text_pairs
from bert_tf.text import SPECIAL_TOKENS, BertTokenizer

WORDS = "a cat dog sat ran on the mat".split()


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_pairs_triplets_and_scored_pairs_from_each_format(tmp_path):
    tsv = _write(tmp_path / "pairs.tsv", "q\tp\nthe cat\ta cat sat\n\nthe dog\ta dog ran\n")
    pairs = read_text_pairs(tsv, "q", "p")
    assert (pairs.anchors, pairs.positives, pairs.negatives, pairs.scores) == (
        ["the cat", "the dog"],
        ["a cat sat", "a dog ran"],
        None,
        None,
    )
    assert pairs.lines == [2, 4] and len(pairs) == 2 and pairs.texts_per_example == 2

    rows = [{"q": "cat", "p": "a cat", "n": "a dog"}, {"q": "dog", "p": "a dog", "n": "a cat"}]
    jsonl = _write(tmp_path / "triplets.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    triplets = read_text_pairs(jsonl, "q", "p", negative_column="n")
    assert triplets.negatives == ["a dog", "a cat"] and triplets.texts_per_example == 3

    csv = _write(tmp_path / "sts.csv", 'a,b,score\n"the cat, sat",a cat,4.5\nthe dog,a mat,0\n')
    scored = read_text_pairs(csv, "a", "b", score_column="score")
    assert scored.anchors[0] == "the cat, sat" and scored.scores == [4.5, 0.0]

    headerless = _write(tmp_path / "plain.tsv", "the cat\ta cat\t1\n")
    assert read_text_pairs(headerless, 0, 1, score_column=2).scores == [1.0]
    assert triplets.subset([1]).anchors == ["dog"] and triplets.subset([1]).negatives == ["a cat"]


@pytest.mark.parametrize(
    "content, kwargs, message",
    [
        ("q\tp\nthe cat\ta cat\nthe dog\t \n", {}, r"pairs.tsv:3: the text of column 'p' is empty"),
        ("q\tp\ts\nthe cat\ta cat\t0.5\nthe dog\ta dog\thigh\n", {"score_column": "s"}, r"pairs.tsv:3: the score"),
        ("q\tp\ts\nthe cat\ta cat\tnan\n", {"score_column": "s"}, r"pairs.tsv:2: the score .* finite"),
        ("q\tp\nthe cat\n", {}, r"pairs.tsv:2"),
        ("q\tx\nthe cat\ta cat\n", {}, r"pairs.tsv.*'p'"),
        ("q\tp\n", {}, r"pairs.tsv: no example"),
    ],
)
def test_bad_rows_are_named_by_file_and_line(tmp_path, content, kwargs, message):
    path = _write(tmp_path / "pairs.tsv", content)
    with pytest.raises(ValueError, match=message):
        read_text_pairs(path, "q", "p", **kwargs)


def test_bad_arguments(tmp_path):
    path = _write(tmp_path / "pairs.tsv", "q\tp\nthe cat\ta cat\n")
    with pytest.raises(ValueError, match="both columns"):
        read_text_pairs(path, "q", None)
    with pytest.raises(ValueError, match="not both"):
        read_text_pairs(path, "q", "p", negative_column="n", score_column="s")
    with pytest.raises(FileNotFoundError):
        read_text_pairs(str(tmp_path / "missing.tsv"), "q", "p")


def test_squad_pairs_are_questions_and_their_paragraphs():
    examples = [
        SquadExample(id="1", question="who sat?", context="the cat sat.", answers=[]),
        SquadExample(id="2", question="who ran?", context="the dog ran.", answers=[]),
    ]
    pairs = squad_pairs(examples, "train.json")
    assert pairs.anchors == ["who sat?", "who ran?"] and pairs.positives == ["the cat sat.", "the dog ran."]
    assert pairs.path == "train.json" and pairs.negatives is None


@pytest.mark.slow
def test_batches_pack_each_text_alone(tmp_path):
    vocab = _write(tmp_path / "vocab.txt", "\n".join([*SPECIAL_TOKENS, *WORDS]) + "\n")
    tokenizer = BertTokenizer(vocab)
    pairs = text_pairs.TextPairs(
        ["the cat", "a dog", "the dog"], ["cat sat on the mat", "dog", "dog"], ["ran", "the mat", "a"], [0.5, 1.0, 0.0]
    )
    features, scores, positive_ids = next(iter(text_pairs.make_dataset(pairs, tokenizer, 8, 3)))
    assert features["token_ids"].shape == (3, 3, 8) and scores.numpy().tolist() == [0.5, 1.0, 0.0]
    assert positive_ids.numpy().tolist() == [0, 1, 1]  # the same positive text, the same id
    ids = {piece: i for i, piece in enumerate([*SPECIAL_TOKENS, *WORDS])}
    cls, sep = ids["[CLS]"], ids["[SEP]"]
    np.testing.assert_array_equal(features["token_ids"][0, 0], [cls, ids["the"], ids["cat"], sep, 0, 0, 0, 0])
    # cut to max_seq_length with the final [SEP] kept
    row = [cls, ids["cat"], ids["sat"], ids["on"], ids["the"], ids["mat"], sep, 0]
    np.testing.assert_array_equal(features["token_ids"][0, 1], row)
    np.testing.assert_array_equal(features["token_ids"][1, 2], [cls, ids["the"], ids["mat"], sep, 0, 0, 0, 0])
    assert features["segment_ids"].numpy().max() == 0
    np.testing.assert_array_equal(features["padding_mask"][1, 1], [1, 1, 1, 0, 0, 0, 0, 0])
    # a last partial batch is dropped (in-batch negatives need full batches)
    assert len(list(text_pairs.make_dataset(pairs, tokenizer, 8, 4))) == 0
