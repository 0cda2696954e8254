"""The "rerank" task's fine-tuning: data from each format, refused settings, a tiny run with each loss."""

import json
import os
import types

import numpy as np
import pytest

from bert_tf import tasks
from bert_tf.checkpoints import read_settings
from bert_tf.tasks.rerank_data import RerankData, check_config, is_squad_file
from bert_tf.text import SPECIAL_TOKENS, BertTokenizer
from bert_tf.training import FinetuneConfig, finetune
from tests.helpers import tiny_model_dir

ANIMALS = {"cat": "purrs", "dog": "barks", "bird": "sings", "fish": "swims", "cow": "moos", "frog": "croaks"}
ADJECTIVES = ("small", "loud", "big")
WORDS = [*ANIMALS, *ANIMALS.values(), *ADJECTIVES, "which", "animal", "?", "the", "a", "."]


def _squad(path, articles=6):
    """SQuAD v1.1: each article two paragraphs, each about its own animal ("which small animal purrs ?" goes with
    "the small cat purrs ."; at most 9 articles, so that no two paragraphs are the same)."""
    names = list(ANIMALS)
    data = []
    for a in range(articles):
        paragraphs = []
        for p in range(2):
            animal, adjective = names[(2 * a + p) % len(names)], ADJECTIVES[(2 * a + p) // len(names)]
            context = f"the {adjective} {animal} {ANIMALS[animal]} ."
            question = f"which {adjective} animal {ANIMALS[animal]} ?"
            answer = {"text": animal, "answer_start": context.index(animal)}
            qas = [{"id": f"{a}.{p}", "question": question, "answers": [answer]}]
            paragraphs.append({"context": context, "qas": qas})
        data.append({"title": f"article {a}", "paragraphs": paragraphs})
    path.write_text(json.dumps({"version": "1.1", "data": data}), encoding="utf-8")
    return str(path)


def _config(**fields):
    defaults = dict(
        task="rerank",
        train_file=None,
        eval_file=None,
        text_column=None,
        text_pair_column=None,
        label_column=None,
        file_format=None,
        glue_task=None,
        eval_every_nth_article=0,
        rerank_loss="bce",
        rerank_negatives=2,
        rerank_eval_negatives=3,
        max_seq_length=16,
        max_train_examples=0,
        eval_batch_size=8,
        seed=0,
    )
    return types.SimpleNamespace(**{**defaults, **fields})


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    vocab = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab.write_text("\n".join([*SPECIAL_TOKENS, *WORDS]) + "\n", encoding="utf-8")
    return BertTokenizer(str(vocab))


def test_squad_train_file_held_out_articles_and_groups_files(tmp_path, tokenizer):
    squad = _squad(tmp_path / "train.json")
    assert is_squad_file(squad)
    data = RerankData(_config(train_file=squad, eval_every_nth_article=3), tokenizer, 32)
    # 6 articles, every 3rd held out: 8 training questions, 4 evaluation questions (4 paragraphs between them).
    assert data.num_train == 8 and data.num_eval == 4 and data.label_names is None
    assert data.train.candidates_per_query == 3  # the paragraph, its article's other one, one from elsewhere
    assert [len(c) for c in data.eval.candidates] == [4] * 4 and data.eval.relevance[0] == [1, 0, 0, 0]
    assert not set(data.eval.queries) & set(data.train.queries)

    triples = tmp_path / "triples.tsv"
    triples.write_text("which animal purrs ?\tthe cat purrs .\tthe dog barks .\tthe cow moos .\n", encoding="utf-8")
    labeled = tmp_path / "pairs.jsonl"
    rows = [("which animal barks ?", "the dog barks .", 1), ("which animal barks ?", "the cat purrs .", 0)]
    labeled.write_text("".join(json.dumps({"q": q, "p": p, "y": y}) + "\n" for q, p, y in rows), encoding="utf-8")
    data = RerankData(_config(train_file=str(triples), eval_file=str(triples), rerank_negatives=1), tokenizer, 32)
    assert data.num_train == 1 and data.eval.candidates == [["the cat purrs .", "the dog barks .", "the cow moos ."]]
    assert not is_squad_file(str(labeled))
    config = _config(
        train_file=str(labeled), text_column="q", text_pair_column="p", label_column="y", rerank_negatives=1
    )
    assert RerankData(config, tokenizer, 32).train.candidates == [["the dog barks .", "the cat purrs ."]]


def test_evaluation_scores_every_candidate_and_writes_ranks(tmp_path, tokenizer):
    triples = tmp_path / "dev.tsv"
    triples.write_text("which animal purrs ?\tthe cat purrs .\tthe dog barks .\n", encoding="utf-8")
    data = RerankData(_config(train_file=str(triples), eval_file=str(triples), rerank_negatives=1), tokenizer, 32)
    data.scores = lambda model: [np.array([1.0, 2.0])]  # the model's scores: the negative first
    results, write = data.evaluate(None)
    assert results == pytest.approx({"mrr@10": 0.5, "ndcg@10": 1 / np.log2(3)})
    write(str(tmp_path))
    lines = (tmp_path / "predictions.tsv").read_text(encoding="utf-8").splitlines()
    assert lines == ["query\tcandidate\trelevance\tscore\trank", "0\t0\t1\t1.000000\t2", "0\t1\t0\t2.000000\t1"]


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(glue_task="mrpc"), r"not GLUE layouts or tfds"),
        (dict(train_file="tfds:msmarco"), r"not GLUE layouts or tfds"),
        (dict(text_column="q", text_pair_column="p"), r"need text_column, text_pair_column and label_column"),
        (dict(rerank_loss="listwise", rerank_negatives=0), r"rerank_negatives >= 1. Received: rerank_negatives=0"),
    ],
)
def test_settings_the_task_cannot_use_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        check_config(_config(**{"train_file": "train.tsv", **fields}))


