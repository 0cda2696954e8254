"""tools/benchmark_sparse_search.py on a small corpus: a result row per size, its exactness guard passing."""

import json

import pytest

from tests.tools import ROOT, run_tool


@pytest.mark.slow
def test_small_run_writes_a_row_per_size(tmp_path):
    output = tmp_path / "sparse.json"
    args = ["--passages=2000,5000", "--queries=3", "--passage_terms=20", "--query_terms=5", f"--output={output}"]
    result = run_tool("benchmark_sparse_search.py", *args, PYTHONPATH=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads(output.read_text())["results"]
    assert [row["passages"] for row in rows] == [2000, 5000]
    assert all(row["postings"] <= row["passages"] * 20 and row["search_ms_median"] > 0 for row in rows)
    assert rows[1]["savedmodel_mb"] > rows[0]["savedmodel_mb"]
