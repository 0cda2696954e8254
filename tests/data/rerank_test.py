"""Reranking data: the readers (rows merged by query, bad lines named), SQuAD groups, training rows, `[B, K, T]`."""

import json

import numpy as np
import pytest

from bert_tf.data import SquadExample, rerank
from bert_tf.text import SPECIAL_TOKENS, BertTokenizer

WORDS = "a cat dog sat ran on the mat where who".split()


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_groups_from_tsv_csv_and_jsonl_merge_a_querys_rows(tmp_path):
    # MS MARCO-style triples: the same query on several rows is one group; a passage given twice is kept once.
    tsv = _write(
        tmp_path / "triples.tsv",
        "the cat\ta cat sat\ta dog ran\n\nthe dog\ta dog ran\nthe cat\ta cat sat\ton the mat\n",
    )
    groups = rerank.read_groups(tsv)
    assert groups.queries == ["the cat", "the dog"]
    assert groups.candidates == [["a cat sat", "a dog ran", "on the mat"], ["a dog ran"]]
    assert groups.relevance == [[1, 0, 0], [1]]
    assert groups.lines == [1, 3] and len(groups) == 2 and groups.num_pairs == 4

    csv = _write(tmp_path / "rows.csv", '"the cat, sat",a cat,a dog,a mat\n')
    assert rerank.read_groups(csv).candidates == [["a cat", "a dog", "a mat"]]

    lines = [
        {"query": "cat", "positive": "a cat", "negatives": ["a dog", "a mat"]},
        {"query": "dog", "pos": ["a dog", "the dog"], "neg": "a cat"},
        {"query": "cat", "positives": ["a mat"]},  # a negative above is a positive here: relevant wins
    ]
    jsonl = _write(tmp_path / "groups.jsonl", "".join(json.dumps(r) + "\n" for r in lines))
    groups = rerank.read_groups(jsonl)
    assert groups.candidates == [["a cat", "a dog", "a mat"], ["a dog", "the dog", "a cat"]]
    assert groups.relevance == [[1, 0, 1], [1, 1, 0]]
    assert groups.subset([1]).queries == ["dog"] and groups.subset([1]).lines == [2]
    queries, passages, group = groups.pairs()
    assert queries[:3] == ["cat"] * 3 and passages[3:] == ["a dog", "the dog", "a cat"]
    assert group.tolist() == [0, 0, 0, 1, 1, 1]


def test_labeled_pairs_are_grouped_by_query(tmp_path):
    path = _write(tmp_path / "pairs.tsv", "q\tp\tlabel\ncat\ta cat\t1\ndog\ta cat\t0\ncat\ta dog\t0\ndog\ta dog\t2\n")
    groups = rerank.read_labeled_pairs(path, "q", "p", "label")
    assert groups.queries == ["cat", "dog"]
    assert groups.candidates == [["a cat", "a dog"], ["a cat", "a dog"]]
    assert groups.relevance == [[1, 0], [0, 2]] and groups.lines == [2, 3]


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("bad.tsv", "the cat\ta cat\nthe dog\n", r"bad.tsv:2: a row is query, positive.*received 1 field"),
        ("bad.tsv", "the cat\ta cat\n\t a dog\n", r"bad.tsv:2: the query \(field 1\) is empty"),
        ("bad.tsv", "the cat\ta cat\t \n", r"bad.tsv:1: the passage \(field 3\) is empty"),
        ("bad.jsonl", '{"query": "cat", "positive": "a cat"}\n[1]\n', r"bad.jsonl:2: expected a JSON object"),
        ("bad.jsonl", '{"query": "cat", "negative": "a dog"}\n', r"bad.jsonl:1: no positive passage"),
        ("bad.jsonl", '{"query": "cat", "positive": ["a", 3]}\n', r"bad.jsonl:1: 'positive' .* list of strings"),
        ("bad.jsonl", '{"q": "cat", "positive": "a"}\n', r"bad.jsonl:1: 'query' must be a string"),
        ("bad.jsonl", '{"query": "cat", "positive": "a"\n', r"bad.jsonl:1: invalid JSON"),
        ("empty.tsv", "\n\n", r"empty.tsv: no query in the file"),
    ],
)
def test_bad_group_files_name_the_file_and_line(tmp_path, name, content, message):
    with pytest.raises(ValueError, match=message):
        rerank.read_groups(_write(tmp_path / name, content))


@pytest.mark.parametrize(
    "content, message",
    [
        ("q\tp\tl\ncat\ta cat\tyes\n", r"pairs.tsv:2: the relevance \(column 'l'\) must be a non-negative integer"),
        ("q\tp\tl\ncat\ta cat\t0.5\n", r"pairs.tsv:2: the relevance"),
        ("q\tp\tl\ncat\ta cat\t-1\n", r"pairs.tsv:2: the relevance"),
        ("q\tp\tl\ncat\ta cat\t0\ncat\ta dog\t0\n", r"pairs.tsv:2: query 'cat' has no relevant passage"),
        ("q\tp\tl\ncat\t \t1\n", r"pairs.tsv:2: the passage \(column 'p'\) is empty"),
    ],
)
def test_bad_labeled_pairs_name_the_file_and_line(tmp_path, content, message):
    with pytest.raises(ValueError, match=message):
        rerank.read_labeled_pairs(_write(tmp_path / "pairs.tsv", content), "q", "p", "l")


