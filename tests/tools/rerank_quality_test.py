"""tools/rerank_quality.py's pieces: the training articles' file, and the rankings' scores by hand.

The checks run in a child process: importing the tool defines its absl flags (`--max_seq_length`, default 256) on
the global FLAGS, and an app imported later in the same test process would take that definition, and its default,
for its own `--max_seq_length`.
"""

import os
import subprocess
import sys
import textwrap

from tests.tools import ROOT

CHECKS = textwrap.dedent(
    """
    import json, os, sys

    import pytest

    from tools import rerank_quality

    tmp = sys.argv[1]
    source = os.path.join(tmp, "squad.json")
    articles = [{"title": f"t{i}", "paragraphs": []} for i in range(4)]
    with open(source, "w", encoding="utf-8") as f:
        json.dump({"version": "1.1", "data": articles}, f)
    target = os.path.join(tmp, "train.json")
    assert rerank_quality.training_file(source, {"t0", "t2"}, target) == target
    with open(target, encoding="utf-8") as f:
        data = json.load(f)
    assert [a["title"] for a in data["data"]] == ["t0", "t2"] and data["version"] == "1.1"

    scores = [[0.9, 0.8, 0.1], [0.9, 0.8, 0.1], [0.5, 0.4, 0.3]]
    relevance = [[1, 0, 0], [0, 0, 1], [0, 0, 0]]  # ranks 1 and 3; the third question's paragraph not retrieved
    assert rerank_quality.reciprocal_ranks(scores, relevance).tolist() == pytest.approx([1.0, 1 / 3, 0.0])
    row = rerank_quality.ranking_row("r", scores, relevance, [1, 3])
    assert row["ranking"] == "r"
    assert row["mrr@10"] == pytest.approx((1 + 1 / 3) / 3)
    assert row["ndcg@10"] == pytest.approx((1 + 0.5) / 3)  # 1 / log2(4) for rank 3
    assert row["recall@1"] == pytest.approx(1 / 3) and row["recall@3"] == pytest.approx(2 / 3)
    print("checked")
    """
)


def test_training_file_and_ranking_scores(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", CHECKS, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
        timeout=300,
    )
    assert result.returncode == 0 and result.stdout.strip().endswith("checked"), result.stderr[-3000:]
