"""Tagging data: CoNLL reading, IOB1 -> BIO, first-piece alignment, windows, predictions back to words."""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.tagging import iob1_to_bio, make_dataset, read_conll, sorted_label_names, word_predictions
from tests.conftest import DATA_DIR

TESTA = os.path.join(DATA_DIR, "conll2003", "eng.testa")


@pytest.fixture(scope="module")
def testa():
    return read_conll(TESTA)


def _collect(dataset):
    """All batches of a `with_word_index` dataset as numpy: features, labels, weights, index dicts."""
    batches = list(dataset)
    features = {k: np.concatenate([b[0][k].numpy() for b in batches]) for k in batches[0][0]}
    labels = np.concatenate([b[1].numpy() for b in batches])
    weights = np.concatenate([b[2].numpy() for b in batches])
    return features, labels, weights, [b[3] for b in batches]


def test_iob1_to_bio():
    assert iob1_to_bio(["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC", "I-ORG", "I-MISC"]) == [
        "B-PER",
        "I-PER",
        "O",
        "B-LOC",
        "B-LOC",
        "I-LOC",
        "B-ORG",
        "B-MISC",
    ]
    bio = ["B-PER", "I-PER", "B-PER", "O", "B-LOC"]
    assert iob1_to_bio(bio) == bio
    assert iob1_to_bio(["NNP", "I-NP", "VBD"]) == ["NNP", "B-NP", "VBD"]


def test_read_conll_schemes_and_docstart(tmp_path):
    path = tmp_path / "a.conll"
    path.write_text(
        "-DOCSTART- -X- O O\n\nEU NNP I-ORG\nrejects VBZ O\nGerman JJ I-MISC\n\n\n"
        "Peter NNP I-PER\nBlack\u00a0burn\tNNP I-PER\r\nParis NNP B-PER\n",
        "utf-8",
    )
    auto = read_conll(str(path))
    assert auto.scheme == "IOB1" and auto.lines == [3, 8]
    assert auto.sentences == [["EU", "rejects", "German"], ["Peter", "Black\u00a0burn", "Paris"]]  # NBSP inside a word
    assert auto.tags == [["B-ORG", "O", "B-MISC"], ["B-PER", "I-PER", "B-PER"]]
    assert auto.label_names == ["O", "B-MISC", "B-ORG", "B-PER", "I-PER"]
    kept = read_conll(str(path), scheme="BIO")
    assert kept.tags[0] == ["I-ORG", "O", "I-MISC"]
    assert read_conll(str(path), column=1).tags[0] == ["NNP", "VBZ", "JJ"]


def test_malformed_lines_name_file_and_line(tmp_path):
    path = tmp_path / "bad.conll"
    path.write_text("EU NNP B-ORG\nrejects O\n")
    with pytest.raises(ValueError, match=r"bad\.conll:2: malformed line"):
        read_conll(str(path))
    with pytest.raises(ValueError, match="scheme"):
        read_conll(str(path), scheme="BIOES")


def test_eng_testa_counts(testa):
    assert len(testa) == 3250
    assert sum(len(s) for s in testa.sentences) == 51362
    assert testa.scheme == "BIO"  # the shared copy is already BIO (no I- tag opens an entity)
    assert testa.label_names == ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    assert testa.sentences[0][:3] == ["CRICKET", "-", "LEICESTERSHIRE"]


# Hand cases, windowed together at T = 10 (8 pieces a window): a two-piece name, words that give no
# piece, and a sentence of 40 words (many two-piece ones) cut into several windows.
HAND_SENTENCES = [
    ["Johanson", "lives", "in", "Zürich", "."],
    ["a", "\x07", "b", "\u200b", "c"],
    [f"w{i}" if i % 3 else "Johanson" for i in range(40)],
]
HAND_TAGS = [
    ["B-PER", "O", "O", "B-LOC", "O"],
    ["O", "B-LOC", "O", "I-LOC", "O"],
    ["O" if i % 2 else "B-PER" for i in range(40)],
]


