"""`when_static` picks the XLA kernel or TensorFlow ops by shape and by BERT_TF_XLA_KERNELS / core count."""

import pytest
import tensorflow as tf

from bert_tf.layers import fused
from bert_tf.layers.layer_norm import layer_norm
from tests.layers import compiled_calls


def _compiled_calls(spec):
    """How many XLA-compiled function calls the traced graph of one layer_norm holds."""
    return compiled_calls(lambda x: layer_norm(x, tf.ones([8]), tf.zeros([8]), tf.constant(1e-12)), spec)


@pytest.mark.parametrize(
    "setting, threads, expected",
    [
        ("1", 16, 1),
        ("on", 16, 1),
        ("0", 1, 0),
        ("off", 2, 0),
        ("auto", 1, 1),
        ("auto", 2, 1),
        ("auto", 3, 0),
        ("auto", 16, 0),
    ],
)
def test_setting_and_thread_count_choose_the_kernel(monkeypatch, setting, threads, expected):
    monkeypatch.setenv(fused.ENV_VAR, setting)
    monkeypatch.setattr(fused, "cpu_threads", lambda: threads)
    assert _compiled_calls(tf.TensorSpec([4, 8])) == expected
    assert _compiled_calls(tf.TensorSpec([None, 8])) == 0  # shapes known only at run time: always TF ops


def test_auto_is_the_default(monkeypatch):
    monkeypatch.delenv(fused.ENV_VAR, raising=False)
    monkeypatch.setattr(fused, "cpu_threads", lambda: 2)
    assert fused.xla_kernels_enabled()
    monkeypatch.setattr(fused, "cpu_threads", lambda: 8)
    assert not fused.xla_kernels_enabled()


def test_bad_setting_names_the_variable_and_value(monkeypatch):
    monkeypatch.setenv(fused.ENV_VAR, "fast")
    with pytest.raises(ValueError, match=r"BERT_TF_XLA_KERNELS must be auto, 1 or 0.*'fast'"):
        fused.xla_kernels_enabled()


def test_float32_inside_computes_16_bit_arguments_in_float32_and_casts_back():
    seen = []

    def fn(x, keep, rate):
        seen.append(x.dtype)
        return x * rate, keep

    wide = fused.float32_inside(fn)
    keep = tf.constant([True, False])
    for dtype in (tf.bfloat16, tf.float16):
        y, same = wide(tf.constant([1.0, 3.0], dtype), keep, 0.5)
        assert seen[-1] == tf.float32 and y.dtype == dtype and same.dtype == tf.bool
    # float32 already, or a float32 argument beside a bfloat16 one (results could be either dtype): as it is.
    assert wide(tf.constant([1.0]), keep, 0.5)[0].dtype == tf.float32 and seen[-1] == tf.float32
    mixed = fused.float32_inside(lambda a, b: a + tf.cast(b, a.dtype))
    assert mixed(tf.constant([1.0], tf.bfloat16), tf.constant([2.0])).dtype == tf.bfloat16
