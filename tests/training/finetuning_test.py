"""The model.fit example of docs/fine-tuning.md run as written (the fine-tuning run itself: tests/apps/finetune_test.py)."""

import os
import re
import subprocess

import pytest

from tests.launcher import python_command

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
DOC = os.path.join(ROOT, "docs", "fine-tuning.md")


@pytest.mark.slow
def test_readme_fit_example_runs(minilm_dir, tmp_path):
    """The documentation's user-code example, with fewer steps: model.fit on SST-2 from the MiniLM checkpoint."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    code = re.search(r"<!-- fit-example -->\s*```python\n(.*?)```", text, re.S).group(1)
    code = re.sub(r"^init = .*$", f"init = {minilm_dir!r}", code, flags=re.M)
    code = re.sub(r"^STEPS = .*$", "STEPS = 3", code, flags=re.M)
    sst2 = os.path.abspath(os.path.join(ROOT, "..", "shared", "data", "glue", "SST-2"))
    code = re.sub(r"^data = .*$", f"data = {sst2!r}", code, flags=re.M)
    script = tmp_path / "example.py"
    script.write_text(code + "\nprint('DEV_ACCURACY', history.history['val_accuracy'][-1])\n")
    result = subprocess.run(
        python_command(str(script)),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=os.getcwd()),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    accuracy = float(result.stdout.rsplit("DEV_ACCURACY", 1)[1])
    assert 0.0 <= accuracy <= 1.0
