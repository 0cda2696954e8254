"""SIGTERM/SIGINT during training: a checkpoint at the current step, a message, exit 143/130, exact resume."""

import os
import signal
import subprocess
import threading
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import BertEncoder, BertPretrainer
from bert_tf.text.vocab import build_vocab
from bert_tf.training import LoopConfig, TrainingInterrupted, TrainingLoop, create_optimizer
from tests.conftest import DATA_DIR
from tests.helpers import repeated_pretraining_batches
from tests.launcher import python_command

CORPUS = os.path.join(DATA_DIR, "corpus", "gutenberg", "austen-persuasion.txt")


def _signal_when_exists(path, signum, deadline=120):
    def send():
        end = time.time() + deadline
        while not os.path.exists(path) and time.time() < end:
            time.sleep(0.05)
        time.sleep(0.5)
        os.kill(os.getpid(), signum)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_sigint_saves_at_the_current_step_and_restores_the_handler(tmp_path):
    keras.utils.set_random_seed(1)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = BertPretrainer(
            BertEncoder(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32)
        )
        optimizer = create_optimizer(learning_rate=1e-3, total_steps=100_000, clip_norm=0)
    loop = TrainingLoop(
        strategy,
        model,
        optimizer,
        repeated_pretraining_batches,
        8,
        str(tmp_path),
        LoopConfig(train_steps=100_000, steps_per_loop=3, checkpoint_steps=50_000),
        settings={"model": "signal-test"},
    )
    previous = signal.getsignal(signal.SIGINT)
    messages = []
    sender = _signal_when_exists(str(tmp_path / "checkpoints" / "ckpt-0.index"), signal.SIGINT)
    with pytest.raises(TrainingInterrupted) as raised:
        loop.train(log=messages.append)
    sender.join()
    step = raised.value.step
    # At a call's end: the first two calls take one step each (the step's time is not known yet), then blocks of 3.
    assert raised.value.exit_code == 130 and step > 0 and (step <= 2 or step % 3 == 0) and step == loop.step
    path = os.path.join(str(tmp_path), "checkpoints", f"ckpt-{step}")
    expected = f"Received SIGINT at step {step}: saved {path}; re-run the same command to continue."
    assert str(raised.value) == expected and messages[-1] == expected
    assert os.path.exists(path + ".index")
    assert tf.train.latest_checkpoint(str(tmp_path / "checkpoints")) == path
    assert signal.getsignal(signal.SIGINT) is previous


def _command(model_dir, vocab):
    return python_command(
        "-m",
        "bert_tf.apps.pretrain",
        f"--model_dir={model_dir}",
        "--model=tiny",
        "--corpus=" + CORPUS,
        f"--vocab={vocab}",
        "--train_steps=300",
        "--global_batch_size=8",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--steps_per_loop=5",
        "--checkpoint_steps=100",
        "--eval_steps=0",
        "--warmup_steps=2",
        "--learning_rate=1e-3",
        "--deterministic",
        "--fill_mask=",
    )


def _weights(model_dir):
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "bert_model.ckpt"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


@pytest.mark.slow
def test_sigterm_then_rerun_gives_the_uninterrupted_weights(tmp_path):
    vocab = str(tmp_path / "vocab.txt")
    build_vocab(CORPUS, vocab, vocab_size=2000, show_progress=False)
    reference = tmp_path / "uninterrupted"
    result = subprocess.run(_command(reference, vocab), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]

    model_dir = tmp_path / "terminated"
    process = subprocess.Popen(_command(model_dir, vocab), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # A random step: after ckpt-0, 100 or 200, then a random delay (a step takes ~10 ms, 50 under load): the
    # 300 steps (600 before: 20-30 s more of three runs) leave the signal time to arrive.
    rng = np.random.default_rng()
    after = model_dir / "checkpoints" / f"ckpt-{100 * rng.integers(0, 3)}.index"
    deadline = time.time() + 400
    while not after.exists():
        assert process.poll() is None and time.time() < deadline, f"the run ended before {after}"
        time.sleep(0.01)
    time.sleep(rng.uniform(0.0, 0.5))
    process.send_signal(signal.SIGTERM)
    stderr = process.communicate(timeout=300)[1]
    if process.returncode == 0:
        pytest.skip("the run finished before SIGTERM arrived")
    assert process.returncode == 143, stderr[-3000:]
    line = [x for x in stderr.splitlines() if "Received SIGTERM at step" in x][-1]
    step = int(line.split("at step ")[1].split(":")[0])
    path = os.path.join(str(model_dir), "checkpoints", f"ckpt-{step}")
    assert line == (
        f"bert-tf-pretrain: error: Received SIGTERM at step {step}: saved {path}; re-run the same command to continue."
    )
    assert os.path.exists(path + ".index") and (step <= 2 or step % 5 == 0)  # calls of 1, 1, then blocks of 5
    print(f"SIGTERM arrived at step {step} of 300")

    resumed = subprocess.run(_command(model_dir, vocab), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"Resumed from step {step}" in resumed.stdout
    expected, actual = _weights(reference), _weights(model_dir)
    assert expected.keys() == actual.keys()
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


@pytest.mark.slow
def test_a_second_signal_stops_at_once_keeping_the_newest_checkpoint(tmp_path):
    vocab = str(tmp_path / "vocab.txt")
    build_vocab(CORPUS, vocab, vocab_size=500, show_progress=False)
    model_dir = tmp_path / "run"
    command = [a for a in _command(model_dir, vocab) if not a.startswith(("--steps_per_loop", "--train_steps"))]
    # Calls of 300 steps: both signals arrive while one runs, before the loop could act on the first.
    process = subprocess.Popen(
        command + ["--steps_per_loop=300", "--train_steps=100000"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 300
    while not (model_dir / "checkpoints" / "ckpt-0.index").exists():
        assert process.poll() is None and time.time() < deadline, "the run ended before its first checkpoint"
        time.sleep(0.01)
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    stderr = process.communicate(timeout=120)[1]
    assert process.returncode == 143, stderr[-3000:]
    assert "Received a second SIGTERM: stopping at once; the newest checkpoint is kept." in stderr
    assert "Received SIGTERM at step" not in stderr  # no save was started
    assert tf.train.latest_checkpoint(str(model_dir / "checkpoints")).endswith("ckpt-0")
