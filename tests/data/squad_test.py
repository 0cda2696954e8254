"""SQuAD data: reading v1.1/v2.0, windows with stride, character offsets, gold answers back from logits."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.squad import extract_answers, make_dataset, make_windows, read_squad
from bert_tf.metrics import normalize_answer, squad_metrics
from tests.conftest import DATA_DIR

XQUAD = os.path.join(DATA_DIR, "squad", "xquad.en.json")


@pytest.fixture(scope="module")
def xquad():
    return read_squad(XQUAD)


def _squad_file(tmp_path, context, qas, version="v2.0"):
    path = tmp_path / "squad.json"
    path.write_text(
        json.dumps(
            {"version": version, "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]},
            ensure_ascii=False,
        ),
        "utf-8",
    )
    return str(path)


def _gold_logits(windows):
    """One-hot-like logits at each window's start/end labels (windows without the answer: all zero)."""
    start = np.zeros(windows.token_ids.shape)
    end = np.zeros(windows.token_ids.shape)
    rows = np.flatnonzero(windows.start_positions > 0)
    start[rows, windows.start_positions[rows]] = 10.0
    end[rows, windows.end_positions[rows]] = 10.0
    return start, end


def test_read_xquad_counts(xquad):
    assert len(xquad) == 1190
    assert len({e.title for e in xquad}) == 48
    assert len({(e.title, e.context) for e in xquad}) == 240
    assert all(len(e.answers) == 1 and not e.is_impossible for e in xquad)
    first = xquad[0]
    assert first.id == "56beb4343aeaaa14008c925b" and first.answers[0] == {"text": "308", "answer_start": 34}


@pytest.mark.parametrize("max_seq_length, doc_stride", [(384, 128), (128, 32)])
def test_gold_answers_round_trip(tokenizer, xquad, max_seq_length, doc_stride):
    windows = make_windows(xquad, tokenizer, max_seq_length=max_seq_length, doc_stride=doc_stride, max_query_length=64)
    assert windows.token_ids.shape == (len(windows), max_seq_length) and not windows.unmapped
    if max_seq_length == 128:
        assert len(windows) > 3 * len(xquad)  # contexts span many windows; answers cross window edges
    # Every gold answer is labelled in some window.
    assert set(windows.example_index[windows.start_positions > 0].tolist()) == set(range(len(xquad)))
    labelled = windows.start_positions > 0
    assert (windows.end_positions[labelled] >= windows.start_positions[labelled]).all()
    assert (windows.segment_ids[np.arange(len(windows)), windows.start_positions] == labelled).all()
    answers = extract_answers(windows, *_gold_logits(windows))
    exact = [e for e in xquad if answers[e.id] == e.answers[0]["text"]]
    assert len(exact) >= 1189, len(exact)
    for example in xquad:
        gold, predicted = example.answers[0], answers[example.id]
        if predicted != gold["text"]:
            # Only a gold answer that ends inside a word (XQuAD: "(2,70" of "(2,700") comes back as the
            # whole tokens covering it.
            end = gold["answer_start"] + len(gold["text"])
            assert example.context[end - 1].isalnum() and example.context[end].isalnum()
            assert predicted == example.context[gold["answer_start"] : gold["answer_start"] + len(predicted)]
            assert predicted.startswith(gold["text"])
    assert squad_metrics(xquad, answers)["exact_match"] >= 100 * 1189 / 1190 - 1e-9
    assert extract_answers(windows, *_gold_logits(windows), require_max_context=True) == answers


def test_multibyte_character_offsets(tmp_path, tokenizer):
    context = "In Zürich 😀 東京 café, naïve São Paulo."
    qas = [
        {
            "id": q,
            "question": f"Where is {text}?",
            "answers": [{"text": text, "answer_start": context.index(text)}],
            "is_impossible": False,
        }
        for q, text in (("a", "東京"), ("b", "café"), ("c", "naïve São Paulo"), ("d", "Zürich"))
    ]
    examples = read_squad(_squad_file(tmp_path, context, qas))
    windows = make_windows(examples, tokenizer, max_seq_length=32, doc_stride=8, max_query_length=10)
    row = 0
    inside = windows.char_starts[row] >= 0
    pieces = [context[s:e] for s, e in zip(windows.char_starts[row][inside], windows.char_ends[row][inside])]
    assert pieces[:6] == ["In", "Zürich", "😀", "東", "京", "café"]
    ids = windows.token_ids[row][inside]
    assert ids[2] == tokenizer.unk_id
    answers = extract_answers(windows, *_gold_logits(windows))
    assert answers == {"a": "東京", "b": "café", "c": "naïve São Paulo", "d": "Zürich"}


def test_v2_impossible_question(tmp_path, tokenizer):
    context = "The castle was built in 1066 by William."
    qas = [
        {
            "id": "no",
            "question": "Who destroyed it?",
            "answers": [],
            "is_impossible": True,
            "plausible_answers": [{"text": "William", "answer_start": 32}],
        },
        {
            "id": "yes",
            "question": "When was it built?",
            "answers": [{"text": "1066", "answer_start": 24}],
            "is_impossible": False,
        },
    ]
    examples = read_squad(_squad_file(tmp_path, context, qas))
    assert examples[0].is_impossible and examples[0].answers == []
    assert examples[0].plausible_answers == [{"text": "William", "answer_start": 32}]
    windows = make_windows(examples, tokenizer, max_seq_length=32, doc_stride=16, max_query_length=8)
    assert windows.start_positions[windows.example_index == 0].tolist() == [0]
    assert windows.end_positions[windows.example_index == 0].tolist() == [0]
    start, end = _gold_logits(windows)
    start[windows.example_index == 0, 0] = end[windows.example_index == 0, 0] = 10.0  # null wins for "no"
    start[windows.example_index == 1, 0] = end[windows.example_index == 1, 0] = 1.0
    assert extract_answers(windows, start, end, null_threshold=0.0) == {"no": "", "yes": "1066"}
    assert extract_answers(windows, start, end)["no"] != ""  # v1.1 rule: always a span
    scores = squad_metrics(examples, {"no": "", "yes": "1066"})
    assert (scores["exact_match"], scores["f1"], scores["NoAns_total"], scores["HasAns_total"]) == (100.0, 100.0, 1, 1)


def test_answer_mismatch_is_reported(tmp_path):
    path = _squad_file(
        tmp_path,
        "Paris is big.",
        [{"id": "q1", "question": "Which city?", "answers": [{"text": "Paris", "answer_start": 1}]}],
    )
    with pytest.raises(ValueError, match="q1: answer 'Paris' at 1"):
        read_squad(path)
    assert read_squad(path, strict=False)[0].answers == [{"text": "Paris", "answer_start": 1}]


def test_dataset_batches(tokenizer, xquad):
    windows = make_windows(xquad[:40], tokenizer, max_seq_length=128, doc_stride=64)
    features, labels = next(iter(make_dataset(windows, batch_size=16)))
    assert {k: tuple(v.shape) for k, v in features.items()} == {
        "token_ids": (16, 128),
        "segment_ids": (16, 128),
        "padding_mask": (16, 128),
    }
    assert all(v.dtype == tf.int32 for v in features.values())
    assert set(labels) == {"start_logits", "end_logits"} and tuple(labels["start_logits"].shape) == (16,)
    assert labels["start_logits"].numpy().tolist() == windows.start_positions[:16].tolist()
    sizes = [len(f["token_ids"]) for f in make_dataset(windows, batch_size=16, labels=False)]
    assert sum(sizes) == len(windows)
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
