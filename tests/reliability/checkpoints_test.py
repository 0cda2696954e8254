"""Reliability of the trainer's checkpoints: a missing state file, glob characters in the model directory."""

import logging
import os
import subprocess

import pytest

from bert_tf.checkpoints import CheckpointError, load_encoder, save_model_dir
from bert_tf.config import ConfigError
from bert_tf.training import TRAINING_SETTINGS_FILE, FinetuneConfig, PretrainConfig, ResumeError, finetune, pretrain
from tests.helpers import TINY_PRETRAINING, TINY_PRETRAINING_WORDS, tiny_corpus_and_vocab, tiny_encoder
from tests.launcher import python_command

WORDS = TINY_PRETRAINING_WORDS
SETTINGS = dict(
    TINY_PRETRAINING,
    steps_per_loop=2,
    checkpoint_steps=2,
    keep_checkpoints=5,
    eval_steps=0,
    fill_mask=[],
)


@pytest.fixture(scope="module")
def corpus_and_vocab(tmp_path_factory):
    return tiny_corpus_and_vocab(tmp_path_factory.mktemp("corpus"), WORDS, documents=20)


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


def test_glob_characters_in_model_dir_are_refused_before_anything_is_written(corpus_and_vocab, tmp_path):
    model_dir = tmp_path / "run[x]"
    with pytest.raises(ConfigError) as raised:
        pretrain(_config(model_dir, corpus_and_vocab, 4), log=lambda message: None)
    message = str(raised.value)
    assert str(model_dir) in message and "'[' ']'" in message and "glob pattern" in message, message
    assert "\n" not in message and not model_dir.exists()


def test_glob_characters_are_refused_by_the_app(corpus_and_vocab, tmp_path):
    corpus, vocab = corpus_and_vocab
    model_dir = tmp_path / "run*"
    result = subprocess.run(
        python_command("-m", "bert_tf.apps.pretrain", f"--model_dir={model_dir}", "--model=tiny")
        + [f"--corpus={corpus}", f"--vocab={vocab}", "--train_steps=2", "--warmup_steps=1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0 and not model_dir.exists()
    assert f"`model_dir` {model_dir} contains '*'" in result.stderr, result.stderr[-2000:]


def test_glob_characters_are_refused_by_every_checkpoint_writer_and_reader(tmp_path):
    """save_model_dir / save_tf1 refuse such a path before writing; a TF checkpoint found under one is refused
    with the reason instead of TensorFlow's "Failed to find any matching files"; finetune() refuses its model_dir."""
    encoder = tiny_encoder()
    target = tmp_path / "model[1]"
    with pytest.raises(CheckpointError, match=r"contains '\[' '\]'.*Nothing was written"):
        save_model_dir(encoder, str(target))
    assert not target.exists()
    readable = tmp_path / "plain"
    save_model_dir(encoder, str(readable))
    os.rename(readable, target)  # a directory renamed by hand after it was written
    with pytest.raises(CheckpointError, match=r"contains '\[' '\]'.*Move or rename it"):
        load_encoder(str(target))
    os.rename(target, readable)
    config = FinetuneConfig(task="ner", init=str(readable), train_file="unused", model_dir=str(tmp_path / "run*"))
    with pytest.raises(ValueError, match=r"FinetuneConfig: `model_dir` .* contains '\*'"):
        finetune(config, log=lambda message: None)
    assert not (tmp_path / "run*").exists()


@pytest.mark.slow
@pytest.mark.parametrize("content", ['{"model": ', "[1, 2]"])
def test_a_broken_training_settings_file_is_named_and_nothing_is_touched(corpus_and_vocab, tmp_path, content):
    model_dir = tmp_path / "run"
    (model_dir / "checkpoints").mkdir(parents=True)
    settings = model_dir / TRAINING_SETTINGS_FILE
    settings.write_text(content)
    with pytest.raises(ResumeError, match=r"training_settings.json: (not valid JSON|expected a JSON object)"):
        pretrain(_config(model_dir, corpus_and_vocab, train_steps=2), log=lambda message: None)
    assert settings.read_text() == content
    assert os.listdir(model_dir / "checkpoints") == []
