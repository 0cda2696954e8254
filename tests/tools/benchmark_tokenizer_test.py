"""tools/benchmark_tokenizer.py: a timed side is called until --min_seconds is spent, and the mean call counts.

Its flags (e.g. --batch_size) share names with other tools' that tests import, so it runs in its own process here.
"""

import subprocess
import sys

from tests.tools import ROOT, run_tool

_FLOOR_CHECK = """
import time
from tools import benchmark_tokenizer
calls = []
def pass_of_10_ms():
    calls.append(1)
    time.sleep(0.01)
seconds = benchmark_tokenizer._seconds(pass_of_10_ms, floor=0.1)
assert len(calls) >= 9 and 0.009 <= seconds < 0.02, (len(calls), seconds)
calls.clear()
benchmark_tokenizer._seconds(pass_of_10_ms, floor=0.0)  # no floor: one call, as before
assert len(calls) == 1, len(calls)
print("ok")
"""


def test_a_short_pass_is_repeated_until_the_floor_and_its_mean_is_taken():
    result = subprocess.run([sys.executable, "-c", _FLOOR_CHECK], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-2000:]


def test_a_negative_floor_is_refused_by_name():
    result = run_tool("benchmark_tokenizer.py", "--input=README.md", "--min_seconds=-1")
    assert result.returncode == 1 and "--min_seconds must not be negative" in result.stderr
