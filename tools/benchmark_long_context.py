"""Long-context forward of a ModernBERT-base-size encoder: bert_tf's SavedModel vs transformers (torch CPU, sdpa).

One table, one machine, one run. The model is ModernBERT-base's shape (22 layers, hidden 768, 12 heads, GeGLU
1,152, window 128, a global layer every third, vocabulary 50,368) with seeded random weights, written once as a
Hugging Face directory; each side reads those same weights:

  bert_tf   `bert-tf-export --encoder_only` of that directory, loaded back with `tf.saved_model.load` and called
            through its `ids` signature (the same graph a server runs).
  torch     `transformers.AutoModel` with `attn_implementation="sdpa"`, in `--reference_python` (an environment with
            torch and transformers, never a dependency of bert_tf) running tools/modernbert_torch_timing.py.

For each `--lengths` (one sequence of T tokens, seeded ids), each side runs in its own fresh process inside a memory
probe (tools/memory_probe.py): load, `--warmup` untimed forwards, `--repeats` timed ones. The table gives the median
seconds per forward, the process's peak resident set (Python, the runtime and the weights included), the peak above
the resident set right after loading (what the forward itself adds), and the largest difference between the two
sides' last hidden states.

Then the local layers alone: the same shape with every layer a sliding-window one, bert_tf only, at
`--local_lengths`: the forward's memory above the loaded model, per 1,000 tokens, which stays flat when memory grows
linearly in T (blocked attention: `bert_tf.layers.local_attention`).

Usage (about 15 minutes on 2 cores):
  python tools/benchmark_long_context.py --reference_python=/path/to/torch-env/bin/python \
      --output_md=docs/results/DATE-long-context.md
  python tools/benchmark_long_context.py --quick     # tiny shape, short lengths, seconds
"""

import json
import os
import shutil
import statistics
import sys
import tempfile

from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools import memory_probe
from tools.machine import cpu_model
from tools.modernbert_torch_timing import status_bytes, token_ids

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENIZER = os.path.join(ROOT, "..", "shared", "reference", "families", "modernbert", "tokenizer.json")
BASE = dict(num_layers=22, hidden_dim=768, num_heads=12, intermediate_dim=1152, vocabulary_size=50368)
TINY = dict(num_layers=3, hidden_dim=64, num_heads=4, intermediate_dim=96, vocabulary_size=2000)
IDS_BELOW = 2000  # the tokenizer's vocabulary (the ids both sides read)
GB = 1e9

flags.DEFINE_list("lengths", ["512", "2048", "8192"], "Sequence lengths, both sides.")
flags.DEFINE_list("local_lengths", ["2048", "4096", "8192", "16384"], "Lengths of the sliding-window-only rows.")
flags.DEFINE_integer("repeats", 2, "Timed forwards per side and length (the median is reported).")
flags.DEFINE_integer("warmup", 1, "Untimed forwards first (graph building, allocator).")
flags.DEFINE_integer("local_attention", 128, "The sliding window's width.")
flags.DEFINE_string("reference_python", None, "A Python with torch and transformers; without it, bert_tf only.")
flags.DEFINE_string("workdir", None, "Where the model, its export and the hidden states go (default: a temp dir).")
flags.DEFINE_string("output_md", None, "Also write the table here.")
flags.DEFINE_bool("quick", False, "Tiny shape (3 layers, hidden 64), lengths 256 and 1024: a smoke run.")
flags.DEFINE_integer("seed", 0, "Weights' and ids' seed.")
# A child measuring bert_tf's side (run by the probe): the SavedModel and the length.
flags.DEFINE_string("probe_saved_model", None, "Internal: measure this SavedModel's `ids` signature and exit.")
flags.DEFINE_integer("probe_length", 0, "Internal: the probe's length.")
flags.DEFINE_string("probe_hidden_out", None, "Internal: save the probe's sequence output here (.npy).")

FLAGS = flags.FLAGS