def test_the_task_is_registered_with_its_options():
    task = tasks.get("rerank")
    assert task.best_metric == "mrr@10" and task.example_unit == "queries"
    config = FinetuneConfig(task="rerank", init="x", train_file="t.json", model_dir="m")
    assert (config.rerank_loss, config.rerank_negatives, config.rerank_eval_negatives) == ("bce", 3, 29)


def _triples(path, count, seed):
    """`query, positive, negative, negative` rows: the positive names a sound, the negatives do not."""
    rng = np.random.default_rng(seed)
    names, rows = list(ANIMALS), []
    for _ in range(count):
        animal, other, third = rng.choice(names, size=3, replace=False)
        adjective = rng.choice(ADJECTIVES)
        query = f"which {adjective} animal ?"
        rows.append(f"{query}\tthe {animal} {ANIMALS[animal]} .\ta {adjective} {other} .\tthe {third} .\n")
    path.write_text("".join(rows), encoding="utf-8")
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["bce", "listwise"])
def test_a_tiny_cross_encoder_learns_to_rank_the_positive_first(tmp_path, loss):
    init = tiny_model_dir(tmp_path / "init", WORDS, max_position_embeddings=32)
    model_dir = tmp_path / "model"
    results = finetune(
        FinetuneConfig(
            task="rerank",
            init=init,
            train_file=_triples(tmp_path / "train.tsv", 64, seed=0),
            eval_file=_triples(tmp_path / "dev.tsv", 12, seed=1),
            model_dir=str(model_dir),
            max_seq_length=16,
            global_batch_size=8,
            train_steps=40,
            learning_rate=3e-3,
            rerank_loss=loss,
            rerank_negatives=2,
        ),
        log=lambda message: None,
    )
    assert set(results) >= {"mrr@10", "ndcg@10"}
    # The positive is the only candidate naming a sound; ties would rank it last (a constant scorer: MRR 1/3).
    assert results["mrr@10"] > 0.9
    settings = read_settings(str(model_dir))
    assert settings["task"] == "rerank" and settings["max_seq_length"] == 16
    model, _ = tasks.load_model(str(model_dir))
    assert model.num_classes == 1
    lines = (model_dir / "predictions.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "query\tcandidate\trelevance\tscore\trank" and len(lines) > 1
    assert os.path.exists(model_dir / "eval_results.json")
