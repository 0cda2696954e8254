"""Layer tests, and what several of them read off a traced graph."""

import tensorflow as tf


def compiled_calls(fn, *specs):
    """How many XLA-compiled function calls the graph of `fn` traced on `specs` holds."""
    graph = tf.function(fn).get_concrete_function(*specs).graph
    return sum(
        1 for op in graph.get_operations() if "_XlaMustCompile" in op.node_def.attr and op.get_attr("_XlaMustCompile")
    )
