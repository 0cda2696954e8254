"""MPNet's encoder: a `BertEncoder` whose blocks add one relative position bias to their attention scores.

The bias (`RelativePositionBias`, Hugging Face's `encoder.relative_attention_bias`) is computed once per forward
from the column distances; every path (the graph, training's fused projections, `call_unpadded` on the token
matrix, `call_at` on some queries) gives the graph's numbers at real tokens. Parity with transformers on real
weights is in tests/checkpoints/new_families_test.py.
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig, ConfigError
from bert_tf.layers.relative_position_bias import RelativePositionBias, relative_position_bucket
from bert_tf.models import BertClassifier, BertEncoder, BertPretrainer
from bert_tf.training.distillation_layers import encoder_states
from tests.models.common import POSITIONS, assert_config_round_trips, padded_batch

# Key position minus query position -> bucket, worked out by hand from transformers' formula (32 buckets,
# max_distance 128): keys before the query in buckets 0-15, after it in 16-31; distances 0-7 exact, then
# 8 + int(2 * log2(d / 8)) up to 15.
BUCKETS = {
    0: 0,
    -1: 1,
    -7: 7,
    -8: 8,
    -11: 8,
    -12: 9,
    -16: 10,
    -23: 11,
    -32: 12,
    -45: 12,
    -46: 13,
    -64: 14,
    -90: 14,
    -91: 15,
    -128: 15,
    -1000: 15,
    1: 17,
    7: 23,
    8: 24,
    12: 25,
    16: 26,
    91: 31,
    1000: 31,
}


def tiny_mpnet(**overrides):
    """A tiny MPNet encoder (no segments, positions from 2, 32 buckets) whose bias table is large enough to
    change every attention: drawn with stddev 1 instead of the initializer's 0.02."""
    args = dict(
        vocabulary_size=30,
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_position_embeddings=16,
        type_vocab_size=0,
        position_offset=2,
        model_type="mpnet",
        relative_attention_num_buckets=32,
        dropout=0.0,
        attention_dropout=0.0,
    )
    encoder = BertEncoder(**{**args, **overrides})
    table = encoder.relative_attention_bias.embeddings
    table.assign(np.random.default_rng(0).normal(size=table.shape).astype(np.float32))
    return encoder


@pytest.fixture(scope="module")
def encoder():
    return tiny_mpnet()


def _real(batch):
    return np.asarray(batch["padding_mask"], bool)


def test_buckets_are_transformers():
    distances = np.array(list(BUCKETS), np.int32)
    np.testing.assert_array_equal(relative_position_bucket(distances).numpy(), list(BUCKETS.values()))


def test_bias_is_the_table_row_of_each_pair_and_changes_the_outputs(encoder):
    bias = encoder.relative_attention_bias(tf.zeros((1, 5, 8))).numpy()  # [1, N, T, T]
    table = encoder.relative_attention_bias.embeddings.numpy()
    assert bias.shape == (1, 2, 5, 5)
    np.testing.assert_array_equal(bias[0, :, 1, 4], table[19])  # key 3 after the query: 16 + 3
    np.testing.assert_array_equal(bias[0, :, 4, 0], table[4])  # key 4 before it
    batch = padded_batch()
    without = tiny_mpnet()
    without.set_weights(encoder.get_weights())
    without.relative_attention_bias.embeddings.assign(np.zeros((32, 2), np.float32))
    real = _real(batch)
    moved = encoder(batch)["sequence_output"].numpy()[real] - without(batch)["sequence_output"].numpy()[real]
    assert np.abs(moved).max() > 1e-3  # far above the 1e-5 the paths below are held to


def test_unpadded_and_call_at_equal_the_graph_at_real_tokens(encoder):
    batch = padded_batch()
    full = encoder(batch, training=False)
    real = _real(batch)
    unpadded = encoder.call_unpadded(batch)
    np.testing.assert_allclose(
        unpadded["sequence_output"].numpy()[real], full["sequence_output"].numpy()[real], atol=1e-5
    )
    for ours, theirs in zip(unpadded["encoder_outputs"], full["encoder_outputs"], strict=True):
        np.testing.assert_allclose(ours.numpy()[real], theirs.numpy()[real], atol=1e-5)
    gathered = np.take_along_axis(full["sequence_output"].numpy(), POSITIONS[:, :, None], axis=1)
    for cut in (False, True):
        at = encoder.call_at(batch, POSITIONS, pooled=True, unpadded=cut)
        np.testing.assert_allclose(at["selected_output"], gathered, atol=1e-5)
        np.testing.assert_allclose(at["pooled_output"], full["pooled_output"], atol=1e-5)


