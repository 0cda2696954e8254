"""Sparse (SPLADE) search at corpus scale: the inverted index `bert_tf.serving.SparseIndex` a SavedModel keeps.

    python tools/benchmark_sparse_search.py --passages=100000,1000000 --output=runs/sparse-search.json

For each corpus size N it makes synthetic sparse vectors (`--passage_terms` non-zero weights per passage and
`--query_terms` per query, term ids drawn from a Zipf law over a BERT-sized vocabulary, as real SPLADE vectors
concentrate on frequent pieces), builds the index, saves it as a SavedModel holding only the index and a `search`
function (query vectors `[B, V]`, `k` -> indices, scores: exactly what `SparseModule.search` runs after the encoder),
and reports: the build and save time, the SavedModel's size, its load time, the process's peak RSS, and the batch-1
search latency (median and 90th percentile of `--queries` queries, after a warm-up), the encoder's forward not
included. A check against dense dot products on the first queries guards the numbers.
"""

import json
import os
import resource
import shutil
import statistics
import tempfile
import time

import numpy as np
import tensorflow as tf
from absl import app, flags

from bert_tf.serving.sparse_module import SparseIndex

flags.DEFINE_list("passages", ["100000", "1000000"], "Corpus sizes N.")
flags.DEFINE_integer("vocab_size", 30522, "V (BERT's WordPiece vocabulary).")
flags.DEFINE_integer("passage_terms", 120, "Non-zero weights per passage.")
flags.DEFINE_integer("query_terms", 30, "Non-zero weights per query.")
flags.DEFINE_float("zipf", 1.1, "Zipf exponent of the term ids' distribution.")
flags.DEFINE_integer("queries", 50, "Timed batch-1 queries.")
flags.DEFINE_integer("k", 10, "Passages returned per query.")
flags.DEFINE_string("output", None, "JSON file for the results (printed too).")
FLAGS = flags.FLAGS


def _terms(rng, rows, per_row, vocab_size, exponent):
    """`rows` arrays of `per_row` distinct term ids, Zipf-distributed over a shuffled vocabulary."""
    ranks = np.arange(1, vocab_size + 1, dtype=np.float64)
    probabilities = ranks**-exponent
    probabilities /= probabilities.sum()
    permutation = rng.permutation(vocab_size)
    draws = rng.choice(vocab_size, size=(rows, per_row * 2), p=probabilities)  # extra draws: duplicates dropped
    result = []
    for row in draws:
        unique = np.unique(row)[:per_row]
        result.append(permutation[unique].astype(np.int32))
    return result


def _rows(rng, count, per_row, vocab_size, exponent, chunk=100000):
    rows = []
    for start in range(0, count, chunk):
        for terms in _terms(rng, min(chunk, count - start), per_row, vocab_size, exponent):
            values = np.sort(rng.uniform(0.05, 3.0, size=len(terms)).astype(np.float32))[::-1]
            rows.append((terms, values))
    return rows


class IndexModule(tf.Module):
    def __init__(self, index, k):
        super().__init__()
        self.index = index
        self.k = k

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def search(self, queries):
        top = tf.math.top_k(self.index.scores(queries), k=self.k)
        return {"indices": top.indices, "scores": top.values}


def _dense(rows, vocab_size):
    vectors = np.zeros((len(rows), vocab_size), np.float32)
    for i, (terms, values) in enumerate(rows):
        vectors[i, terms] = values
    return vectors


def _peak_rss_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def measure(count, rng):
    passages = _rows(rng, count, FLAGS.passage_terms, FLAGS.vocab_size, FLAGS.zipf)
    queries = _rows(rng, FLAGS.queries + 5, FLAGS.query_terms, FLAGS.vocab_size, FLAGS.zipf)
    start = time.perf_counter()
    index = SparseIndex(passages, FLAGS.vocab_size)
    build = time.perf_counter() - start
    module = IndexModule(index, FLAGS.k)
    directory = tempfile.mkdtemp(prefix="sparse-search-")
    try:
        start = time.perf_counter()
        tf.saved_model.save(module, directory)
        save = time.perf_counter() - start
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(directory) for f in files)
        del module
        start = time.perf_counter()
        loaded = tf.saved_model.load(directory)
        load = time.perf_counter() - start
        vectors = _dense(queries, FLAGS.vocab_size)
        for i in range(5):  # warm-up, and the exactness guard on a few passages
            out = loaded.search(tf.constant(vectors[i : i + 1]))
        # The scores returned are the exact dot products, and no passage of a sample beats the k-th.
        returned = out["indices"].numpy()[0]
        exact = vectors[4] @ _dense([passages[i] for i in returned], FLAGS.vocab_size).T
        np.testing.assert_allclose(out["scores"].numpy()[0], exact, rtol=1e-5, atol=1e-5)
        sample = vectors[4] @ _dense(passages[:2000], FLAGS.vocab_size).T
        assert sample.max() <= exact[0] + 1e-5, (sample.max(), exact[0])
        times = []
        for i in range(5, 5 + FLAGS.queries):
            start = time.perf_counter()
            out = loaded.search(tf.constant(vectors[i : i + 1]))
            out["indices"].numpy()
            times.append((time.perf_counter() - start) * 1000)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "passages": count,
        "postings": index.postings,
        "build_s": round(build, 1),
        "save_s": round(save, 1),
        "savedmodel_mb": round(size / 1e6, 1),
        "load_s": round(load, 1),
        "search_ms_median": round(statistics.median(times), 1),
        "search_ms_p90": round(sorted(times)[int(0.9 * len(times)) - 1], 1),
        "peak_rss_gb": round(_peak_rss_gb(), 2),
    }


def main(argv):
    del argv
    rng = np.random.default_rng(0)
    results = []
    for count in (int(n) for n in FLAGS.passages):
        results.append(measure(count, rng))
        print(json.dumps(results[-1]), flush=True)
    settings = {
        name: FLAGS[name].value for name in ("vocab_size", "passage_terms", "query_terms", "zipf", "queries", "k")
    }
    report = {"settings": settings, "results": results}
    if FLAGS.output:
        os.makedirs(os.path.dirname(os.path.abspath(FLAGS.output)), exist_ok=True)
        with open(FLAGS.output, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    app.run(main)
