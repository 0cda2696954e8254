"""Element-wise chains as one XLA kernel where that is faster, TensorFlow ops elsewhere."""

import os

import tensorflow as tf

ENV_VAR = "BERT_TF_XLA_KERNELS"
# `auto` uses the XLA kernels up to this many CPU threads for TensorFlow's ops.
AUTO_MAX_THREADS = 2


def cpu_threads():
    """CPU threads TensorFlow's ops run on: the intra-op setting, or the CPUs this process may use."""
    return tf.config.threading.get_intra_op_parallelism_threads() or len(os.sched_getaffinity(0))


def xla_kernels_enabled():
    """Whether `when_static` runs its XLA kernels, from `BERT_TF_XLA_KERNELS`.

    `1` always, `0` never, `auto` (the default) when TensorFlow's ops get at
    most `AUTO_MAX_THREADS` CPU threads. The kernels replace several
    element-wise TensorFlow ops by one pass, which wins on few cores; XLA runs
    them on fewer threads than TensorFlow's ops use, which loses on many
    (measured in docs/results/2026-11-26-benchmark-16core-amx.md: +4% training on 2 cores, -25% on 16).
    Read when a graph is traced, so it follows `tf.config.threading` set before.
    """
    setting = os.environ.get(ENV_VAR, "auto").strip().lower()
    if setting in ("1", "on", "true"):
        return True
    if setting in ("0", "off", "false"):
        return False
    if setting != "auto":
        raise ValueError(f"{ENV_VAR} must be auto, 1 or 0. Received: {ENV_VAR}={setting!r}")
    return cpu_threads() <= AUTO_MAX_THREADS


def when_static(fn, dynamic=None):
    """`fn` that runs as one XLA-compiled kernel when every tensor argument's shape is fully known.

    Shapes fully known when the graph is built are the shapes it runs with,
    so XLA compiles each kernel once. With a shape known only at run time
    (padding-free paths, whose token counts change per batch), or where
    `xla_kernels_enabled()` says no, the call runs `dynamic` (default: `fn`
    itself) as TensorFlow ops.
    """
    compiled = tf.function(fn, jit_compile=True, autograph=False)
    dynamic = dynamic or fn

    def run(*args):
        static = all(a.shape.is_fully_defined() for a in args if isinstance(a, tf.Tensor))
        return (compiled if static and xla_kernels_enabled() else dynamic)(*args)

    return run


def float32_inside(fn):
    """`fn` computing in float32 where its floating tensor arguments are all bfloat16 (or all float16); its floating
    results are cast back to that dtype, other arguments and results pass as they are.

    For the XLA side of `when_static`: XLA's CPU code runs 16-bit element-wise math op by op through conversions,
    while one conversion each way around float32 math costs little. Measured on a 2-core AMD EPYC with
    AVX512_BF16 (issue 52): the erf GELU's gradient kernel on bfloat16 `[4096, 1536]` took 10.4 ms, 4.7 ms in
    float32 inside, and the MiniLM mixed_bfloat16 masked-LM training step ran 1.05x to 1.10x faster (three
    same-process A/B runs). Dropout's kernels gained nothing from it (they are one multiply). The results are as
    precise or more: one rounding to bfloat16 at the end, not one per op.
    """

    def run(*args):
        floating = {a.dtype for a in args if isinstance(a, tf.Tensor) and a.dtype.is_floating}
        if floating not in ({tf.bfloat16}, {tf.float16}):  # (with a float32 argument too, results could be either)
            return fn(*args)
        (dtype,) = floating
        wide = [tf.cast(a, tf.float32) if isinstance(a, tf.Tensor) and a.dtype == dtype else a for a in args]
        return tf.nest.map_structure(lambda t: tf.cast(t, dtype) if t.dtype == tf.float32 else t, fn(*wide))

    return run
