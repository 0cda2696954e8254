"""What the training loop tells the user: float16 updates skipped by loss scaling, a slow first call."""

import re

import keras
import pytest
import tensorflow as tf

from bert_tf.models import BertEncoder, BertPretrainer
from bert_tf.training import LoopConfig, TrainingLoop, create_optimizer, trainer
from tests.helpers import repeated_pretraining_batches


def _loop(model_dir, train_steps, dtype=None, initial_scale=None):
    keras.utils.set_random_seed(1)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = BertPretrainer(
            BertEncoder(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, dtype=dtype)
        )
        optimizer = create_optimizer(learning_rate=1e-3, total_steps=train_steps, clip_norm=0)
        if initial_scale:
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=initial_scale)
    config = LoopConfig(train_steps=train_steps, steps_per_loop=5, checkpoint_steps=10, clip_norm=1.0)
    return TrainingLoop(
        strategy, model, optimizer, repeated_pretraining_batches, 8, str(model_dir), config, settings={"model": "t"}
    )


def test_float16_updates_skipped_by_loss_scaling_are_counted_and_logged(tmp_path):
    """Was: silently skipped (Keras does not count them as steps), so a run took more batches unannounced."""
    loop = _loop(tmp_path, train_steps=20, dtype="mixed_float16", initial_scale=2.0**24)
    messages = []
    metrics = loop.train(log=messages.append)
    reports = [re.search(r"skipped (\d+) of (\d+) updates after step (\d+)", m) for m in messages]
    counts = [int(r.group(1)) for r in reports if r]
    assert counts, messages  # a scale of 2**24 overflows float16 gradients until it has halved enough
    assert loop.step == 20 and metrics["skipped_steps"] == sum(counts)
    # Each skip halves the scale (no growth within dynamic_growth_steps=2000 updates).
    assert metrics["loss_scale"] == 2.0 ** (24 - sum(counts))
    assert f"{sum(counts)} skipped in this run." in [m for m in messages if "skipped" in m][-1]


@pytest.mark.parametrize("seconds, expected", [(0, True), (600, False)])
def test_a_slow_first_call_is_explained_once(tmp_path, monkeypatch, seconds, expected):
    monkeypatch.setattr(trainer, "FIRST_CALL_NOTICE_SECONDS", seconds)
    messages = []
    _loop(tmp_path, train_steps=10).train(log=messages.append)
    notices = [m for m in messages if m.startswith("The first steps are taking over")]
    assert len(notices) == (1 if expected else 0), messages
    if expected:
        assert "filling its buffers" in notices[0] and "compiled" in notices[0]