def build(path, shape, layer_types, max_length, seed):
    """Writes a Hugging Face ModernBERT directory of random weights at `path/hf` and its bert_tf export at
    `path/saved_model`; returns both paths. A `--workdir` that has both already is reused (a rerun skips the
    export)."""
    hf, saved = os.path.join(path, "hf"), os.path.join(path, "saved_model")
    if os.path.exists(os.path.join(saved, "saved_model.pb")) and os.path.exists(os.path.join(hf, "config.json")):
        return hf, saved
    import keras

    from bert_tf.checkpoints import save_hf
    from bert_tf.export import export_saved_model
    from bert_tf.models import ModernBertEncoder

    keras.utils.set_random_seed(seed)
    encoder = ModernBertEncoder(
        **shape,
        layer_types=layer_types,
        local_attention=FLAGS.local_attention,
        max_position_embeddings=max_length,
        pad_token_id=3,
    )
    save_hf(encoder, hf)
    shutil.copy(TOKENIZER, os.path.join(hf, "tokenizer.json"))
    export_saved_model(hf, saved, encoder_only=True, max_seq_length=max_length, overwrite=True)
    return hf, saved


def probe_ours():
    """The child's work: load the SavedModel, run its `ids` signature, print the probe's JSON line."""
    import time

    import numpy as np
    import tensorflow as tf

    try:
        import tensorflow_text  # noqa: F401  (registers the ops an exported tokenizer may hold)
    except ImportError:
        pass
    start = time.perf_counter()
    forward = tf.saved_model.load(FLAGS.probe_saved_model).signatures["ids"]
    load_seconds = time.perf_counter() - start
    rss_after_load = status_bytes("VmRSS")
    ids = tf.constant(token_ids(FLAGS.probe_length, IDS_BELOW, FLAGS.seed))
    inputs = dict(token_ids=ids, segment_ids=tf.zeros_like(ids), padding_mask=tf.ones_like(ids))
    seconds = []
    for i in range(FLAGS.warmup + FLAGS.repeats):
        start = time.perf_counter()
        hidden = forward(**inputs)["sequence_output"].numpy()
        if i >= FLAGS.warmup:
            seconds.append(time.perf_counter() - start)
    if FLAGS.probe_hidden_out:
        np.save(FLAGS.probe_hidden_out, hidden[0])
    memory_probe.emit(seconds=seconds, load_seconds=load_seconds, rss_after_load_bytes=rss_after_load)


