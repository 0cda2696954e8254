"""Batch-1 latency of reranking in a SavedModel: a plain `search`, the two-stage `search` (--search_reranker) at
several --search_rerank_top_n, and the cross-encoder's `rerank` signature alone.

    python tools/rerank_latency.py --bi_encoder=$M --squad_file=../shared/data/squad/xquad.en.json \
        --output_dir=runs/rerank_latency

The corpus is the SQuAD file's paragraphs, the queries its first --queries questions. Without --reranker the
cross-encoder is all-MiniLM-L6-v2's encoder (the --bi_encoder folder) with a seeded one-output head, saved as a
`rerank` model directory: the size of cross-encoder/ms-marco-MiniLM-L6-v2 (6 layers, hidden 384), so the same
time, and meaningless scores (quality is tools/rerank_quality.py's). Each SavedModel is loaded in this process
and timed on one query at a time (the median of --repeats passes over the queries, after one warm-up pass).
Prints a Markdown table.
"""

import argparse
import json
import os
import statistics
import time

import numpy as np
import tensorflow as tf

from bert_tf import checkpoints, tasks
from bert_tf.export import export_saved_model


def make_reranker(bi_encoder, output, max_seq_length=512, seed=0):
    """A `rerank` model directory at `output`: the encoder of `bi_encoder` and a seeded one-output head, used with
    `max_seq_length` tokens (at most the encoder's positions)."""
    directory = checkpoints.ModelDirectory.read(bi_encoder)
    encoder = checkpoints.load_encoder(directory)
    keras_seed = tf.keras.utils.set_random_seed  # the head's initial weights
    keras_seed(seed)
    model = tasks.get("rerank").build_model(encoder, None)
    model({k: tf.zeros([1, 8], tf.int32) for k in ("token_ids", "segment_ids", "padding_mask")})
    settings = {
        **directory.settings,
        **directory.tokenizer_settings,
        "task": "rerank",
        "labels": None,
        "score_activation": "sigmoid",
        "max_seq_length": min(max_seq_length, encoder.max_position_embeddings),
    }
    checkpoints.save_model_dir(model, output, settings=settings)
    directory.write_tokenizer_files(output)
    return output


def median_ms(function, requests, repeats):
    for request in requests:  # warm-up
        function(**request)
    times = []
    for _ in range(repeats):
        for request in requests:
            start = time.perf_counter()
            function(**request)
            times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


class _Rows:
    """The table's rows, each printed as it is measured."""

    def append(self, row):
        name, ms = row
        print(f"| {name} | {ms:.0f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bi_encoder", required=True)
    parser.add_argument("--squad_file", required=True)
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--reranker", default=None, help="a cross-encoder directory (default: MiniLM-size, seeded)")
    parser.add_argument("--top_n", default="10,32")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max_seq_length", type=int, default=256, help="the bi-encoder's")
    args = parser.parse_args()
    os.makedirs(args.output_dir, exist_ok=True)
    with open(args.squad_file, encoding="utf-8") as f:
        articles = json.load(f)["data"]
    paragraphs = [p for a in articles for p in a["paragraphs"]]
    questions = [q["question"] for p in paragraphs for q in p["qas"]][: args.queries]
    corpus = os.path.join(args.output_dir, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(" ".join(p["context"].split()) for p in paragraphs) + "\n")
    reranker = args.reranker or make_reranker(args.bi_encoder, os.path.join(args.output_dir, "reranker"))
    common = dict(max_seq_length=args.max_seq_length, search_corpus=corpus, overwrite=True)
    print(f"corpus: {len(paragraphs)} paragraphs; {len(questions)} queries, median of {args.repeats} passes\n")
    print("| request (batch 1) | median ms |\n|---|---|", flush=True)
    rows = _Rows()
    search = os.path.join(args.output_dir, "search")
    export_saved_model(args.bi_encoder, search, **common)
    requests = [{"query": tf.constant([q]), "k": tf.constant(10)} for q in questions]
    signature = tf.saved_model.load(search).signatures["search"]
    rows.append(("search, k=10 (bi-encoder only)", median_ms(signature, requests, args.repeats)))
    for top_n in [int(n) for n in args.top_n.split(",")]:
        two_stage = os.path.join(args.output_dir, f"search_rerank_{top_n}")
        export_saved_model(args.bi_encoder, two_stage, search_reranker=reranker, search_rerank_top_n=top_n, **common)
        signature = tf.saved_model.load(two_stage).signatures["search"]
        rows.append((f"search, k=10, reranking the top {top_n}", median_ms(signature, requests, args.repeats)))
    served = os.path.join(args.output_dir, "reranker_saved_model")
    export_saved_model(reranker, served, overwrite=True)
    signature = tf.saved_model.load(served).signatures["rerank"]
    texts = [" ".join(p["context"].split()) for p in paragraphs]
    rng = np.random.default_rng(0)
    for n in [int(n) for n in args.top_n.split(",")]:
        requests = [
            {"query": tf.constant(q), "passages": tf.constant([texts[i] for i in rng.choice(len(texts), n)])}
            for q in questions
        ]
        rows.append((f"rerank, {n} passages", median_ms(signature, requests, args.repeats)))


if __name__ == "__main__":
    main()
