"""Element-wise chains as one XLA kernel where shapes are static, TensorFlow ops elsewhere."""

import tensorflow as tf


def when_static(fn, dynamic=None):
    """`fn` that runs as one XLA-compiled kernel when every tensor argument's shape is fully known.

    Shapes fully known when the graph is built are the shapes it runs with,
    so XLA compiles each kernel once. With a shape known only at run time
    (padding-free paths, whose token counts change per batch) the call runs
    `dynamic` (default: `fn` itself) as TensorFlow ops, which need no
    recompilation per shape.
    """
    compiled = tf.function(fn, jit_compile=True, autograph=False)
    dynamic = dynamic or fn

    def run(*args):
        static = all(a.shape.is_fully_defined() for a in args if isinstance(a, tf.Tensor))
        return (compiled if static else dynamic)(*args)

    return run
