"""A new user's first runs: checkpoints that fit the run, finished runs recognized at once, too few steps named."""

import json
import os
import subprocess
import time

import keras
import numpy as np
import pytest

from bert_tf.training import FinetuneConfig, PretrainConfig, ResumeError, finetune, pretrain
from bert_tf.training.distribute import create_strategy
from tests.helpers import TINY_PRETRAINING, tiny_corpus_and_vocab, tiny_model_dir
from tests.launcher import python_command

WORDS = "the movie was good great fine bad awful poor film . cat dog sat ran on a mat".split()


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return tiny_model_dir(tmp_path_factory.mktemp("tiny_bert"), WORDS, max_position_embeddings=32)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    directory = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(0)
    paths = {}
    for name, n in (("train", 48), ("dev", 16)):
        rows = ["sentence\tlabel"]
        for _ in range(n):
            label = int(rng.integers(2))
            rows.append(f"the movie was {rng.choice(['good', 'great'] if label else ['bad', 'awful'])} .\t{label}")
        paths[name] = str(directory / f"{name}.tsv")
        with open(paths[name], "w", encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")
    return paths


def _config(tiny_dir, data, model_dir, **overrides):
    values = dict(
        task="classification",
        init=tiny_dir,
        train_file=data["train"],
        eval_file=data["dev"],
        glue_task="sst2",
        model_dir=str(model_dir),
        max_seq_length=16,
        global_batch_size=8,
        learning_rate=1e-2,
        warmup_proportion=0.0,
        epochs=2.0,  # 6 steps per epoch: evaluations (and checkpoints) at steps 6 and 12
    )
    values.update(overrides)
    return FinetuneConfig(**values)


def _finetune(config, messages=None):
    keras.utils.set_random_seed(0)
    log = messages.append if messages is not None else (lambda message: None)
    return finetune(config, strategy=create_strategy("one_device"), log=log)


@pytest.fixture(scope="module")
def default_run(tiny_dir, data, tmp_path_factory):
    """One run with the defaults (12 steps), read by three tests: `(model_dir, best evaluation, messages)`."""
    model_dir = tmp_path_factory.mktemp("default") / "run"
    messages = []
    best = _finetune(_config(tiny_dir, data, model_dir), messages)
    return model_dir, best, messages


def _checkpoints(model_dir):
    names = os.listdir(model_dir / "checkpoints")
    return sorted(n[: -len(".index")] for n in names if n.startswith("ckpt-") and n.endswith(".index"))


@pytest.mark.slow
def test_finetuning_keeps_one_checkpoint_and_none_of_the_initial_weights(default_run, tiny_dir, data, tmp_path):
    assert _checkpoints(default_run[0]) == ["ckpt-12"]  # was ckpt-0 (the --init weights) and ckpt-12
    _finetune(_config(tiny_dir, data, tmp_path / "more", checkpoint_steps=4, keep_checkpoints=2))
    assert _checkpoints(tmp_path / "more") == ["ckpt-12", "ckpt-8"]


def test_a_finished_finetuning_run_is_recognized_before_reading_data(default_run, tiny_dir, data, tmp_path):
    model_dir, best, _ = default_run
    saved = dict(data, train=str(tmp_path / "moved.tsv"))
    os.rename(data["train"], saved["train"])  # not read again: the run is complete
    try:
        messages = []
        began = time.time()
        again = _finetune(_config(tiny_dir, data, model_dir), messages)
        seconds = time.time() - began
    finally:
        os.rename(saved["train"], data["train"])
    assert again == best and seconds < 5, seconds
    results = os.path.join(str(model_dir), "eval_results.json")
    assert messages == [
        f"{model_dir}: already complete at step 12 (nothing to do); the model directory is {model_dir}, best "
        f"evaluation in {results}. Use a new model_dir to train again."
    ]
    # Other epochs: a different run, refused as before (train_steps differ), not taken for the finished one.
    with pytest.raises(ResumeError, match="train_steps: checkpoint has 12, this run has 18"):
        _finetune(_config(tiny_dir, data, model_dir, epochs=3.0))


@pytest.mark.slow
def test_too_few_steps_are_warned_about_once_before_training(default_run, tiny_dir, data, tmp_path):
    messages = default_run[2]
    warnings = [m for m in messages if m.startswith("Warning: only")]
    assert warnings == [
        "Warning: only 12 training steps (48 training examples, batch 8, 2 epochs); fine-tuning usually needs at "
        "least 100 and may otherwise learn to predict the most frequent label only. Use more --epochs, a smaller "
        "--global_batch_size or more training data (or set --train_steps)."
    ]
    assert messages.index(warnings[0]) < messages.index("Evaluating at step 6 ...")
    messages = []
    # Batch 2: 24 steps an epoch, so 100 steps evaluate 5 times (batch 8: 17 times, 47 s of this test's 60).
    config = _config(tiny_dir, data, tmp_path / "long", train_steps=100, global_batch_size=2, epochs=0.0)
    _finetune(config, messages)
    assert not any(m.startswith("Warning") for m in messages)


@pytest.mark.slow
def test_a_finished_pretraining_run_is_recognized_before_building_the_model(tmp_path):
    corpus, vocab = tiny_corpus_and_vocab(str(tmp_path), WORDS, documents=20)
    settings = dict(
        model_dir=str(tmp_path / "run"),
        corpus=[corpus],
        vocab=vocab,
        **TINY_PRETRAINING,
        train_steps=4,
        checkpoint_steps=2,
        eval_steps=0,
        fill_mask=[],
    )
    assert pretrain(PretrainConfig(**settings), log=lambda message: None)
    messages = []
    began = time.time()
    assert pretrain(PretrainConfig(**settings), log=messages.append) == {}
    assert time.time() - began < 5
    model_dir = settings["model_dir"]
    assert messages == [
        f"{model_dir}: already complete at step 4 (train_steps 4; nothing to do). Model directory: {model_dir} "
        f"(bert_config.json, vocab.txt, bert_model.ckpt, bert_tf.json; TensorBoard logs in {model_dir}/logs). "
        "Raise train_steps to train further."
    ]
    messages = []
    pretrain(PretrainConfig(**dict(settings, train_steps=6)), log=messages.append)
    assert f"Resumed from step 4 in {model_dir}" in messages and any(m.startswith("Final: loss") for m in messages)


@pytest.mark.slow
def test_the_finetune_app_says_a_finished_run_is_complete(tiny_dir, data, tmp_path):
    command = python_command(
        "-m",
        "bert_tf.apps.finetune",
        "--task=classification",
        f"--init={tiny_dir}",
        f"--train_file={data['train']}",
        f"--eval_file={data['dev']}",
        "--glue_task=sst2",
        "--max_seq_length=16",
        "--global_batch_size=8",
        "--epochs=1",
        f"--model_dir={tmp_path / 'run'}",
    )
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=os.getcwd())
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Warning: only 6 training steps" in first.stdout and "\nEvaluating at step 6 ...\n" in first.stdout
    assert _checkpoints(tmp_path / "run") == ["ckpt-6"]
    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    lines = again.stdout.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'run'}: already complete at step 6"), again.stdout
    assert lines[1] == "Best evaluation: " + json.dumps(
        json.loads((tmp_path / "run" / "eval_results.json").read_text()), sort_keys=True
    )
    assert "unrestored values" not in again.stderr