def test_training_paths_equal_the_graph_values_and_gradients(encoder):
    """Training projects with the fused kernels (`_project`) and the padding-free path cuts exactly: the same
    values and gradients as the graph (dropout off)."""
    batch = padded_batch()
    real = _real(batch)
    weights = tf.constant(np.random.default_rng(1).normal(size=(4, 9, 8)).astype(np.float32) * real[:, :, None])

    def gradients(forward):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(forward() * weights)
        return loss, tape.gradient(loss, encoder.trainable_variables)

    graph_loss, graph = gradients(lambda: encoder(batch, training=True)["sequence_output"])
    fast_loss, fast = gradients(lambda: encoder.call_unpadded(batch, training=True)["sequence_output"])
    np.testing.assert_allclose(fast_loss, graph_loss, rtol=1e-5)
    for variable, ours, theirs in zip(encoder.trainable_variables, fast, graph, strict=True):
        if theirs is None:  # the pooler: the sequence output does not read it
            assert ours is None, variable.path
            continue
        np.testing.assert_allclose(
            tf.convert_to_tensor(ours), tf.convert_to_tensor(theirs), atol=1e-5, err_msg=variable.path
        )
    assert any(v.path.endswith("relative_attention_bias/embeddings") for v in encoder.trainable_variables)


def test_task_models_call_selected_equal_their_graph(encoder):
    batch = padded_batch()
    classifier = BertClassifier(encoder, num_classes=3, dropout=0.0)
    np.testing.assert_allclose(classifier(batch), classifier.call_graph(batch), atol=1e-5)
    pretrainer = BertPretrainer(encoder)
    inputs = {**batch, "mask_positions": POSITIONS}
    np.testing.assert_allclose(pretrainer(inputs)["mlm"], pretrainer.call_graph(inputs)["mlm"], atol=1e-5)


def test_config_round_trips_and_bert_config_fields(tmp_path):
    config = assert_config_round_trips(tiny_mpnet(), tmp_path)
    assert (config.model_type, config.relative_attention_num_buckets, config.type_vocab_size) == ("mpnet", 32, 0)
    assert config.to_dict()["relative_attention_num_buckets"] == 32
    assert "relative_attention_num_buckets" not in BertConfig(vocab_size=30).to_dict()
    with pytest.raises(ValueError, match="num_buckets.*>= 32.*num_buckets=16"):
        RelativePositionBias(2, 16)
    with pytest.raises(ConfigError, match="relative_attention_num_buckets.*MPNet's.*Received: relative_attention_num"):
        BertConfig(vocab_size=30, relative_attention_num_buckets=32)


def test_mixed_bfloat16_is_close_and_float32():
    encoder = tiny_mpnet(dtype="mixed_bfloat16")
    reference = tiny_mpnet()
    reference.set_weights(encoder.get_weights())
    batch = padded_batch()
    real = _real(batch)
    ours = encoder.call_unpadded(batch)["sequence_output"]
    assert ours.dtype == tf.float32
    np.testing.assert_allclose(ours.numpy()[real], reference(batch)["sequence_output"].numpy()[real], atol=0.1)


def test_layer_by_layer_distillation_reads_the_bias(encoder):
    """`encoder_states` (hidden-state distillation) gives the graph's outputs, and each layer's recomputed
    attention map, applied to its values, gives the layer's attention output: both with the position bias."""
    batch = padded_batch()
    states, outputs = encoder_states(encoder, batch, attention=True), encoder(batch)
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(states[name], outputs[name], atol=1e-6)
    x = encoder.embed(batch)
    (bias,) = encoder.block_arguments(x)
    attention = encoder.transformer_layers[0].attention
    value = tf.reshape(attention.value_dense(x), (4, 9, 2, 4))  # [B, T, N, D]
    context = tf.einsum("bnqk,bknd->bqnd", states["attention_probabilities"][0], value)
    ours = attention.output_dense(tf.reshape(context, (4, 9, 8)))
    np.testing.assert_allclose(ours, attention(x, batch["padding_mask"], bias), atol=1e-5)
