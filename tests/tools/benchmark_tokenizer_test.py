"""tools/benchmark_tokenizer.py: a timed side is called until --min_seconds is spent, and the mean call counts."""

import time

from tests.tools import run_tool
from tools import benchmark_tokenizer


def test_a_short_pass_is_repeated_until_the_floor_and_its_mean_is_taken():
    calls = []

    def pass_of_10_ms():
        calls.append(1)
        time.sleep(0.01)

    seconds = benchmark_tokenizer._seconds(pass_of_10_ms, floor=0.1)
    assert len(calls) >= 9
    assert 0.009 <= seconds < 0.02
    calls.clear()
    benchmark_tokenizer._seconds(pass_of_10_ms, floor=0.0)  # no floor: one call, as before
    assert len(calls) == 1


def test_a_negative_floor_is_refused_by_name():
    result = run_tool("benchmark_tokenizer.py", "--input=README.md", "--min_seconds=-1")
    assert result.returncode == 1 and "--min_seconds must not be negative" in result.stderr
