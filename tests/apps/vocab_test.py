"""bert-tf-vocab: flags, output, errors before side effects."""

import os
import subprocess
import sys


def _run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "bert_tf.apps.vocab", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_builds_vocab_and_reports(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(("hello world, hello there.\n" * 20).encode() + b"caf\xe9\n")
    result = _run(
        f"--input={corpus}",
        "--output=out/vocab.txt",
        "--vocab_size=60",
        "--min_frequency=1",
        "--noprogress",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "1 lines with invalid UTF-8" in result.stdout
    with open(tmp_path / "out" / "vocab.txt", encoding="utf-8") as f:
        assert f.readline().strip() == "[PAD]"


def test_bad_flags_exit_nonzero_without_output(tmp_path):
    missing = _run("--output=vocab.txt", cwd=tmp_path)
    assert missing.returncode != 0 and "--input" in missing.stderr
    no_match = _run(f"--input={tmp_path}/none*.txt", "--output=vocab.txt", cwd=tmp_path)
    assert no_match.returncode != 0 and "none*.txt" in no_match.stderr
    small = _run(f"--input={tmp_path}/x", "--output=vocab.txt", "--vocab_size=2", cwd=tmp_path)
    assert small.returncode != 0
    assert not os.path.exists(tmp_path / "vocab.txt")


def test_helpfull_lists_flags(tmp_path):
    result = _run("--helpfull", cwd=tmp_path)
    assert "--vocab_size" in result.stdout + result.stderr and "--min_frequency" in result.stdout + result.stderr
