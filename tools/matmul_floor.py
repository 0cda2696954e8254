"""The encoder's matrix products at one request's shapes: TensorFlow's kernels against ONNX Runtime's and NumPy's.

    python tools/matmul_floor.py                      # all-MiniLM-L6-v2's shapes, 8, 16 and 32 tokens
    TF_ENABLE_ONEDNN_OPTS=1 python tools/matmul_floor.py --tokens=16

A served request of one sentence multiplies a few rows (its tokens) by every weight matrix of the encoder: per
layer the query, key, value and output projections (H x H) and the feed-forward pair (H x I, I x H). This tool
times that chain alone (no attention, no normalization, no tokenizer: nothing else), with random weights of the
model's shapes (`--layers`, `--hidden`, `--intermediate`), on each side:

- TensorFlow `MatMul` in a `tf.function`, the weights as variables (as a SavedModel holds them) and as constants
  (as a frozen graph holds them), and under XLA (`jit_compile=True`);
- NumPy's `@` (its BLAS);
- ONNX Runtime's `MatMul` (its MLAS kernels; where `onnxruntime` is installed), on a graph of the same products.

Every side uses every core. The table gives milliseconds per request (the median of `--repeats` rounds) and each
side's speed against ONNX Runtime's (its time over the side's). It bounds what a TensorFlow SavedModel can reach on a single request: its
matrix products take at least TensorFlow's time here, whatever the rest of the graph does. CPU named in the header;
`TF_ENABLE_ONEDNN_OPTS` as set in the environment (TensorFlow reads it once, at import).
"""

import os
import sys

from absl import app, flags

if not __package__:  # run as `python tools/matmul_floor.py`: import `tools.*` and `bert_tf` from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from tools.bench.harness import median_rates
from tools.machine import cpu_model

PEER = "ONNX Runtime MatMul"


def define_flags():
    flags.DEFINE_list("tokens", ["8", "16", "32"], "Rows of a request (tokens of one sentence), one table row each.")
    flags.DEFINE_integer("layers", 6, "Encoder layers.")
    flags.DEFINE_integer("hidden", 384, "Hidden size H.")
    flags.DEFINE_integer("intermediate", 1536, "Feed-forward size I.")
    flags.DEFINE_integer("calls", 100, "Requests per round.")
    flags.DEFINE_integer("repeats", 3, "Rounds per side; the median counts.")


def layer_weights(layers, hidden, intermediate, seed=0):
    """Per layer `[query, key, value, output (H x H), in (H x I), out (I x H)]` float32 weights."""
    rng = np.random.default_rng(seed)
    shapes = [(hidden, hidden)] * 4 + [(hidden, intermediate), (intermediate, hidden)]
    return [[(rng.standard_normal(s) * 0.05).astype(np.float32) for s in shapes] for _ in range(layers)]


def chain(x, weights, matmul):
    """The products of one request through every layer: q, k, v of x; the output projection of v; the feed-forward
    pair on it; q and k added so that every product is used."""
    for query, key, value, output, up, down in weights:
        q, k = matmul(x, query), matmul(x, key)
        x = matmul(matmul(matmul(matmul(x, value), output), up), down) + q + k
    return x


