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


def _adamw_run(optimizer_class, sparse=False, clip=None, densify=False, **options):
    import tensorflow as tf

    kernel = keras.Variable(np.arange(12, dtype="float32").reshape(3, 4) / 10, name="kernel")
    bias = keras.Variable(np.ones(4, "float32"), name="bias")
    optimizer = optimizer_class(learning_rate=0.05, weight_decay=0.1, epsilon=1e-6, global_clipnorm=clip, **options)
    optimizer.exclude_from_weight_decay(var_names=["bias"])

    @tf.function
    def step(i):
        kernel_grad = tf.sin(kernel.value * (i + 1.0))
        if sparse:  # rows 0, 2 and 2 again, as an embedding lookup of a repeated token gives
            rows = tf.constant([0, 2, 2])
            kernel_grad = tf.IndexedSlices(
                tf.gather(kernel_grad, rows) * [[1.0], [1.0], [0.5]], rows, tf.shape(kernel_grad)
            )
            if densify:
                kernel_grad = tf.convert_to_tensor(kernel_grad)
        optimizer.apply([kernel_grad, tf.cos(bias.value + i)], [kernel, bias])

    for i in range(6):
        step(tf.constant(float(i)))
    return kernel.numpy(), bias.numpy()


@pytest.mark.parametrize("clip", [None, 0.5, 100.0])
@pytest.mark.parametrize("sparse", [False, True])
def test_fused_adamw_follows_keras_adamw(sparse, clip):
    """Decay, clipping (the factor below 1 at 0.5, 1 at 100) and Adam as Keras' AdamW does them on the dense gradient:
    a sparse gradient with a repeated row (the same token twice in a batch) counts as its densified sum, in the
    clipping norm and in the moments."""
    from bert_tf.training.optimization import FusedAdamW

    theirs = _adamw_run(keras.optimizers.AdamW, sparse, clip, densify=True)
    for ours, expected in zip(_adamw_run(FusedAdamW, sparse, clip), theirs):
        np.testing.assert_allclose(ours, expected, atol=1e-5)
    assert type(create_optimizer("adamw")).__name__ == "FusedAdamW"


def test_fused_adamw_follows_keras_adamw_with_gradient_accumulation():
    """Keras clips and decays inside its accumulation branch: the clip factor is computed and used in that branch."""
    from bert_tf.training.optimization import FusedAdamW

    theirs = _adamw_run(keras.optimizers.AdamW, clip=0.5, gradient_accumulation_steps=2)
    for ours, expected in zip(_adamw_run(FusedAdamW, clip=0.5, gradient_accumulation_steps=2), theirs):
        np.testing.assert_allclose(ours, expected, atol=1e-5)


def test_fused_adamw_clips_to_nan_on_an_infinite_norm():
    """Keras' rule: a non-finite global norm makes the update NaN (loss scaling relies on it to skip the step)."""
    import tensorflow as tf

    from bert_tf.training.optimization import FusedAdamW

    kernel = keras.Variable(np.ones((2, 2), "float32"), name="kernel")
    optimizer = FusedAdamW(learning_rate=0.1, global_clipnorm=1.0)
    optimizer.apply([tf.constant([[np.inf, 1.0], [1.0, 1.0]])], [kernel])
    assert np.isnan(kernel.numpy()).all()
