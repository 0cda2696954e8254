"""bert_tf.training.finetuning helpers, and the README's model.fit example run as written."""

import os
import re
import subprocess
import sys

import numpy as np
import tensorflow as tf

from bert_tf.data.squad import SquadExample
from bert_tf.training.finetuning import parse_column, split_by_article, trim_batch

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def test_trim_batch_cuts_every_sequence_tensor_to_the_longest_row_rounded_up():
    mask = np.zeros([2, 64], np.int32)
    mask[0, :20] = 1
    mask[1, :7] = 1
    features = {
        "token_ids": tf.constant(mask * 5),
        "segment_ids": tf.zeros([2, 64], tf.int32),
        "padding_mask": tf.constant(mask),
    }
    labels = {"logits": tf.constant(mask)}
    weights = {"logits": tf.ones([2], tf.float32)}  # [B]: not a sequence tensor
    trimmed = trim_batch((features, labels, weights), multiple=16)
    assert trimmed[0]["token_ids"].shape == (2, 32) and trimmed[1]["logits"].shape == (2, 32)
    assert trimmed[2]["logits"].shape == (2,)
    np.testing.assert_array_equal(trimmed[0]["padding_mask"].numpy(), mask[:, :32])


def test_trim_batch_never_cuts_below_the_longest_row():
    mask = np.ones([1, 40], np.int32)
    trimmed = trim_batch({"token_ids": tf.constant(mask), "padding_mask": tf.constant(mask)}, multiple=16)
    assert trimmed["token_ids"].shape == (1, 40)  # 48 would exceed the full length


def test_parse_column():
    assert parse_column("3") == 3 and parse_column("-1") == -1 and parse_column("sentence") == "sentence"
    assert parse_column(None) is None and parse_column("") is None


def test_split_by_article_holds_out_every_nth_title_in_file_order():
    examples = [
        SquadExample(id=f"{t}{i}", question="q", context="c", answers=[], title=t)
        for t in "abcdefghij"
        for i in range(2)
    ]
    train, held = split_by_article(examples, 5)
    assert sorted({e.title for e in held}) == ["e", "j"]  # the 5th and 10th article: 80/20
    assert len(train) == 16 and not {e.title for e in train} & {"e", "j"}


def test_readme_fit_example_runs(minilm_dir, tmp_path):
    """The README's user-code example, with fewer steps: model.fit on SST-2 from the MiniLM checkpoint."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    code = re.search(r"<!-- fit-example -->\s*```python\n(.*?)```", text, re.S).group(1)
    code = re.sub(r"^init = .*$", f"init = {minilm_dir!r}", code, flags=re.M)
    code = re.sub(r"^STEPS = .*$", "STEPS = 3", code, flags=re.M)
    sst2 = os.path.abspath(os.path.join(os.path.dirname(README), "..", "shared", "data", "glue", "SST-2"))
    code = re.sub(r"^data = .*$", f"data = {sst2!r}", code, flags=re.M)
    script = tmp_path / "example.py"
    script.write_text(code + "\nprint('DEV_ACCURACY', history.history['val_accuracy'][-1])\n")
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=os.getcwd()),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    accuracy = float(result.stdout.rsplit("DEV_ACCURACY", 1)[1])
    assert 0.0 <= accuracy <= 1.0
