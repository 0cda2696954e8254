"""tools/serving_threads.py: refuses bad --settings by name; the slow tier runs it on a tiny exported encoder."""

import os

import pytest

from tests.conftest import REFERENCE_DIR
from tests.tools import run_tool


def test_bad_settings_are_named():
    result = run_tool("serving_threads.py", "--settings=1:1,2", "--saved_model=unused", "--limit=4")
    assert result.returncode == 1 and "--settings" in result.stderr and "Received: 2" in result.stderr


@pytest.mark.slow
def test_a_row_per_setting_on_a_tiny_encoder(tmp_path):
    from bert_tf import tasks
    from bert_tf.export import export_saved_model

    model_dir, saved = str(tmp_path / "bert"), str(tmp_path / "saved")
    tasks.convert_checkpoint(os.path.join(REFERENCE_DIR, "families", "bert"), model_dir)
    export_saved_model(model_dir, saved)
    result = run_tool("serving_threads.py", f"--saved_model={saved}", "--settings=1:1,0:0", "--limit=40", "--repeats=1")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    assert [row.split("|")[1:3] for row in rows[1:]] == [[" 1 ", " 1 "], [" 0 ", " 0 "]]
    assert all(float(cell) > 0 for row in rows[1:] for cell in row.strip("|").split("|")[2:])
