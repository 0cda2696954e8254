"""What the training loop shows while it runs: time-bounded calls (same run), evaluation lines, rates after resume."""

import os
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.trainer import LoopConfig, _Progress
from tests.training.trainer_test import STEPS, dataset_fn, tiny_loop


def _loop(model_dir, eval_steps=0, **config):
    values = dict(train_steps=STEPS, steps_per_loop=5, checkpoint_steps=5, eval_steps=eval_steps, eval_interval=5)
    values.update(config)
    # Dropout draws from seed states: the same masks whatever the calls' lengths.
    return tiny_loop(
        tf.distribute.OneDeviceStrategy("/cpu:0"),
        model_dir,
        LoopConfig(**values),
        num_layers=1,
        dropout=0.1,
        attention_dropout=0.1,
        eval_dataset_fn=dataset_fn if eval_steps else None,
    )


def _counting_calls(loop):
    steps = []
    compiled = loop._train_loop

    def call(iterator, count):
        steps.append(int(count))
        return compiled(iterator, count)

    loop._train_loop = call
    return steps


def test_time_bounded_calls_give_the_same_run(tmp_path):
    """A call of one step at a time (as when steps are slow) trains exactly as calls of steps_per_loop."""
    blocks = _loop(tmp_path / "blocks", progress_seconds=0)
    block_calls = _counting_calls(blocks)
    block_metrics = blocks.train(log=lambda message: None)
    single = _loop(tmp_path / "single", progress_seconds=1e-9)
    single_calls = _counting_calls(single)
    single_metrics = single.train(log=lambda message: None)
    assert block_calls == [5, 5] and single_calls == [1] * STEPS
    for a, b in zip(single.model.get_weights(), blocks.model.get_weights()):
        np.testing.assert_array_equal(a, b)
    # The logged metrics cover the same steps (the last block of 5), whatever the calls.
    assert single_metrics["loss"] == pytest.approx(block_metrics["loss"], rel=1e-6)
    for directory in ("blocks", "single"):
        names = sorted(n for n in os.listdir(tmp_path / directory / "checkpoints") if n.startswith("ckpt-"))
        assert [n for n in names if n.endswith(".index")] == ["ckpt-0.index", "ckpt-10.index", "ckpt-5.index"]


def test_call_steps_keep_progress_within_progress_seconds(tmp_path):
    loop = _loop(tmp_path, steps_per_loop=50, progress_seconds=15)
    assert loop._call_steps(50, None) == 1  # the time of a step is not known yet
    assert loop._call_steps(50, 3.0) == 5  # 3 s a step: an update every 15 s, not every 150 s
    assert loop._call_steps(50, 0.01) == 50
    assert loop._call_steps(50, 100.0) == 1
    assert loop._call_steps(7, 0.01) == 7  # never past the block (a checkpoint, evaluation or the last step)
    loop.config.progress_seconds = 0
    assert loop._call_steps(50, 3.0) == 50


def test_default_calls_are_short_only_until_the_step_time_is_known(tmp_path):
    loop = _loop(tmp_path)
    calls = _counting_calls(loop)
    loop.train(log=lambda message: None)
    assert calls == [1, 1, 3, 5]  # the first call compiles; a tiny step is fast, so whole blocks follow


def test_each_evaluation_has_its_lines_on_a_fresh_line(tmp_path, capsys):
    messages = []

    def log(message):
        messages.append(message)
        print(message)

    _loop(tmp_path, eval_steps=2).train(log=log)
    evaluations = [m for m in messages if m.startswith("Evaluat")]
    assert [m.split(" (")[0] for m in evaluations] == [
        "Evaluating at step 5 ...",
        "Evaluation at step 5",
        "Evaluating at step 10 ...",
        "Evaluation at step 10",
    ]
    assert "mlm_loss" in evaluations[1] and "nsp_acc" in evaluations[3]
    out = capsys.readouterr().out
    for message in messages:  # the progress bar's line was ended first
        assert "\n" + message + "\n" in out, repr(out[:2000])


def test_step_time_after_a_resume_counts_only_the_new_steps():
    """Keras' Progbar divided the time since the bar started by all steps, resumed ones included."""
    progress = _Progress(100, 50, verbose=0)
    progress._start = 0.0
    assert progress._estimate_step_duration(50, 1.0) == 0
    assert progress._estimate_step_duration(51, 10.0) == 10.0  # the first call (compiling)
    assert progress._estimate_step_duration(56, 25.0) == 3.0  # 5 steps in 15 s after it
    assert keras.utils.Progbar(100)._estimate_step_duration(56, 25.0) < 0.5  # what it showed before


def test_without_initial_checkpoint_and_rerun_is_complete(tmp_path):
    loop = _loop(tmp_path, initial_checkpoint=False)
    loop.train(log=lambda message: None)
    names = sorted(n for n in os.listdir(tmp_path / "checkpoints") if n.endswith(".index"))
    assert names == ["ckpt-10.index", "ckpt-5.index", "data-worker0-10.index", "data-worker0-5.index"]
    messages = []
    began = time.time()
    assert _loop(tmp_path, initial_checkpoint=False).train(log=messages.append) == {}
    assert messages == [f"Training in {tmp_path} is already complete at step 10."]
    assert time.time() - began < 30
