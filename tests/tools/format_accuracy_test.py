"""tools/format_accuracy.py: its readers name bad input; the slow tier scores tiny models in every format."""

import os

import pytest

from tests.conftest import DATA_DIR, REFERENCE_DIR
from tests.tools import run_tool
from tools import format_accuracy


def test_conll_eval_file_splits_sentences_and_names_a_bad_line(tmp_path):
    path = tmp_path / "dev.conll"
    path.write_text("-DOCSTART- -X- O O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n", "utf-8")
    assert format_accuracy.read_eval("ner", str(path)) == ([["EU", "rejects"], ["Peter"]], [["B-ORG", "O"], ["B-PER"]])
    path.write_text("EU B-ORG\nlonely\n", "utf-8")
    with pytest.raises(ValueError, match=r"dev.conll:2: malformed line"):
        format_accuracy.read_eval("ner", str(path))


def test_sst2_eval_file_needs_its_header(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("sentence\tlabel\nit 's good\t1\nbad\t0\n", "utf-8")
    assert format_accuracy.read_eval("classification", str(path)) == (["it 's good", "bad"], [1, 0])
    path.write_text("text\tlabel\nbad\t0\n", "utf-8")
    with pytest.raises(ValueError, match=r"dev.tsv:1: missing column 'sentence'"):
        format_accuracy.read_eval("classification", str(path))


@pytest.mark.slow
def test_a_classifier_scored_in_every_format(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("ai_edge_litert")
    from bert_tf import tasks

    model_dir = str(tmp_path / "cls")
    tasks.convert_checkpoint(os.path.join(REFERENCE_DIR, "families", "bert-cls"), model_dir)
    result = run_tool(
        "format_accuracy.py",
        f"--model_dir={model_dir}",
        f"--eval_file={os.path.join(DATA_DIR, 'glue', 'SST-2', 'dev.tsv')}",
        "--limit=64",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {line.split("|")[1].strip(): line for line in result.stdout.splitlines() if line.startswith("| ")}
    assert set(format_accuracy.FORMATS) <= set(rows)
    # The float32 formats answer as the SavedModel on every sentence.
    for name in ("litert_float32", "onnx_float32"):
        assert rows[name].rstrip(" |").endswith("100.00%"), rows[name]
