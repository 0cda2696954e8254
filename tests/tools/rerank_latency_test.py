"""tools/rerank_latency.py on tiny models: a table row per request kind, each a positive time."""

import os
import re

import pytest

from tests.conftest import REFERENCE_DIR
from tests.helpers import squad_file
from tests.tools import run_tool


@pytest.mark.slow
def test_a_row_per_request_kind(tmp_path):
    squad = squad_file(str(tmp_path / "squad.json"), n=6)
    bert = os.path.join(REFERENCE_DIR, "families", "bert")  # the tiny BERT as bi-encoder and reranker encoder
    args = [f"--bi_encoder={bert}", f"--squad_file={squad}", f"--output_dir={tmp_path / 'out'}"]
    result = run_tool("rerank_latency.py", *args, "--top_n=2,4", "--queries=2", "--repeats=1", "--max_seq_length=32")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = re.findall(r"^\| (.+?) \| (\d+) \|$", result.stdout, re.M)
    assert [name for name, _ in rows] == [
        "search, k=10 (bi-encoder only)",
        "search, k=10, reranking the top 2",
        "search, k=10, reranking the top 4",
        "rerank, 2 passages",
        "rerank, 4 passages",
    ], result.stdout
    assert os.path.isfile(tmp_path / "out" / "reranker" / "bert_tf.json")