def measure(command):
    """Runs `command` in a memory probe: (median seconds, peak RSS GB, peak above the loaded RSS GB)."""
    result = memory_probe.run_probe(command, timeout=3600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    report = result.report
    if not report.get("seconds"):
        raise RuntimeError(f"no timing from {' '.join(command)}: {report}")
    peak = result.peak_rss_bytes
    return statistics.median(report["seconds"]), peak / GB, (peak - report["rss_after_load_bytes"]) / GB, report


def ours_command(saved, length, hidden_out=None):
    command = [sys.executable, os.path.abspath(__file__), f"--probe_saved_model={saved}", f"--probe_length={length}"]
    command += [f"--warmup={FLAGS.warmup}", f"--repeats={FLAGS.repeats}", f"--seed={FLAGS.seed}"]
    return command + ([f"--probe_hidden_out={hidden_out}"] if hidden_out else [])


def torch_command(hf, length, hidden_out):
    script = os.path.join(ROOT, "tools", "modernbert_torch_timing.py")
    return [
        FLAGS.reference_python,
        script,
        f"--model_dir={hf}",
        f"--length={length}",
        f"--vocabulary={IDS_BELOW}",
        f"--warmup={FLAGS.warmup}",
        f"--repeats={FLAGS.repeats}",
        f"--hidden_out={hidden_out}",
    ]


def layer_kinds(num_layers, every=3):
    return tuple("full_attention" if i % every == 0 else "sliding_attention" for i in range(num_layers))


def run(workdir):
    import numpy as np

    shape = TINY if FLAGS.quick else BASE
    lengths = [int(n) for n in (["256", "1024"] if FLAGS.quick else FLAGS.lengths)]
    local_lengths = [int(n) for n in (["256", "1024"] if FLAGS.quick else FLAGS.local_lengths)]
    size = f"{shape['num_layers']} layers, hidden {shape['hidden_dim']}, {shape['num_heads']} heads"
    rows = []
    hf, saved = build(os.path.join(workdir, "mixed"), shape, layer_kinds(shape["num_layers"]), max(lengths), FLAGS.seed)
    versions = {}
    for length in lengths:
        ours_out = os.path.join(workdir, f"ours_{length}.npy")
        ours = measure(ours_command(saved, length, ours_out))
        print(f"bert_tf T={length}: {ours[0]:.2f} s, peak {ours[1]:.2f} GB", flush=True)
        theirs, diff = None, None
        if FLAGS.reference_python:
            torch_out = os.path.join(workdir, f"torch_{length}.npy")
            theirs = measure(torch_command(hf, length, torch_out))
            versions = theirs[3].get("versions", {})
            diff = float(np.max(np.abs(np.load(ours_out) - np.load(torch_out))))
            print(f"torch   T={length}: {theirs[0]:.2f} s, peak {theirs[1]:.2f} GB; max diff {diff:.2e}", flush=True)
        rows.append((length, ours, theirs, diff))
    local = []
    if local_lengths:
        kinds = ("sliding_attention",) * shape["num_layers"]
        _, local_saved = build(os.path.join(workdir, "local"), shape, kinds, max(local_lengths), FLAGS.seed)
        for length in local_lengths:
            result = measure(ours_command(local_saved, length))
            print(f"bert_tf local-only T={length}: {result[0]:.2f} s, above load {result[2]:.3f} GB", flush=True)
            local.append((length, result))
    return table(size, rows, local, versions)


def table(size, rows, local, versions):
    cpu = cpu_model()
    torch_name = "transformers {transformers} / torch {torch}, sdpa".format(**versions) if versions else "not run"
    lines = [
        f"Long-context forward, ModernBERT shape ({size}, window {FLAGS.local_attention}), batch 1, float32, "
        f"random weights; CPU: {cpu}; torch side: {torch_name}; median of {FLAGS.repeats} forwards after "
        f"{FLAGS.warmup} warm-up.",
        "",
        "| tokens | bert_tf s | torch s | time ratio (torch / bert_tf) | bert_tf peak RSS GB | torch peak RSS GB "
        "| memory ratio (bert_tf / torch) | bert_tf forward above load GB | torch forward above load GB "
        "| max abs diff of hidden states |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for length, ours, theirs, diff in rows:
        if theirs:
            cells = [
                f"{theirs[0]:.2f}",
                f"{theirs[0] / ours[0]:.2f}",
                f"{ours[1]:.2f}",
                f"{theirs[1]:.2f}",
                f"{ours[1] / theirs[1]:.2f}",
                f"{ours[2]:.3f}",
                f"{theirs[2]:.3f}",
                f"{diff:.1e}",
            ]
        else:
            cells = ["-", "-", f"{ours[1]:.2f}", "-", "-", f"{ours[2]:.3f}", "-", "-"]
        lines.append(f"| {length:,} | {ours[0]:.2f} | " + " | ".join(cells) + " |")
    if local:
        lines += [
            "",
            f"Sliding-window layers only (every layer local, window {FLAGS.local_attention}), bert_tf's SavedModel: "
            "memory the forward adds above the loaded model.",
            "",
            "| tokens | seconds | forward above load GB | per 1,000 tokens MB | seconds per 1,000 tokens |",
            "|---:|---:|---:|---:|---:|",
        ]
        for length, (seconds, _, above, _) in local:
            lines.append(
                f"| {length:,} | {seconds:.2f} | {above:.3f} | {above * 1000 / length * 1000:.1f} "
                f"| {seconds * 1000 / length:.3f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv):
    del argv
    if FLAGS.probe_saved_model:
        probe_ours()
        return 0
    if FLAGS.reference_python and not os.path.exists(FLAGS.reference_python):
        raise app.UsageError(f"--reference_python={FLAGS.reference_python}: no such file")
    if not os.path.exists(TOKENIZER):
        raise app.UsageError(f"{TOKENIZER}: missing (the shared reference data)")
    workdir = FLAGS.workdir or tempfile.mkdtemp(prefix="long_context_")
    os.makedirs(workdir, exist_ok=True)
    markdown = run(workdir)
    print(markdown)
    if FLAGS.output_md:
        with open(FLAGS.output_md, "w", encoding="utf-8") as f:
            f.write(markdown)
    if not FLAGS.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps({"workdir": workdir}))
    return 0


if __name__ == "__main__":
    app.run(main)
