"""tools/beam_throughput.py on the tiny reference BERT: a row per run, each a positive rate, and both runs equal."""

import os
import re

import pytest

from tests.conftest import REFERENCE_DIR
from tests.helpers import write_text
from tests.tools import run_tool


@pytest.mark.slow
def test_a_row_per_run_and_the_same_embeddings(tmp_path):
    corpus = write_text(tmp_path / "corpus.txt", "".join(f"passage {i} about the cat and the mat\n" for i in range(12)))
    bert = os.path.join(REFERENCE_DIR, "families", "bert")
    result = run_tool("beam_throughput.py", f"--model={bert}", f"--corpus={corpus}", "--passages=0", "--batch_size=4")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = re.findall(r"^\| (.+?) \| ([\d.]+) \| ([\d.]+) \|$", result.stdout, re.M)
    assert [name for name, _, _ in rows] == ["bert-tf-embed (1 process)", "Beam DirectRunner (2 worker processes)"]
    assert all(float(rate) > 0 for _, _, rate in rows), result.stdout
    difference = float(re.search(r"max \|Beam - bert-tf-embed\| = (\S+) over 12 passages", result.stdout).group(1))
    assert difference <= 1e-5, result.stdout
