"""Schedules and optimizers: warmup/decay values, decay exclusions, clipping, LAMB, loss scaling."""

import keras
import numpy as np
import pytest

from bert_tf.models import BertPretrainer
from bert_tf.training.optimization import WarmupLinearDecay, create_optimizer
from tests.helpers import tiny_encoder


def test_warmup_then_linear_decay_to_zero():
    schedule = WarmupLinearDecay(1e-3, warmup_steps=10, total_steps=110)
    values = [float(schedule(step)) for step in (0, 5, 10, 60, 110, 200)]
    np.testing.assert_allclose(values, [0.0, 5e-4, 1e-3, 5e-4, 0.0, 0.0], atol=1e-9)
    restored = WarmupLinearDecay.from_config(schedule.get_config())
    assert float(restored(60)) == pytest.approx(5e-4)


def test_bad_schedule_arguments_are_named():
    with pytest.raises(ValueError, match="warmup_steps=20, total_steps=10"):
        WarmupLinearDecay(1e-3, 20, 10)
    with pytest.raises(ValueError, match="name='sgd'"):
        create_optimizer("sgd")


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_weight_decay_skips_layer_norm_and_biases(name):
    model = BertPretrainer(tiny_encoder())
    optimizer = create_optimizer(name, learning_rate=1e-3, total_steps=10, weight_decay=0.1)
    optimizer.build(model.trainable_variables)
    decayed = {v.path for v in model.trainable_variables if optimizer._use_weight_decay(v)}
    assert "transformer_layer_0/attention/query/kernel" in decayed
    assert "embeddings/token_embedding/embeddings" in decayed
    for v in model.trainable_variables:
        if v.name in ("gamma", "beta", "bias", "output_bias"):
            assert v.path not in decayed, v.path


def test_global_norm_clipping_and_loss_scaling():
    optimizer = create_optimizer(clip_norm=0.5, total_steps=10, warmup_steps=0)
    assert optimizer.global_clipnorm == 0.5
    scaled = create_optimizer(loss_scale=True, total_steps=10)
    assert isinstance(scaled, keras.optimizers.LossScaleOptimizer)
