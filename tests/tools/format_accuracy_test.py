"""tools/format_accuracy.py: its readers name bad input; the slow tier scores tiny models in every format."""

import os
import subprocess
import sys

import pytest

from tests.conftest import DATA_DIR, REFERENCE_DIR
from tools import format_accuracy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_read_conll_splits_sentences_and_names_a_bad_line(tmp_path):
    path = tmp_path / "dev.conll"
    path.write_text("-DOCSTART- -X- O O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n", "utf-8")
    assert format_accuracy.read_conll(str(path)) == ([["EU", "rejects"], ["Peter"]], [["B-ORG", "O"], ["B-PER"]])
    path.write_text("EU B-ORG\nlonely\n", "utf-8")
    with pytest.raises(ValueError, match=r"dev.conll:2: a word and its tag expected"):
        format_accuracy.read_conll(str(path))


def test_read_sst2_needs_its_header(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("sentence\tlabel\nit 's good\t1\nbad\t0\n", "utf-8")
    assert format_accuracy.read_sst2(str(path)) == (["it 's good", "bad"], [1, 0])
    path.write_text("text\tlabel\nbad\t0\n", "utf-8")
    with pytest.raises(ValueError, match=r"line 1 must name the columns `sentence` and `label`"):
        format_accuracy.read_sst2(str(path))


@pytest.mark.slow
def test_a_classifier_scored_in_every_format(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("ai_edge_litert")
    from bert_tf import tasks

    model_dir = str(tmp_path / "cls")
    tasks.convert_checkpoint(os.path.join(REFERENCE_DIR, "families", "bert-cls"), model_dir)
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "tools", "format_accuracy.py"),
            f"--model_dir={model_dir}",
            f"--eval_file={os.path.join(DATA_DIR, 'glue', 'SST-2', 'dev.tsv')}",
            "--limit=64",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {line.split("|")[1].strip(): line for line in result.stdout.splitlines() if line.startswith("| ")}
    assert set(format_accuracy.FORMATS) <= set(rows)
    # The float32 formats answer as the SavedModel on every sentence.
    for name in ("litert_float32", "onnx_float32"):
        assert rows[name].rstrip(" |").endswith("100.00%"), rows[name]