def _squad_examples():
    """Three articles of two paragraphs each, a question per paragraph (one unanswerable)."""
    examples = []
    for article in range(3):
        for paragraph in range(2):
            context = f"paragraph {paragraph} of article {article}"
            examples.append(
                SquadExample(f"{article}{paragraph}", f"q {article}.{paragraph}", context, [{}], title=f"t{article}")
            )
    examples.append(SquadExample("x", "unanswerable", "paragraph 0 of article 0", [], is_impossible=True, title="t0"))
    return examples


def test_squad_groups_take_hard_negatives_from_the_article_first_and_are_seeded():
    examples = _squad_examples()
    groups = rerank.squad_groups(examples, negatives=3, seed=1)
    assert groups.queries == [f"q {a}.{p}" for a in range(3) for p in range(2)]  # unanswerable left out
    for query, candidates, relevance in zip(groups.queries, groups.candidates, groups.relevance):
        article, paragraph = query[2], query[4]
        assert candidates[0] == f"paragraph {paragraph} of article {article}" and relevance == [1, 0, 0, 0]
        assert candidates[1] == f"paragraph {1 - int(paragraph)} of article {article}"  # the article's other one
        assert all(f"article {article}" not in c for c in candidates[2:]) and len(set(candidates)) == 4
    assert rerank.squad_groups(examples, negatives=3, seed=1) == groups
    others = [rerank.squad_groups(examples, negatives=3, seed=s).candidates for s in range(2, 6)]
    assert any(o != groups.candidates for o in others)
    assert [len(c) for c in rerank.squad_groups(examples, negatives=9).candidates] == [6] * 6  # all there are


def test_training_rows_one_per_positive_own_negatives_first_then_others():
    groups = rerank.RerankGroups(
        ["cat", "dog", "mat"],
        [["a cat", "the cat", "a dog"], ["a dog", "dog food"], ["a mat"]],
        [[1, 1, 0], [1, 0], [1]],
    )
    rows = rerank.training_rows(groups, negatives=2, seed=0)
    assert rows.queries == ["cat", "cat", "dog", "mat"] and rows.candidates_per_query == 3
    assert rows.candidates[0][0] == "a cat" and rows.candidates[1][0] == "the cat"
    for query, candidates in zip(rows.queries, rows.candidates):
        relevant = {
            p
            for c, r, q in zip(groups.candidates, groups.relevance, groups.queries)
            if q == query
            for p, x in zip(c, r)
            if x
        }
        assert not relevant & set(candidates[1:]) and len(set(candidates)) == 3
    assert "a dog" in rows.candidates[0][1:]  # cat's own negative is taken first
    assert "dog food" in rows.candidates[2][1:]
    assert rerank.training_rows(groups, negatives=2, seed=0) == rows
    with pytest.raises(ValueError, match=r"6 negatives per query, but query 'cat' can have only"):
        rerank.training_rows(groups, negatives=6)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    vocab = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab.write_text("\n".join([*SPECIAL_TOKENS, *WORDS]) + "\n", encoding="utf-8")
    return BertTokenizer(str(vocab))


@pytest.mark.slow  # over 10 s (the make test budget)
def test_batches_pack_each_candidate_with_its_query(tokenizer):
    rows = rerank.TrainingRows(
        ["the cat", "the dog", "where"], [["a cat sat", "a dog"], ["a dog ran", "a mat"], ["on", "who"]]
    )
    features, relevance = next(iter(rerank.make_dataset(rows, tokenizer, 8, batch_size=2)))
    assert features["token_ids"].shape == (2, 2, 8) and relevance.numpy().tolist() == [[1, 0], [1, 0]]
    ids = {w: i for i, w in enumerate([*SPECIAL_TOKENS, *WORDS])}
    cls, sep = ids["[CLS]"], ids["[SEP]"]
    first = features["token_ids"][0, 0].numpy().tolist()
    assert first == [cls, ids["the"], ids["cat"], sep, ids["a"], ids["cat"], ids["sat"], sep]
    assert features["segment_ids"][0, 1].numpy().tolist() == [0, 0, 0, 0, 1, 1, 1, 0]  # [CLS] the cat [SEP] a dog [SEP]
    assert features["padding_mask"][1, 1].numpy().sum() == 7  # [CLS] the dog [SEP] a mat [SEP]
    # Scoring batches keep the pairs' order and the last partial batch.
    batches = list(rerank.pair_dataset(["the cat"] * 3, ["a cat", "a dog", "a mat"], tokenizer, 8, batch_size=2))
    assert [b["token_ids"].shape[0] for b in batches] == [2, 1]
    assert batches[1]["token_ids"][0, 5].numpy() == ids["mat"]  # [CLS] the cat [SEP] a mat [SEP]
    with pytest.raises(ValueError, match="batch_size"):
        rerank.make_dataset(rows, tokenizer, 8, batch_size=0)
    assert np.all(features["padding_mask"].numpy().sum(-1) > 0)
