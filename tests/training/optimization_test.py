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


def _adamw_run(optimizer_class, sparse=False):
    import tensorflow as tf

    kernel = keras.Variable(np.arange(12, dtype="float32").reshape(3, 4) / 10, name="kernel")
    bias = keras.Variable(np.ones(4, "float32"), name="bias")
    optimizer = optimizer_class(learning_rate=0.05, weight_decay=0.1, epsilon=1e-6)
    optimizer.exclude_from_weight_decay(var_names=["bias"])

    @tf.function
    def step(i):
        kernel_grad = tf.sin(kernel.value * (i + 1.0))
        if sparse:  # rows 0 and 2 only, as an embedding lookup gives
            kernel_grad = tf.IndexedSlices(tf.gather(kernel_grad, [0, 2]), tf.constant([0, 2]), tf.shape(kernel_grad))
        optimizer.apply([kernel_grad, tf.cos(bias.value + i)], [kernel, bias])

    for i in range(6):
        step(tf.constant(float(i)))
    return kernel.numpy(), bias.numpy()


@pytest.mark.parametrize("sparse", [False, True])
def test_fused_adamw_follows_keras_adamw(sparse):
    from bert_tf.training.optimization import FusedAdamW

    for ours, theirs in zip(_adamw_run(FusedAdamW, sparse), _adamw_run(keras.optimizers.AdamW, sparse)):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)
    assert type(create_optimizer("adamw")).__name__ == "FusedAdamW"
