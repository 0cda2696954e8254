"""The library tour (`make tour`) runs end to end on a few steps (slow tier: it trains, exports and reloads)."""

import subprocess

import pytest

from tests.launcher import python_command


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    result = subprocess.run(
        python_command("-m", "bert_tf.apps.demo", "--steps=8", f"--output_dir={tmp_path}"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "max |diff| after reload 0.0e+00" in result.stdout
    assert "Hugging Face directory" in result.stdout
    assert (tmp_path / "model" / "bert_config.json").is_file()
    assert (tmp_path / "model_hf" / "model.safetensors").is_file()
