"""tools/rerank_quality.py's pieces: the training articles' file, and the rankings' scores by hand."""

import json

import pytest

from tools import rerank_quality


def test_training_file_keeps_the_training_articles_only(tmp_path):
    source = tmp_path / "squad.json"
    articles = [{"title": f"t{i}", "paragraphs": []} for i in range(4)]
    source.write_text(json.dumps({"version": "1.1", "data": articles}), encoding="utf-8")
    output = rerank_quality.training_file(str(source), {"t0", "t2"}, str(tmp_path / "train.json"))
    data = json.loads((tmp_path / "train.json").read_text(encoding="utf-8"))
    assert output == str(tmp_path / "train.json")
    assert [a["title"] for a in data["data"]] == ["t0", "t2"] and data["version"] == "1.1"


def test_ranking_row_and_reciprocal_ranks():
    scores = [[0.9, 0.8, 0.1], [0.9, 0.8, 0.1], [0.5, 0.4, 0.3]]
    relevance = [[1, 0, 0], [0, 0, 1], [0, 0, 0]]  # ranks 1 and 3; the third question's paragraph was not retrieved
    assert rerank_quality.reciprocal_ranks(scores, relevance).tolist() == pytest.approx([1.0, 1 / 3, 0.0])
    row = rerank_quality.ranking_row("r", scores, relevance, [1, 3])
    assert row["ranking"] == "r"
    assert row["mrr@10"] == pytest.approx((1 + 1 / 3) / 3)
    assert row["ndcg@10"] == pytest.approx((1 + 0.5) / 3)  # 1 / log2(4) for rank 3
    assert row["recall@1"] == pytest.approx(1 / 3) and row["recall@3"] == pytest.approx(2 / 3)
