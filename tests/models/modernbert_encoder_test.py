"""ModernBertEncoder and its layers: the encoder contract, rotary positions, the sliding window, GeGLU, pooling.

Parity with transformers' outputs is in tests/checkpoints/modernbert_test.py.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig, ConfigError
from bert_tf.layers import GeGLUFeedForward, RotaryEmbedding, gelu_erf, in_window, inverse_frequencies
from bert_tf.models import (
    BertClassifier,
    BertEncoder,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenClassifier,
)
from tests.helpers import random_inputs
from tests.models.common import MODERNBERT_LAYERS, POSITIONS, assert_config_round_trips, padded_batch, tiny_modernbert


def test_rotary_embedding_rotates_halves_and_keeps_relative_scores():
    rotary = RotaryEmbedding(4, theta=100.0)
    x = tf.constant(np.arange(1.0, 5.0, dtype=np.float32)[None, None, None])  # [1, 1, 1, 4]
    angle = 3 * inverse_frequencies(4, 100.0)  # position 3: angles 3 and 3 / 10
    expected = [
        1 * np.cos(angle[0]) - 3 * np.sin(angle[0]),
        2 * np.cos(angle[1]) - 4 * np.sin(angle[1]),
        3 * np.cos(angle[0]) + 1 * np.sin(angle[0]),
        4 * np.cos(angle[1]) + 2 * np.sin(angle[1]),
    ]  # pairs (0, 2) and (1, 3): the rotate-half layout
    np.testing.assert_allclose(rotary(x, tf.constant([3]))[0, 0, 0], expected, rtol=1e-6)
    q, k = tf.random.stateless_normal((2, 1, 1, 4), seed=(1, 2))
    score = lambda p, r: float(tf.reduce_sum(rotary(q[None], tf.constant([p])) * rotary(k[None], tf.constant([r]))))  # noqa: E731
    assert score(2, 7) == pytest.approx(score(12, 17), abs=1e-5)  # depends on the distance only


def test_window_admits_half_the_width_on_each_side():
    window = in_window(tf.range(6), tf.range(6), 4).numpy()
    assert window[0].tolist() == [True, True, True, False, False, False]
    assert window[3].tolist() == [False, True, True, True, True, True]
    encoder = tiny_modernbert(num_layers=1, layer_types=("sliding_attention",))
    batch = random_inputs(batch=1, length=9, seed=3)
    ids = batch["token_ids"].copy()
    ids[0, 8] = 5 if ids[0, 8] != 5 else 6
    before, after = encoder(batch)["sequence_output"], encoder(dict(batch, token_ids=ids))["sequence_output"]
    np.testing.assert_allclose(before[0, :6], after[0, :6], atol=1e-7)  # 8 is more than 2 away from 0 .. 5
    assert not np.allclose(before[0, 6:], after[0, 6:])


def test_geglu_is_activation_of_the_first_half_times_the_second():
    layer = GeGLUFeedForward(4, 3, activation="gelu", use_bias=False, name="ffn")
    x = tf.random.stateless_normal((2, 4), seed=(3, 4))
    y = layer(x).numpy()
    projected = x.numpy() @ layer.intermediate_dense.kernel.numpy()
    inputs, gate = projected[:, :3], projected[:, 3:]
    gelu = 0.5 * inputs * (1 + tf.math.erf(inputs / np.sqrt(2.0)).numpy())
    np.testing.assert_allclose(y, (gelu * gate) @ layer.output_dense.kernel.numpy(), atol=1e-6)
    assert [w.path for w in layer.weights] == [
        "ffn/intermediate/kernel",
        "ffn/output/kernel",
    ]


def test_outputs_shapes_dtypes_padding_independence_and_fast_paths():
    encoder = tiny_modernbert()
    batch = padded_batch()
    mask = batch["padding_mask"][:, :, None]
    full = encoder(batch)
    assert full["sequence_output"].shape == (4, 9, 8) and full["pooled_output"].shape == (4, 8)
    assert len(full["encoder_outputs"]) == 3 and all(h.dtype == tf.float32 for h in full["encoder_outputs"])
    np.testing.assert_array_equal(full["encoder_outputs"][-1], full["sequence_output"])
    # Row 1 alone, cut to its 5 real tokens, gives the same outputs there.
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


def test_mean_pooling_and_biases_follow_the_config():
    encoder = tiny_modernbert(
        classifier_pooling="mean", norm_bias=True, attention_bias=True, mlp_bias=True, classifier_bias=True
    )
    batch = padded_batch()
    out = encoder(batch)
    mask = batch["padding_mask"][:, :, None].astype(np.float32)
    mean = (out["sequence_output"].numpy() * mask).sum(1) / mask.sum(1)
    pooler = encoder.pooler
    dense = mean @ pooler.dense.kernel.numpy() + pooler.dense.bias.numpy()
    np.testing.assert_allclose(out["pooled_output"], pooler.norm(gelu_erf(tf.constant(dense))), atol=1e-5)
    paths = {v.path for v in encoder.weights}
    assert {
        "pooler/norm/beta",
        "transformer_layer_1/attention/qkv/bias",
        "transformer_layer_1/mlp/output/bias",
    } <= paths
    assert "transformer_layer_0/attention_layer_norm/gamma" not in paths  # layer 0: no attention norm
    bare = {v.path for v in tiny_modernbert().weights}
    assert not any(path.endswith(("/bias", "/beta")) for path in bare)


def test_task_models_run_on_it_unchanged():
    encoder = tiny_modernbert()
    batch = padded_batch()
    pretrainer = BertPretrainer(encoder, nsp=False)
    logits = pretrainer({**batch, "mask_positions": POSITIONS})["mlm"]
    assert logits.shape == (4, 3, 30)
    np.testing.assert_allclose(pretrainer.call_graph({**batch, "mask_positions": POSITIONS})["mlm"], logits, atol=1e-5)
    # ModernBERT's masked-LM transform: classifier_activation, no dense or LayerNorm bias; the decoder's bias stays.
    assert sorted(v.path for v in pretrainer.weights if v.path.startswith("mlm_head/")) == [
        "mlm_head/output_bias",
        "mlm_head/transform_dense/kernel",
        "mlm_head/transform_layer_norm/gamma",
    ]
    no_decoder_bias = BertPretrainer(tiny_modernbert(decoder_bias=False), nsp=False)
    assert "mlm_head/output_bias" not in {v.path for v in no_decoder_bias.weights}
    assert BertClassifier(encoder, 3)(batch).shape == (4, 3)
    assert BertTokenClassifier(encoder, 5).call_unpadded(batch).shape == (4, 9, 5)
    assert BertSpanLabeler(encoder)(batch)["start_logits"].shape == (4, 9)


def test_token_and_span_heads_transform_every_token_first(tmp_path):
    """transformers' ModernBERT token-classification and QA classes run `head` (dense, classifier_activation,
    LayerNorm) on every token before their logits: so do `BertTokenClassifier` and `BertSpanLabeler` on it."""
    encoder = tiny_modernbert(classifier_bias=True, classifier_activation="gelu")
    batch = padded_batch()
    tagger, span = BertTokenClassifier(encoder, 5), BertSpanLabeler(encoder)
    sequence = encoder(batch)["sequence_output"]
    dense = tagger.transform.dense
    x = gelu_erf(tf.matmul(sequence, dense.kernel) + dense.bias)
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    transformed = (x - mean) / tf.sqrt(variance + 1e-5) * tagger.transform.norm.gamma
    expected = tf.matmul(transformed, tagger.head.dense.kernel) + tagger.head.dense.bias  # [B, T, 5]
    mask = batch["padding_mask"][:, :, None].astype(bool)
    for logits in (tagger.call_graph(batch), tagger(batch), tagger.call_unpadded(batch)):
        np.testing.assert_allclose(np.where(mask, logits, 0), np.where(mask, expected, 0), atol=1e-5)
    assert sorted(v.path for v in span.weights if v.path.startswith("span_transform/")) == [
        "span_transform/dense/bias",
        "span_transform/dense/kernel",
        "span_transform/norm/gamma",
    ]
    graph, unpadded = span.call_graph(batch), span.call_unpadded(batch)
    for name in ("start_logits", "end_logits"):
        np.testing.assert_allclose(
            np.where(mask[..., 0], unpadded[name], 0), np.where(mask[..., 0], graph[name], 0), atol=1e-5
        )
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(span(batch, training=True)["start_logits"] * tf.cast(batch["padding_mask"], tf.float32))
    assert all(g is not None for g in tape.gradient(loss, span.transform.trainable_variables))
    path = str(tmp_path / "tagger.keras")
    tagger.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded.call_graph(batch), tagger.call_graph(batch), atol=1e-6)


def test_training_with_dropout_gives_gradients_everywhere():
    encoder = tiny_modernbert(dropout=0.1, attention_dropout=0.1)
    classifier = BertClassifier(encoder, 3)
    batch = padded_batch()
    labels = tf.constant([0, 1, 2, 1])
    with tf.GradientTape() as tape:
        logits = classifier(batch, training=True)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    gradients = tape.gradient(loss, classifier.trainable_variables)
    assert np.isfinite(loss.numpy()) and all(g is not None for g in gradients)
    assert not np.allclose(classifier(batch, training=True).numpy(), classifier(batch).numpy())


def test_config_keras_file_and_bert_config_round_trips(tmp_path):
    encoder = tiny_modernbert(classifier_pooling="mean", global_rope_theta=1000.0, pad_token_id=3)
    config = assert_config_round_trips(encoder, tmp_path)
    assert config.model_type == "modernbert" and config.layer_types == MODERNBERT_LAYERS and config.type_vocab_size == 0
    assert BertConfig.from_hf_dict(config.to_hf_dict()) == config


def test_bad_options_are_named():
    with pytest.raises(ConfigError, match=r"layer_types.*Received: layer_types\[1\]='local'"):
        tiny_modernbert(layer_types=("full_attention", "local", "full_attention"))
    with pytest.raises(ConfigError, match=r"one layer type per layer \(3\)"):
        tiny_modernbert(layer_types=("full_attention",))
    with pytest.raises(ConfigError, match=r"classifier_pooling.*Received: classifier_pooling='max'"):
        tiny_modernbert(classifier_pooling="max")
    with pytest.raises(ValueError, match=r"its own encoder class"):
        BertEncoder(30, 1, 2, 8, 16, model_type="modernbert")


def test_jit_compile_equals_eager_and_mixed_bfloat16_keeps_norms_in_float32():
    encoder = tiny_modernbert()
    batch = {name: tf.constant(value) for name, value in padded_batch().items()}
    eager = encoder(batch)["sequence_output"]
    compiled = tf.function(lambda b: encoder(b)["sequence_output"], jit_compile=True)(batch)
    np.testing.assert_allclose(compiled, eager, atol=1e-5)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        low = tiny_modernbert()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    block = low.transformer_layers[1]
    assert block.attention.qkv_dense.compute_dtype == "bfloat16" and block.mlp_layer_norm.compute_dtype == "float32"
    assert low.final_layer_norm.compute_dtype == "float32" and all(w.dtype == "float32" for w in low.weights)
    low.set_weights(encoder.get_weights())
    output = low(batch)["sequence_output"]
    assert output.dtype == tf.float32 and 0.0 < np.abs(output - eager).max() < 0.15  # bfloat16: close, not equal
