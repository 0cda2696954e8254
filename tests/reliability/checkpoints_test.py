"""Reliability of the trainer's checkpoints: a missing state file, glob characters in the model directory."""

import logging
import os

import numpy as np
import pytest

from bert_tf.text.vocab import build_vocab
from bert_tf.training import PretrainConfig, pretrain

WORDS = "the cat dog sat ran on a mat house module function file returned value provides reads writes".split()
SETTINGS = dict(
    model="tiny",
    warmup_steps=1,
    global_batch_size=4,
    max_seq_length=32,
    max_predictions_per_seq=5,
    steps_per_loop=2,
    checkpoint_steps=2,
    keep_checkpoints=5,
    eval_steps=0,
    fill_mask=[],
)


@pytest.fixture(scope="module")
def corpus_and_vocab(tmp_path_factory):
    directory = tmp_path_factory.mktemp("corpus")
    rng = np.random.default_rng(0)
    documents = [
        "\n".join(" ".join(rng.choice(WORDS, size=rng.integers(4, 9))) + " ." for _ in range(4)) for _ in range(20)
    ]
    corpus = str(directory / "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n\n".join(documents) + "\n")
    vocab = str(directory / "vocab.txt")
    build_vocab(corpus, vocab, vocab_size=100, show_progress=False)
    return corpus, vocab


def _config(model_dir, corpus_and_vocab, train_steps, **overrides):
    corpus, vocab = corpus_and_vocab
    settings = dict(SETTINGS, **overrides)
    return PretrainConfig(model_dir=str(model_dir), corpus=[corpus], vocab=vocab, train_steps=train_steps, **settings)


def _mtimes(directory):
    return {name: os.stat(os.path.join(directory, name)).st_mtime_ns for name in os.listdir(directory)}


@pytest.mark.slow
def test_missing_state_file_resumes_from_the_newest_checkpoint(corpus_and_vocab, tmp_path, caplog):
    model_dir = tmp_path / "run"
    pretrain(_config(model_dir, corpus_and_vocab, 6), log=lambda message: None)
    checkpoints = model_dir / "checkpoints"
    os.remove(checkpoints / "checkpoint")
    before = _mtimes(checkpoints)
    messages = []
    with caplog.at_level(logging.WARNING):
        pretrain(_config(model_dir, corpus_and_vocab, 8), log=messages.append)
    assert "Resumed from step 6 in " + str(model_dir) in messages
    warning = " ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    assert "checkpoints/checkpoint is missing" in warning and "ckpt-6" in warning, warning
    after = _mtimes(checkpoints)
    for name, mtime in before.items():  # ckpt-2/4/6 and their data files are the old ones, not rewritten
        if name.startswith(("ckpt-", "data-")) and name in after:
            assert after[name] == mtime, name
    assert os.path.exists(checkpoints / "ckpt-8.index") and os.path.exists(checkpoints / "checkpoint")
    # The rebuilt state file lists the old checkpoints, so the next run keeps only `keep_checkpoints` of them.
    pretrain(_config(model_dir, corpus_and_vocab, 10, keep_checkpoints=2), log=lambda message: None)
    assert sorted(n for n in os.listdir(checkpoints) if n.endswith(".index") and n.startswith("ckpt-")) == [
        "ckpt-10.index",
        "ckpt-8.index",
    ]
