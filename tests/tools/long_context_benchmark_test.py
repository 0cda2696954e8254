"""tools/benchmark_long_context.py --quick: the tiny shape runs end to end and fills its table (bert_tf's side)."""

import re

import pytest

from tests.tools import run_tool


@pytest.mark.slow
def test_quick_run_fills_both_tables(tmp_path):
    md = tmp_path / "long.md"
    result = run_tool("benchmark_long_context.py", "--quick", f"--output_md={md}", timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    table = md.read_text()
    assert "torch side: not run" in table and "CPU: " in table
    rows = re.findall(r"^\| ([\d,]+) \| ([\d.]+) \|", table, re.MULTILINE)
    assert [length for length, _ in rows] == ["256", "1,024", "256", "1,024"]  # both lengths, in both tables
    assert all(float(seconds) > 0 for _, seconds in rows)
    forward = re.search(r"^\| 1,024 \| [\d.]+ \| - \| - \| ([\d.]+) \| - \| - \| ([\d.]+) \|", table, re.MULTILINE)
    assert forward and 0 < float(forward.group(2)) < float(forward.group(1))  # the forward's part of the peak
