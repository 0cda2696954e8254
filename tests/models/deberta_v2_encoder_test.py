"""DebertaV2Encoder: the contract of every encoder, its relative positions, XLA and mixed precision.

Parity with transformers' outputs (real and tiny random checkpoints) is in
tests/checkpoints/deberta_test.py.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig, ConfigError
from bert_tf.layers import log_bucket_position, relative_position_index
from bert_tf.models import (
    BertClassifier,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenClassifier,
    DebertaV2Encoder,
)
from tests.helpers import random_inputs
from tests.models.common import POSITIONS, assert_config_round_trips, padded_batch


def tiny(**overrides):
    """A tiny DeBERTa-v3-like encoder (4 buckets, so that 9 tokens reach the log scale), dropout off."""
    args = dict(
        vocabulary_size=30,
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        dropout=0.0,
        attention_dropout=0.0,
        max_position_embeddings=16,
        position_buckets=4,
    )
    args.update(overrides)
    return DebertaV2Encoder(**args)


# The options of DeBERTa-v2 xlarge and of other checkpoints next to v3's defaults.
VARIANTS = {
    "v3": {},
    "conv": dict(conv_kernel_size=3, position_biased_input=True, type_vocab_size=2, pos_att_type=("c2p",)),
    "plain": dict(position_buckets=-1, max_relative_positions=3, pos_att_type=("p2c",), share_att_key=False),
}


def _numpy_buckets(distance, buckets, max_position):
    """The reference formula in float32 numpy (make_log_bucket_position)."""
    mid = buckets // 2
    distance = np.asarray(distance, np.int64)
    absolute = np.where((distance < mid) & (distance > -mid), mid - 1, np.abs(distance))
    scale = np.log(np.float32((max_position - 1) / mid))
    log_position = np.ceil(np.log(absolute.astype(np.float32) / np.float32(mid)) / scale * np.float32(mid - 1)) + mid
    return np.where(absolute <= mid, distance, (log_position * np.sign(distance)).astype(np.int64))


@pytest.mark.parametrize("buckets, max_position", [(256, 512), (32, 128)])
def test_log_buckets_follow_the_reference_formula_beyond_the_buckets(buckets, max_position):
    distance = np.arange(-1500, 1501)
    ours = log_bucket_position(tf.constant(distance), buckets, max_position).numpy()
    np.testing.assert_array_equal(ours, _numpy_buckets(distance, buckets, max_position))
    np.testing.assert_array_equal(ours, -ours[::-1])  # odd: p2c's index is c2p's, transposed
    assert ours[1500 + 3] == 3 and abs(ours).max() > buckets // 2


def test_relative_position_index_clips_plain_distances_to_the_span():
    index = relative_position_index(tf.range(5), 5, position_buckets=-1, max_relative_positions=2).numpy()
    assert index[0].tolist() == [2, 1, 0, 0, 0] and index[4].tolist() == [3, 3, 3, 3, 2]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_outputs_shapes_dtypes_and_padding_independence(variant):
    encoder = tiny(**VARIANTS[variant])
    batch = padded_batch()
    out = encoder(batch)
    assert out["sequence_output"].shape == (4, 9, 8) and out["pooled_output"].shape == (4, 8)
    assert len(out["encoder_outputs"]) == 2 and all(h.dtype == tf.float32 for h in out["encoder_outputs"])
    # Row 1 alone, cut to its 5 real tokens, gives the same outputs there.
    alone = encoder({name: value[1:2, :5] for name, value in batch.items()})
    np.testing.assert_allclose(alone["sequence_output"][0], out["sequence_output"][1, :5], atol=1e-5)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_jit_compile_equals_eager(variant):
    encoder = tiny(**VARIANTS[variant])
    batch = {name: tf.constant(value) for name, value in padded_batch().items()}
    eager = encoder(batch)["sequence_output"]
    compiled = tf.function(lambda b: encoder(b)["sequence_output"], jit_compile=True)(batch)
    np.testing.assert_allclose(compiled, eager, atol=1e-5)


def test_sequences_longer_than_the_buckets_and_the_position_table():
    encoder = tiny(max_position_embeddings=16)  # no absolute positions: 40 tokens is fine
    out = encoder(random_inputs(batch=2, length=40, lengths=[40, 33]))
    assert out["sequence_output"].shape == (2, 40, 8) and np.isfinite(out["sequence_output"]).all()


def test_mixed_bfloat16_keeps_layer_norm_and_softmax_in_float32():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        encoder = tiny(**VARIANTS["conv"])
    finally:
        keras.mixed_precision.set_global_policy("float32")
    block = encoder.transformer_layers[0]
    assert block.intermediate_dense.compute_dtype == "bfloat16"
    assert block.attention_layer_norm.compute_dtype == "float32"
    assert encoder.relative_embeddings.layer_norm.compute_dtype == "float32"
    assert encoder.embeddings.layer_norm.compute_dtype == "float32"
    assert encoder.dtype_policy.name == "mixed_bfloat16"
    assert all(w.dtype == "float32" for w in encoder.weights)
    reference = tiny(**VARIANTS["conv"])
    reference.set_weights(encoder.get_weights())
    batch = padded_batch()
    low, high = encoder(batch), reference(batch)
    assert low["sequence_output"].dtype == tf.float32
    difference = np.abs(low["sequence_output"] - high["sequence_output"]).max()
    assert 0.0 < difference < 0.15  # bfloat16: close, not equal


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_call_at_and_call_unpadded_equal_the_graph_values_and_gradients(variant):
    encoder = tiny(**VARIANTS[variant])
    batch = padded_batch()
    mask = batch["padding_mask"][:, :, None]
    full = encoder(batch)
    at = tf.function(lambda b, p: encoder.call_at(b, p, pooled=True), jit_compile=True)(batch, POSITIONS)
    np.testing.assert_allclose(
        at["selected_output"], np.take_along_axis(full["sequence_output"].numpy(), POSITIONS[:, :, None], 1), atol=1e-6
    )
    np.testing.assert_allclose(at["pooled_output"], full["pooled_output"], atol=1e-6)
    if variant == "conv":  # one layer with the convolution: the whole graph, then a gather
        one = tiny(**VARIANTS["conv"], num_layers=1)
        np.testing.assert_allclose(
            one.call_at(batch, POSITIONS)["selected_output"],
            np.take_along_axis(one(batch)["sequence_output"].numpy(), POSITIONS[:, :, None], 1),
            atol=1e-6,
        )
    unpadded = tf.function(encoder.call_unpadded)(batch)
    np.testing.assert_allclose(unpadded["sequence_output"], full["sequence_output"] * mask, atol=1e-5)
    for ours, theirs in zip(unpadded["encoder_outputs"], full["encoder_outputs"]):
        np.testing.assert_allclose(ours, theirs * mask, atol=1e-5)
    # Rows all shorter than T: inference cuts to 5 columns and runs a bucket of 8 (9 above: padded to 16).
    short = random_inputs(batch=4, length=12, lengths=[5, 3, 1, 4], seed=7)
    short_mask = short["padding_mask"][:, :, None]
    cut = tf.function(encoder.call_unpadded)(short)
    np.testing.assert_allclose(cut["sequence_output"], encoder(short)["sequence_output"] * short_mask, atol=1e-5)
    np.testing.assert_allclose(cut["pooled_output"], encoder(short)["pooled_output"], atol=1e-5)

    def gradients(loss_of):
        with tf.GradientTape() as tape:
            loss = loss_of()
        return tape.gradient(loss, encoder.trainable_variables)

    weights = tf.random.stateless_normal((4, 3, 8), seed=(1, 2))
    graph = gradients(
        lambda: tf.reduce_sum(tf.gather(encoder(batch)["sequence_output"], POSITIONS, batch_dims=1) * weights)
    )
    fast = gradients(lambda: tf.reduce_sum(encoder.call_at(batch, POSITIONS)["selected_output"] * weights))
    names = [v.path for v in encoder.trainable_variables]
    assert [n for n, g in zip(names, graph) if g is None] == [n for n, f in zip(names, fast) if f is None]
    for g, f in zip(graph, fast):
        if g is not None:
            # Float32 round-off scales with the gradient's largest entries (some are ~200 here: a 3e-5 difference
            # on an entry of 0.86 was seen once in a full run); 1e-5 of that scale, as rtol is for each entry.
            g, f = tf.convert_to_tensor(g).numpy(), tf.convert_to_tensor(f).numpy()
            np.testing.assert_allclose(f, g, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(g).max())))


def test_task_models_run_on_it_unchanged():
    encoder = tiny(**VARIANTS["conv"])
    batch = padded_batch()
    pretrainer = BertPretrainer(encoder, nsp=False)
    logits = pretrainer({**batch, "mask_positions": POSITIONS})["mlm"]
    assert logits.shape == (4, 3, 30)
    np.testing.assert_allclose(pretrainer.call_graph({**batch, "mask_positions": POSITIONS})["mlm"], logits, atol=1e-5)
    assert BertClassifier(encoder, 3)(batch).shape == (4, 3)
    assert BertTokenClassifier(encoder, 5).call_unpadded(batch).shape == (4, 9, 5)
    assert BertSpanLabeler(encoder)(batch)["start_logits"].shape == (4, 9)


def test_config_keras_file_and_bert_config_round_trips(tmp_path):
    encoder = tiny(**VARIANTS["plain"], conv_kernel_size=3, conv_groups=2, embedding_size=4)
    config = assert_config_round_trips(encoder, tmp_path)
    assert config.model_type == "deberta-v2" and config.pos_att_type == ("p2c",)


def test_bad_options_are_named():
    with pytest.raises(ConfigError, match=r"pos_att_type.*Received: pos_att_type=\('c2c',\)"):
        tiny(pos_att_type=("c2c",))
    with pytest.raises(ConfigError, match=r"conv_kernel_size.*odd.*Received: conv_kernel_size=4"):
        tiny(conv_kernel_size=4)
    with pytest.raises(ConfigError, match=r"norm_rel_ebd.*Received: norm_rel_ebd='batch_norm'"):
        tiny(norm_rel_ebd="batch_norm")
    with pytest.raises(ConfigError, match=r"`position_buckets` is DeBERTa's.*Received: position_buckets=256"):
        BertConfig(vocab_size=30, position_buckets=256)


def test_training_with_dropout_runs_and_differs_from_inference():
    encoder = tiny(**VARIANTS["conv"], dropout=0.1, attention_dropout=0.1)
    classifier = BertClassifier(encoder, 3)
    batch = padded_batch()
    labels = tf.constant([0, 1, 2, 1])

    @tf.function
    def step(inputs):
        with tf.GradientTape() as tape:
            logits = classifier(inputs, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        return loss, tape.gradient(loss, classifier.trainable_variables)

    loss, gradients = step(batch)
    assert np.isfinite(loss.numpy()) and all(g is not None for g in gradients)
    assert all(np.isfinite(tf.convert_to_tensor(g).numpy()).all() for g in gradients)
    inference = classifier(batch).numpy()
    assert not np.allclose(classifier(batch, training=True).numpy(), inference)


def test_task_model_keras_file_round_trip(tmp_path):
    classifier = BertClassifier(tiny(**VARIANTS["conv"]), 3)
    batch = padded_batch()
    path = str(tmp_path / "classifier.keras")
    classifier.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded.encoder, DebertaV2Encoder)
    np.testing.assert_allclose(loaded(batch), classifier(batch), atol=1e-6)
