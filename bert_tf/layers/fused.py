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
