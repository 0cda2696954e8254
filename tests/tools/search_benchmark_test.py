"""tools/search_benchmark.py --quick: both tables are filled, one row per corpus size, on disk sizes growing."""

import os
import re

import pytest

from tests.tools import ROOT, run_tool

WIKITEXT = os.path.join(ROOT, "..", "shared", "data", "corpus", "wikitext2", "wiki.test.raw")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(WIKITEXT), reason="needs ../shared/data")
def test_quick_run_writes_both_tables(tmp_path, minilm_dir):
    md = tmp_path / "search.md"
    result = run_tool("search_benchmark.py", "--quick", f"--output_md={md}", PYTHONPATH=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    table = md.read_text()
    assert table in result.stdout
    saved = re.findall(
        r"^\| ([\d,]+) \| ([\d.]+) MB \| [\d.]+ s \| [\d.]+ s \| [\d.]+ ms \| [\d.]+ ms \|$", table, re.M
    )
    assert [size for size, _ in saved] == ["50", "200"], table
    assert float(saved[1][1]) > float(saved[0][1])  # the corpus is in the SavedModel
    scans = re.findall(r"^\| ([\d,]+) \| \d+ MB \| [\d.]+ ms \|$", table, re.M)
    assert scans == ["1,000", "10,000"], table
