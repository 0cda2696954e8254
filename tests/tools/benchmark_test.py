"""tools/benchmark.py --quick: every section runs, ratios and the same-weights checks are in the table."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SST2 = os.path.join(ROOT, "..", "shared", "data", "glue", "SST-2", "dev.tsv")


def _run(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "tools", "benchmark.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def _cells(table, row_start):
    line = next(line for line in table.splitlines() if line.startswith(row_start))
    return [cell.strip() for cell in line.strip("|").split("|")]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(SST2), reason="needs ../shared/data (SST-2 dev)")
def test_quick_run_fills_every_section_and_writes_table_and_chart(tmp_path):
    md, png = tmp_path / "bench.md", tmp_path / "bench.png"
    result = _run("--quick", "--settings=float32", f"--output_md={md}", f"--output_png={png}")
    assert result.returncode == 0, result.stderr[-3000:]
    table = md.read_text()
    assert table in result.stdout
    assert png.stat().st_size > 5000
    for row in (
        "| peak | matmul 512^3 float32",
        "| train | tiny",
        "| mfu | tiny training MFU, bert_tf",
        "| infer | encoder forward 4x32",
        "| infer | encoder latency 1x32",
        "| serve | SavedModel, SST-2 dev text -> embedding, batch 4",
        "| serve | SavedModel, SST-2 dev text -> embedding, batch 1",
        "| embed | encode, SST-2 dev sentences (64), batch 4",
        "| embed | search SavedModel, 200 passages, batch 1, k=10",
        "| albert | albert-tiny encoder forward",
        "| albert | albert-tiny masked-LM training step",
        "| text | tokenizer",
    ):
        cells = _cells(table, row)
        assert float(cells[3].replace(",", "")) > 0, row
    for row in (
        "| train | tiny",
        "| train | fine-tune tiny classifier, SST-2 dev text 4x32",
        "| infer | encoder forward",
        "| serve | SavedModel, SST-2 dev text -> embedding, batch 4",
        "| embed | search SavedModel, 200 passages",
        "| albert | albert-tiny encoder forward",
        "| albert | albert-tiny masked-LM training step",
    ):
        assert re.fullmatch(r"\d+\.\d\dx", _cells(table, row)[6]), row
    # The two sides really share weights: same outputs up to GELU's tanh approximation in keras-hub.
    assert float(_cells(table, "| infer | same weights")[3]) < 1e-3
    assert float(_cells(table, "| serve | same weights")[3]) < 1e-3
    assert float(_cells(table, "| albert | albert-tiny same weights")[3]) < 1e-4  # both tanh GELU: one function


@pytest.mark.slow
def test_quick_deberta_section_compares_the_same_weights_with_keras_hub():
    result = _run("--quick", "--sections=deberta", "--settings=float32")
    assert result.returncode == 0, result.stderr[-3000:]
    for row in ("| deberta | encoder forward tiny", "| deberta | training step tiny"):
        assert re.fullmatch(r"\d+\.\d\dx", _cells(result.stdout, row)[6]), row
    assert float(_cells(result.stdout, "| deberta | same weights")[3]) < 1e-4


def test_bad_flags_exit_with_a_named_error():
    result = _run("--settings=float16", "--sections=peak")
    assert result.returncode == 1
    assert "--settings=float16" in result.stderr
    result = _run("--sections=speed")
    assert result.returncode == 1
    assert "unknown --sections ['speed']" in result.stderr