def _onnx_session(weights, hidden):
    """An ONNX Runtime session of `chain` with the weights as initializers, or None without onnxruntime."""
    try:
        import onnxruntime
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    nodes, initializers, current = [], [], "x"
    for i, layer in enumerate(weights):
        names = [f"w{i}_{j}" for j in range(len(layer))]
        initializers += [numpy_helper.from_array(w, name) for w, name in zip(layer, names)]
        steps = [
            ("MatMul", [current, names[0]], f"q{i}"),
            ("MatMul", [current, names[1]], f"k{i}"),
            ("MatMul", [current, names[2]], f"v{i}"),
            ("MatMul", [f"v{i}", names[3]], f"o{i}"),
            ("MatMul", [f"o{i}", names[4]], f"u{i}"),
            ("MatMul", [f"u{i}", names[5]], f"d{i}"),
            ("Add", [f"d{i}", f"q{i}"], f"s{i}"),
            ("Add", [f"s{i}", f"k{i}"], f"y{i}"),
        ]
        nodes += [helper.make_node(op, inputs, [out]) for op, inputs, out in steps]
        current = f"y{i}"
    graph = helper.make_graph(
        nodes,
        "matmul_floor",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", hidden])],
        [helper.make_tensor_value_info(current, TensorProto.FLOAT, ["T", hidden])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count()
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def sides(weights, hidden):
    """`{side name: function(x numpy [T, H]) -> numpy [T, H]}` of every side this environment runs."""
    import tensorflow as tf

    variables = [[tf.Variable(w) for w in layer] for layer in weights]
    constants = [[tf.constant(w) for w in layer] for layer in weights]
    functions = {
        "TensorFlow MatMul, variables": tf.function(lambda x: chain(x, variables, tf.matmul)),
        "TensorFlow MatMul, constants": tf.function(lambda x: chain(x, constants, tf.matmul)),
        "TensorFlow MatMul, XLA": tf.function(lambda x: chain(x, variables, tf.matmul), jit_compile=True),
    }
    result = {name: (lambda x, f=f: f(tf.constant(x)).numpy()) for name, f in functions.items()}
    result["NumPy @"] = lambda x: chain(x, weights, np.matmul)
    session = _onnx_session(weights, hidden)
    if session is not None:
        result[PEER] = lambda x: session.run(None, {"x": x})[0]
    return result


def measure(tokens, layers, hidden, intermediate, calls, repeats):
    """`{tokens: {side: ms per request}}`; every side's answers checked against NumPy's first."""
    weights = layer_weights(layers, hidden, intermediate)
    functions = sides(weights, hidden)
    table = {}
    for count in tokens:
        x = np.random.default_rng(count).standard_normal((count, hidden)).astype(np.float32)
        expected = chain(x, weights, np.matmul)
        for name, function in functions.items():
            got = function(x)
            if not np.allclose(got, expected, rtol=1e-3, atol=1e-3 * float(np.abs(expected).max())):
                raise RuntimeError(f"{name} computes other products than NumPy's at {count} tokens")
        # Per side alone (alternating sides would evict each other's weights from the cache, which a server running
        # one runtime does not see): the median over `repeats` rounds of `calls` calls after 5 warm-up calls, in
        # milliseconds per call.
        table[count] = {
            name: 1e3
            / median_rates({name: lambda f=f, x=x: f(x)}, work=1, steps=calls, warmup=5, repeats=repeats)[name]
            for name, f in functions.items()
        }
    return table


def markdown(table, layers, hidden, intermediate):
    names = list(next(iter(table.values())))
    lines = [
        f"CPU: {cpu_model()}; TF_ENABLE_ONEDNN_OPTS={os.environ.get('TF_ENABLE_ONEDNN_OPTS', 'unset')}",
        f"Products of one request: {layers} layers x 6 (H={hidden}, I={intermediate}); ms per request "
        f"(its speed against {PEER}'s)",
        "",
        "| tokens | " + " | ".join(names) + " |",
        "|---:|" + "---:|" * len(names),
    ]
    for count, row in table.items():
        peer = row.get(PEER)
        cells = [f"{row[n]:.2f}" + (f" ({peer / row[n]:.2f}x)" if peer else "") for n in names]
        lines.append(f"| {count} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv):
    del argv
    FLAGS = flags.FLAGS
    tokens = [int(t) for t in FLAGS.tokens]
    if not tokens or min(tokens) < 1:
        print(
            f"error: --tokens must be positive integers. Received: --tokens={','.join(FLAGS.tokens)}", file=sys.stderr
        )
        return 1
    table = measure(tokens, FLAGS.layers, FLAGS.hidden, FLAGS.intermediate, FLAGS.calls, FLAGS.repeats)
    print(markdown(table, FLAGS.layers, FLAGS.hidden, FLAGS.intermediate))
    return 0


if __name__ == "__main__":
    define_flags()
    app.run(main)