@pytest.fixture(scope="module")
def hand(tokenizer):
    names = sorted_label_names(HAND_TAGS)
    assert names == ["O", "B-LOC", "I-LOC", "B-PER"]
    dataset = make_dataset(
        HAND_SENTENCES, HAND_TAGS, tokenizer, names, max_seq_length=10, batch_size=4, with_word_index=True
    )
    features, labels, weights, index = _collect(dataset)
    sentence = np.concatenate([i["sentence_index"].numpy() for i in index])
    word_pieces = tokenizer.tokenize(tf.constant(sum(HAND_SENTENCES, []))).to_list()
    return names, features, labels, weights, index, sentence, word_pieces


def test_first_piece_alignment(tokenizer, hand):
    _, features, labels, weights, index, sentence, word_pieces = hand
    row = np.flatnonzero(sentence == 0)[0]
    pieces = word_pieces[:5]
    assert pieces[0] == [tokenizer.token_to_id("johan"), tokenizer.token_to_id("##son")]
    ids = [tokenizer.cls_id] + sum(pieces, []) + [tokenizer.sep_id]
    assert features["token_ids"][row, : len(ids)].tolist() == ids
    first = np.cumsum([1] + [len(p) for p in pieces[:-1]])  # token position of each word's first piece
    expected_weights = np.zeros(10)
    expected_weights[first] = 1
    assert weights[row].tolist() == expected_weights.tolist()  # 0 on "##son", specials and padding
    assert labels[row, first].tolist() == [3, 0, 0, 1, 0] and labels[row, 2] == 0
    word_index = np.concatenate([i["word_index"].numpy() for i in index])
    assert word_index[row, first].tolist() == [0, 1, 2, 3, 4]


def test_words_without_pieces_become_unk(tokenizer, hand):
    _, features, labels, weights, index, sentence, word_pieces = hand
    assert [len(p) for p in word_pieces[5:10]] == [1, 0, 1, 0, 1]
    row = np.flatnonzero(sentence == 1)[0]
    assert features["token_ids"][row, 2] == tokenizer.unk_id and features["token_ids"][row, 4] == tokenizer.unk_id
    assert weights[row].tolist() == [0, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    assert labels[row, 1:6].tolist() == [0, 1, 0, 2, 0]


def test_long_sentences_become_windows(tokenizer, hand):
    names, features, labels, weights, index, sentence, _ = hand
    rows = sentence == 2
    assert rows.sum() >= 7  # 54 pieces, 8 a window
    assert weights[rows].sum() == 40  # every word labelled exactly once over all windows
    assert (features["token_ids"][:, 0] == tokenizer.cls_id).all()
    assert word_predictions(labels, index, names) == HAND_TAGS
    assert word_predictions(labels, index) == [[names.index(t) for t in tags] for tags in HAND_TAGS]


@pytest.mark.slow
def test_round_trip_eng_testa(tokenizer, testa):
    """Gold labels fed back as predictions give the gold word tags: alignment and windows lose nothing."""
    for max_seq_length, stride in ((128, None), (16, 5)):
        _, labels, weights, index = _collect(
            make_dataset(
                testa.sentences,
                testa.tags,
                tokenizer,
                testa.label_names,
                max_seq_length=max_seq_length,
                batch_size=256,
                stride=stride,
                with_word_index=True,
            )
        )
        assert weights.sum() == 51362
        assert word_predictions(labels, index, testa.label_names) == testa.tags
        one_hot = np.eye(len(testa.label_names))[labels]  # logits [N, T, C]
        assert word_predictions(one_hot, index, testa.label_names) == testa.tags


def test_prediction_mode_and_errors(tokenizer):
    dataset = make_dataset([["Hello", "world"]], None, tokenizer, ["O"], max_seq_length=8, batch_size=2)
    assert set(dataset.element_spec) == {"token_ids", "segment_ids", "padding_mask"}
    with pytest.raises(ValueError, match="unknown tag 'B-Y'"):
        make_dataset([["a"]], [["B-Y"]], tokenizer, ["O"], max_seq_length=8, batch_size=2)
    with pytest.raises(ValueError, match="stride"):
        make_dataset([["a"]], [["O"]], tokenizer, ["O"], max_seq_length=8, batch_size=2, stride=7)
