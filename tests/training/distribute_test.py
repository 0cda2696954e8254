"""Compute dtypes of training: explicit ones pass through, `auto` follows this machine's hardware."""

import pytest
import tensorflow as tf

from bert_tf.layers import execution_path
from bert_tf.layers.execution_path import CpuInfo
from bert_tf.training import DTYPES, dtype_policy, resolve_dtype


def test_explicit_dtypes_pass_through_and_map_to_keras_policies():
    assert [resolve_dtype(dtype) for dtype in ("float32", "bfloat16", "float16")] == ["float32", "bfloat16", "float16"]
    assert [dtype_policy(dtype) for dtype in ("float32", "bfloat16", "float16")] == [
        None,
        "mixed_bfloat16",
        "mixed_float16",
    ]
    assert "auto" in DTYPES


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")), reason="auto on a GPU reads its capability")
@pytest.mark.parametrize("flags, dtype", [(("avx512f", "avx512_bf16"), "bfloat16"), (("avx512f",), "float32")])
def test_auto_without_a_gpu_is_the_cpu_rule(monkeypatch, flags, dtype):
    monkeypatch.setattr(execution_path, "cpu_info", lambda path=execution_path.CPUINFO: CpuInfo("x", flags, 2))
    assert resolve_dtype("auto") == dtype
    assert dtype_policy("auto") == {"bfloat16": "mixed_bfloat16", "float32": None}[dtype]


def test_auto_on_this_machine_is_its_execution_path_dtype():
    if tf.config.list_physical_devices("GPU"):
        assert resolve_dtype("auto") in ("bfloat16", "float32")
    else:
        assert resolve_dtype("auto") == execution_path.choose_path().dtype


def test_unknown_dtype_is_refused_with_its_value():
    with pytest.raises(ValueError, match=r"`dtype` must be one of .*'auto'.*Received: dtype='half'"):
        resolve_dtype("half")
    with pytest.raises(ValueError, match="Received: dtype='half'"):
        dtype_policy("half")


def test_a_run_records_auto_as_the_dtype_it_stands_for(monkeypatch):
    """training_settings.json's request: "auto" on a bfloat16 machine matches an explicit bfloat16 run, and a resume
    where "auto" resolves to float32 differs from it (refused as a changed setting)."""
    import dataclasses

    from bert_tf.training.task_runs import run_request

    @dataclasses.dataclass
    class Config:
        dtype: str
        train_file: str = ""

    for flags, dtype in ((("avx512f", "avx512_bf16"), "bfloat16"), (("avx512f",), "float32")):
        monkeypatch.setattr(execution_path, "cpu_info", lambda path=execution_path.CPUINFO, f=flags: CpuInfo("x", f, 2))
        if tf.config.list_physical_devices("GPU"):
            pytest.skip("auto on a GPU reads its capability")
        assert run_request(Config("auto"), ("train_file",)) == {"dtype": dtype, "train_file": ""}
        assert run_request(Config("auto"), ()) == run_request(Config(dtype), ())
