"""tools/search_scale.py and tools/quantized_recall.py on small settings: a row per index, resumed from --results,
and recall rows whose exact scan is the reference."""

import json
import os
import re

import pytest

from tests.tools import ROOT, run_tool

XQUAD = os.path.join(ROOT, "..", "shared", "data", "squad", "xquad.en.json")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(XQUAD), reason="needs ../shared/data")
def test_small_run_fills_a_row_per_index_and_resumes(tmp_path, minilm_dir):
    results, md = tmp_path / "rows.jsonl", tmp_path / "scale.md"
    args = ["--sizes=3000", "--queries=3", f"--results={results}", f"--output_md={md}", "--max_float_passages=1000"]
    result = run_tool("search_scale.py", *args, "--indexes=binary_int8,float32", PYTHONPATH=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(row["size"], row["index"]) for row in rows] == [(3000, "binary_int8"), (3000, "float32")]
    assert rows[1]["skipped"].startswith("skipped: float32 vectors")  # over --max_float_passages
    assert rows[0]["bytes"] > 3000 * 384 and rows[0]["search_ms"] > 0 and rows[0]["load_rss_gb"] > 0
    table = md.read_text()
    assert re.search(r"^\| 3,000 \| binary_int8 \| [\d.]+ GB \| \d+ s \(\d+ s\) \| [\d.]+ s \|", table, re.M), table
    again = run_tool("search_scale.py", *args, "--indexes=binary_int8", PYTHONPATH=ROOT)  # nothing left to measure
    assert again.returncode == 0 and len(results.read_text().splitlines()) == 2, again.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(XQUAD), reason="needs ../shared/data")
def test_recall_rows(tmp_path, minilm_dir):
    md = tmp_path / "recall.md"
    cache = tmp_path / "cache.npz"
    args = ["--min_distractor_chars=100000", "--rescore_multipliers=4", f"--cache={cache}", f"--output_md={md}"]
    result = run_tool("quantized_recall.py", *args, PYTHONPATH=ROOT)  # the 240 XQuAD paragraphs alone
    assert result.returncode == 0, result.stderr[-3000:]
    rows = re.findall(
        r"^\| ([a-z0-9 +()]+) \| (\d*) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", md.read_text(), re.M
    )
    assert [row[0] for row in rows][:2] == ["float32 (exact)", "int8"] and len(rows) == 6, rows
    assert rows[0][5] == "1.0000" and all(0.9 <= float(row[5]) <= 1.01 for row in rows), rows
