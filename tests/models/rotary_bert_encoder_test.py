"""NomicBertEncoder and GteEncoder: the encoder contract, the gated MLPs, the family's biases, the fast paths.

Parity with transformers' outputs is in tests/checkpoints/rotary_families_test.py.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig, ConfigError
from bert_tf.layers import GatedFeedForward, gelu_erf
from bert_tf.models import BertClassifier, BertPretrainer, BertTokenClassifier, GteEncoder, NomicBertEncoder
from tests.helpers import random_inputs
from tests.models.common import POSITIONS, assert_config_round_trips, padded_batch


def _tiny(cls, **overrides):
    """A tiny encoder of `cls`: 2 layers, 2 heads of 4, a gated MLP of 12; dropout off."""
    args = dict(
        vocabulary_size=30,
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=12,
        max_position_embeddings=16,
        dropout=0.0,
        attention_dropout=0.0,
        type_vocab_size=2 if cls is NomicBertEncoder else 0,
    )
    return cls(**{**args, **overrides})


@pytest.mark.parametrize("fused", [True, False])
def test_gated_feed_forward_is_up_times_the_activated_gate(fused):
    layer = GatedFeedForward(8, 12, activation="gelu", fused=fused, up_bias=False, down_bias=fused, name="mlp")
    x = np.random.default_rng(0).normal(size=(2, 3, 8)).astype(np.float32)
    y = layer(x).numpy()
    if fused:  # one [H, 2I] kernel: the up projection, then the gate
        up, gate = np.split(x @ layer.up_gate_dense.kernel.numpy(), 2, axis=-1)
    else:
        up, gate = x @ layer.up_dense.kernel.numpy(), x @ layer.gate_dense.kernel.numpy()
    expected = (up * gelu_erf(tf.constant(gate)).numpy()) @ layer.down_dense.kernel.numpy()
    if fused:
        expected = expected + layer.down_dense.bias.numpy()
    np.testing.assert_allclose(y, expected, atol=1e-5)
    paths = sorted(w.path for w in layer.weights)
    if fused:
        assert paths == ["mlp/down/bias", "mlp/down/kernel", "mlp/up_gate/kernel"]
    else:
        assert paths == ["mlp/down/kernel", "mlp/gate/kernel", "mlp/up/kernel"]


def test_each_family_has_its_biases_and_segment_table():
    nomic = {w.path for w in _tiny(NomicBertEncoder).weights}
    assert "segment_embedding/embeddings" in nomic and "transformer_layer_0/mlp/gate/kernel" in nomic
    assert not any(path.endswith("/bias") and "transformer_layer" in path for path in nomic)  # no biases at all
    gte = {w.path for w in _tiny(GteEncoder).weights}
    assert "segment_embedding/embeddings" not in gte
    assert {
        "transformer_layer_1/attention/qkv/bias",
        "transformer_layer_1/attention/attention_output/bias",
        "transformer_layer_1/mlp/down/bias",
    } <= gte
    assert "transformer_layer_1/mlp/up_gate/bias" not in gte


@pytest.mark.parametrize("cls", [NomicBertEncoder, GteEncoder])
def test_outputs_padding_independence_and_fast_paths(cls):
    encoder = _tiny(cls)
    batch = padded_batch()
    mask = batch["padding_mask"][:, :, None]
    full = encoder(batch)
    assert full["sequence_output"].shape == (4, 9, 8) and full["pooled_output"].shape == (4, 8)
    assert len(full["encoder_outputs"]) == 2 and all(h.dtype == tf.float32 for h in full["encoder_outputs"])
    alone = encoder({name: value[1:2, :5] for name, value in batch.items()})
    np.testing.assert_allclose(alone["sequence_output"][0], full["sequence_output"][1, :5], atol=1e-5)
    np.testing.assert_allclose(alone["pooled_output"][0], full["pooled_output"][1], atol=1e-5)
    at = tf.function(lambda b, p: encoder.call_at(b, p, pooled=True))(batch, POSITIONS)
    np.testing.assert_allclose(
        at["selected_output"], np.take_along_axis(full["sequence_output"].numpy(), POSITIONS[:, :, None], 1), atol=1e-6
    )
    np.testing.assert_allclose(at["pooled_output"], full["pooled_output"], atol=1e-6)
    unpadded = tf.function(encoder.call_unpadded)(batch)
    np.testing.assert_allclose(unpadded["sequence_output"], full["sequence_output"] * mask, atol=1e-5)
    short = random_inputs(batch=4, length=12, lengths=[5, 3, 1, 4], seed=7)
    cut = encoder.call_at(short, None, pooled=True, unpadded=True)
    np.testing.assert_allclose(cut["pooled_output"], encoder(short)["pooled_output"], atol=1e-5)


def test_task_models_run_on_it_and_train_with_dropout():
    encoder = _tiny(NomicBertEncoder, dropout=0.1, attention_dropout=0.1)
    batch = padded_batch()
    pretrainer = BertPretrainer(encoder, nsp=False)
    logits = pretrainer({**batch, "mask_positions": POSITIONS})["mlm"]
    assert logits.shape == (4, 3, 30)
    np.testing.assert_allclose(pretrainer.call_graph({**batch, "mask_positions": POSITIONS})["mlm"], logits, atol=1e-5)
    assert BertTokenClassifier(encoder, 5).call_unpadded(batch).shape == (4, 9, 5)
    classifier = BertClassifier(encoder, 3)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant([0, 1, 2, 1]), classifier(batch, training=True))
        )
    gradients = tape.gradient(loss, classifier.trainable_variables)
    assert np.isfinite(loss.numpy()) and all(g is not None for g in gradients)
    assert not np.allclose(classifier(batch, training=True).numpy(), classifier(batch).numpy())


@pytest.mark.parametrize(
    "cls, overrides",
    [(NomicBertEncoder, {"rope_theta": 1000.0}), (GteEncoder, {"rope_type": "dynamic", "rope_factor": 2.0})],
)
def test_config_keras_file_and_bert_config_round_trips(tmp_path, cls, overrides):
    encoder = _tiny(cls, **overrides)
    config = assert_config_round_trips(encoder, tmp_path)
    assert config.model_type == cls.model_type and config.rope_theta == encoder.rope_theta
    assert BertConfig.from_hf_dict(config.to_hf_dict()) == config
    assert BertConfig.from_dict(config.to_dict()) == config


def test_bad_options_are_named():
    with pytest.raises(ConfigError, match=r"rope_type.*Received: rope_type='yarn'"):
        _tiny(GteEncoder, rope_type="yarn", rope_factor=2.0)
    with pytest.raises(ConfigError, match=r"rope_factor.*Received: rope_factor=0.5"):
        _tiny(GteEncoder, rope_type="dynamic", rope_factor=0.5)
    with pytest.raises(ConfigError, match=r"`rope_factor` scales.*Received: rope_factor=2.0"):
        _tiny(NomicBertEncoder, rope_factor=2.0)


def test_mixed_bfloat16_keeps_norms_in_float32():
    encoder = _tiny(GteEncoder)
    batch = {name: tf.constant(value) for name, value in padded_batch().items()}
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        low = _tiny(GteEncoder)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    block = low.transformer_layers[1]
    assert block.attention.qkv_dense.compute_dtype == "bfloat16" and block.mlp_layer_norm.compute_dtype == "float32"
    low.set_weights(encoder.get_weights())
    output = low(batch)["sequence_output"]
    eager = encoder(batch)["sequence_output"]
    assert output.dtype == tf.float32 and 0.0 < np.abs(output - eager).max() < 0.15
