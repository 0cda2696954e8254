"""Fused dropout kernels: dropped_softmax and dropout equal their op-by-op definitions, values and gradients; the
attention's inference and training projections compute one function."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.layers.bert_self_attention import BertSelfAttention, dropped_softmax
from bert_tf.layers.dropout import dropout

RATE = 0.1
SEED = tf.constant([7, 3], tf.int32)


def _value_and_gradient(fn, x, upstream, *args):
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = fn(x, *args)
        loss = tf.reduce_sum(out * upstream)
    return out, tape.gradient(loss, x)


def _maybe_dynamic(fn, static, *args):
    if static:
        return fn(*args)
    # Unknown shapes when traced: TensorFlow's ops (philox) instead of the XLA kernels (threefry).
    specs = [tf.TensorSpec([None] * len(a.shape), a.dtype) for a in args]
    return tf.function(fn, input_signature=specs)(*args)


@pytest.mark.parametrize("static", [True, False])
def test_dropped_softmax_is_softmax_masked_and_scaled_with_the_matching_gradient(static):
    rng = np.random.default_rng(0)
    shape = (4, 3, 16, 32)
    scores = tf.constant(rng.normal(size=shape).astype("float32"))
    bias = np.zeros((4, 32), np.float32)
    bias[0, 20:] = -1e9
    bias = tf.constant(bias)
    upstream = tf.constant(rng.normal(size=shape).astype("float32"))
    out, grad = _maybe_dynamic(
        lambda s, b, g: _value_and_gradient(lambda x: dropped_softmax(x, b, SEED, RATE), s, g),
        static,
        scores,
        bias,
        upstream,
    )
    out, grad = out.numpy(), grad.numpy()
    probs = tf.nn.softmax(scores + bias[:, None, None, :]).numpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], probs[kept] / (1 - RATE), rtol=1e-6)
    real = probs > 0
    assert abs((~kept[real]).mean() - RATE) < 0.02  # ~5,900 draws: ±0.4 pp standard error
    assert not np.any(out[0, :, :, 20:])  # padding keys get no weight
    # Gradient of the composite with the same mask.
    g = np.where(kept, upstream.numpy() / (1 - RATE), 0.0)
    want = probs * (g - np.sum(g * probs, axis=-1, keepdims=True))
    np.testing.assert_allclose(grad, want, atol=1e-6)
    again = _maybe_dynamic(lambda s, b: dropped_softmax(s, b, SEED, RATE), static, scores, bias).numpy()
    np.testing.assert_array_equal(again, out)  # same seed, same mask
    other = dropped_softmax(scores, bias, SEED + 1, RATE).numpy()
    assert np.any((other != 0) != kept)


@pytest.mark.parametrize("static", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_dropout_keeps_scales_and_routes_the_gradient(static, dtype):
    rng = np.random.default_rng(1)
    x = tf.cast(tf.constant(rng.uniform(1.0, 2.0, size=(64, 96)).astype("float32")), dtype)
    upstream = tf.cast(tf.constant(rng.normal(size=(64, 96)).astype("float32")), dtype)
    out, grad = _maybe_dynamic(
        lambda a, g: _value_and_gradient(lambda v: dropout(v, SEED, RATE), a, g), static, x, upstream
    )
    assert out.dtype == x.dtype and grad.dtype == x.dtype
    out, grad = (tf.cast(t, tf.float32).numpy() for t in (out, grad))
    kept = out != 0
    np.testing.assert_allclose(out[kept], tf.cast(x, tf.float32).numpy()[kept] / (1 - RATE), rtol=1e-2)
    assert abs((~kept).mean() - RATE) < 0.02
    np.testing.assert_allclose(
        grad, np.where(kept, tf.cast(upstream, tf.float32).numpy() / (1 - RATE), 0), rtol=1e-2, atol=1e-6
    )


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_inference_projections_equal_the_fused_training_projection(dtype):
    # Inference projects query/key/value with one matmul per kernel (query scaled after); training (dropout 0 here,
    # so the same function) with one matmul over the concatenated, pre-scaled kernels. Both must give one attention.
    layer = BertSelfAttention(num_heads=4, hidden_dim=32, dropout=0.0, dtype=dtype)
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(size=(2, 8, 32)).astype("float32"))
    mask = tf.constant([[1] * 8, [1] * 5 + [0] * 3], tf.int32)
    layer.build(x.shape)
    for variable in layer.weights:  # non-zero biases, so a dropped or unscaled query bias shows
        variable.assign(rng.normal(scale=0.3, size=variable.shape).astype("float32"))
    inference = layer(x, mask, training=False).numpy().astype("float32")
    fused = layer(x, mask, training=True).numpy().astype("float32")
    tolerance = 1e-5 if dtype == "float32" else 5e-2
    np.testing.assert_allclose(inference, fused, atol=tolerance, rtol=tolerance)
    assert np.abs(inference).max() > 0.1


@pytest.mark.parametrize("dtype, fused", [("float32", True), ("mixed_bfloat16", False)])
def test_a_float32_forward_scales_the_scores_where_grappler_fuses_them(dtype, fused):
    # Grappler's oneDNN remapper runs BatchMatMulV2 -> Mul(scalar) -> AddV2 as one `_MklFusedBatchMatMulV2`; the float32
    # forward builds exactly that chain for the scores, the other paths scale the query before the matmul.
    layer = BertSelfAttention(num_heads=4, hidden_dim=32, dropout=0.0, dtype=dtype)
    layer.build((2, 8, 32))
    specs = (tf.TensorSpec((2, 8, 32)), tf.TensorSpec((2, 8), tf.int32))
    graph = tf.function(lambda x, m: layer(x, m, training=False)).get_concrete_function(*specs).graph
    (scores, _) = [op for op in graph.get_operations() if op.type == "BatchMatMulV2"]
    chain = [consumer.type for consumer in scores.outputs[0].consumers()]
    if fused:
        (scale,) = scores.outputs[0].consumers()
        assert chain == ["Mul"] and [c.type for c in scale.outputs[0].consumers()] == ["AddV2"]
        assert tf.get_static_value(scale.inputs[1]) == pytest.approx(1 / np.sqrt(8))
    else:
        assert chain != ["Mul"]
