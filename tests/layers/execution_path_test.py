"""The execution path: CPU kinds from /proc/cpuinfo, the rule table, the override, and every path computing the same
function (forward and gradients within 1e-5, float32)."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.layers import choose_path, cpu_info, execution_path, fused, resolve_jit_compile
from bert_tf.layers.execution_path import RULES, CpuInfo, rule_for
from tests.helpers import random_inputs, tiny_encoder

CPUINFO = """processor\t: 0
vendor_id\t: {vendor}
model name\t: {model}
flags\t\t: fpu sse sse2 {flags}

processor\t: 1
model name\t: {model}
flags\t\t: fpu sse sse2 {flags}
"""


def _cpuinfo(tmp_path, flags, model="Test CPU"):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO.format(vendor="TestVendor", model=model, flags=flags), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "flags, kind",
    [
        ("avx avx2 fma avx512f avx512_bf16 amx_bf16 amx_tile amx_int8", "amx"),
        ("avx avx2 fma avx512f avx512bw avx512_bf16 avx512_vnni avx512_fp16", "avx512_fp16"),
        ("avx avx2 fma avx512f avx512bw avx512_bf16", "avx512_bf16"),
        ("avx avx2 fma avx512f avx512bw avx512_vnni", "avx512"),
        ("avx avx2 fma", "avx2"),
        ("avx", "other"),
    ],
)
def test_cpu_kind_from_flags(tmp_path, flags, kind):
    cpu = cpu_info(_cpuinfo(tmp_path, flags, model="AMD EPYC 9000"))
    assert cpu.kind == kind
    assert cpu.model == "AMD EPYC 9000"
    assert cpu.threads == fused.cpu_threads()


def test_missing_cpuinfo_is_kind_other(tmp_path):
    cpu = cpu_info(str(tmp_path / "absent"))
    assert (cpu.kind, cpu.model, cpu.flags) == ("other", "unknown CPU", ())
    assert rule_for(cpu).kind == "other"


def test_every_kind_has_a_rule_with_known_paths():
    kinds = [kind for kind, _ in execution_path.KIND_FLAGS] + ["other"]
    for kind in kinds:
        rule = rule_for(CpuInfo("x", (), 2) if kind == "other" else CpuInfo("x", _flags_of(kind), 2))
        assert rule.kind == kind
    assert all(rule.train in execution_path.PATHS and rule.infer in execution_path.PATHS for rule in RULES)


def _flags_of(kind):
    return dict(execution_path.KIND_FLAGS)[kind]


def test_auto_follows_the_rule_and_the_override_wins(monkeypatch):
    avx2 = CpuInfo("x", ("avx2", "fma"), 2)
    monkeypatch.delenv(execution_path.ENV_VAR, raising=False)
    path = choose_path(avx2)
    assert (path.train, path.infer) == (rule_for(avx2).train, rule_for(avx2).infer)
    assert "avx2" in path.describe() and "rule:" in path.describe()
    for setting in ("ops", "xla"):
        monkeypatch.setenv(execution_path.ENV_VAR, setting)
        path = choose_path(avx2)
        assert (path.train, path.infer) == (setting, setting)
        assert f"{execution_path.ENV_VAR}={setting}" in path.describe()
        assert resolve_jit_compile(None) == (setting == "xla")
        assert resolve_jit_compile(None, training=False) == (setting == "xla")
    assert resolve_jit_compile(False) is False and resolve_jit_compile(True) is True


@pytest.mark.parametrize(
    "kind, dtype",
    [
        ("amx", "bfloat16"),
        ("avx512_fp16", "float32"),
        ("avx512_bf16", "bfloat16"),
        ("avx512", "float32"),
        ("avx2", "float32"),
        ("other", "float32"),
    ],
)
def test_fastest_training_dtype_is_the_measured_one_per_cpu_kind(monkeypatch, kind, dtype):
    """Measured: mixed bfloat16 trains 1.5-1.9x faster than float32 with AMD's AVX512_BF16 or AMX, at half float32's
    speed where bfloat16 is emulated (Ice Lake), and at 0.84x on Intel's AVX512_BF16 + AVX512_FP16 without AMX (issue
    52); the path override does not change the dtype."""
    cpu = CpuInfo("x", () if kind == "other" else _flags_of(kind), 2)
    monkeypatch.delenv(execution_path.ENV_VAR, raising=False)
    assert choose_path(cpu).dtype == dtype
    assert f"fastest training dtype {dtype}" in choose_path(cpu).describe()
    monkeypatch.setenv(execution_path.ENV_VAR, "xla")
    assert choose_path(cpu).dtype == dtype


@pytest.mark.parametrize("threads, measured_on", [(2, "2-core Intel Xeon (AMX)"), (16, "16-core Xeon (AMX)")])
def test_an_amx_cpu_takes_the_row_measured_at_its_thread_count(monkeypatch, threads, measured_on):
    monkeypatch.delenv(execution_path.ENV_VAR, raising=False)
    path = choose_path(CpuInfo("x", _flags_of("amx"), threads))
    assert (path.train, path.infer, path.dtype) == ("ops", "ops", "bfloat16")
    assert f"rule: {measured_on}" in path.describe()


def test_bad_override_names_the_variable_and_value(monkeypatch):
    monkeypatch.setenv(execution_path.ENV_VAR, "fast")
    with pytest.raises(ValueError, match=r"BERT_TF_PATH must be auto, ops or xla.*'fast'"):
        choose_path()


def _forward_and_gradients(encoder, inputs, jit):
    variables = encoder.trainable_variables
    # A fixed random read-out of both outputs, so that every output element carries gradient.
    weights = tf.random.stateless_normal((8, 16), seed=(1, 2))

    def run(x):
        with tf.GradientTape() as tape:
            outputs = encoder(x, training=False)
            loss = tf.reduce_sum(outputs["sequence_output"] * weights) + tf.reduce_sum(outputs["pooled_output"])
        return outputs["sequence_output"], outputs["pooled_output"], tape.gradient(loss, variables)

    sequence, pooled, gradients = tf.function(run, jit_compile=jit)(inputs)
    return [sequence, pooled] + [tf.convert_to_tensor(g) for g in gradients]


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_new"])
def test_every_path_computes_the_same_function(monkeypatch, hidden_act):
    """ops with and without the XLA element-wise kernels, and whole-model XLA, against this machine's choice."""
    encoder = tiny_encoder(hidden_act=hidden_act, dropout=0.0, attention_dropout=0.0)
    inputs = {k: tf.constant(v) for k, v in random_inputs(batch=3, length=8, lengths=[8, 5, 2], seed=3).items()}
    monkeypatch.delenv(execution_path.ENV_VAR, raising=False)
    chosen = _forward_and_gradients(encoder, inputs, resolve_jit_compile(None, training=True))
    for kernels, jit in (("1", False), ("0", False), ("1", True)):
        monkeypatch.setenv(fused.ENV_VAR, kernels)  # read when the graph is traced
        other = _forward_and_gradients(encoder, inputs, jit)
        assert len(other) == len(chosen)
        for a, b in zip(chosen, other):
            # 1e-5 absolute, relative for tensors larger than 1: the token-embedding gradient reaches about 160
            # (LayerNorm over embeddings of scale 0.02), where float32 round-off alone is 1.5e-5.
            scale = max(1.0, float(np.max(np.abs(a.numpy()))))
            assert float(np.max(np.abs(a.numpy() - b.numpy()))) <= 1e-5 * scale, (kernels, jit)
