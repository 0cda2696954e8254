"""Two-stage retrieval on held-out SQuAD articles: a bi-encoder alone vs its top-N reranked by a fine-tuned
cross-encoder (`bert-tf-finetune --task=rerank`).

    python tools/rerank_quality.py --bi_encoder=$M --squad_file=../shared/data/squad/xquad.en.json

1. The articles are split as `--eval_every_nth_article` splits them in
   fine-tuning (`tasks.squad.split_by_article`): every n-th article is held
   out. Its questions are the queries; its distinct paragraphs the corpus
   (each question's relevant passage is its own paragraph).
2. The bi-encoder (`SentenceEmbedder`, `--bi_max_seq_length` tokens a text)
   ranks the corpus for each query by cosine.
3. A cross-encoder starts from `--cross_init` (default: the bi-encoder's
   encoder weights, a new one-output head) and is fine-tuned by `finetune`
   with `--task=rerank` on the training articles only (a SQuAD file of
   those, written into `--work_dir`): each question with its paragraph and
   `--rerank_negatives` others (its article's first), one run per
   `--rerank_loss`. No held-out question is seen in training or in checkpoint
   selection (no evaluation during training: the last weights are kept).
   `--reranker=DIR[,DIR]` skips fine-tuning and reranks with those
   cross-encoders (a run's model directory, a CrossEncoder folder).
4. Each query's bi-encoder top `--top_n` is rescored by the cross-encoder
   (`--max_seq_length` tokens a pair) and reordered; a relevant passage past
   the top N stays where the bi-encoder put it.

Every ranking is scored with `metrics.reranking_metrics` (MRR@10, NDCG@10;
one relevant paragraph per question, judged whether or not it is a
candidate) and recall@k. Prints a Markdown table (one row per ranking) and a
JSON line with the counts and the seconds each stage took.
"""

import json
import os
import sys
import tempfile
import time

import numpy as np
from absl import app, flags

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf import metrics, tasks
from bert_tf.checkpoints import ModelDirectory
from bert_tf.data import read_squad, rerank
from bert_tf.embeddings import SentenceEmbedder
from bert_tf.tasks import common
from bert_tf.tasks.embedding import normalized, rank_passages
from bert_tf.tasks.squad import split_by_article
from bert_tf.training import FinetuneConfig, finetune

FLAGS = flags.FLAGS
flags.DEFINE_string("bi_encoder", None, "The first stage: a sentence-transformers folder or bert_tf model directory.")
flags.DEFINE_string("cross_init", None, "The cross-encoder's starting checkpoint (default: --bi_encoder's encoder).")
flags.DEFINE_string("squad_file", None, "A SQuAD v1.1/v2.0 JSON file.")
flags.DEFINE_integer("eval_every_nth_article", 4, "Every n-th article is held out (queries and corpus).")
flags.DEFINE_integer("top_n", 20, "Bi-encoder candidates the cross-encoder reranks per query.", lower_bound=1)
flags.DEFINE_list("rerank_loss", ["bce", "listwise"], "The fine-tuning losses to compare (one run each).")
flags.DEFINE_integer("rerank_negatives", 3, "Negatives per training question.")
flags.DEFINE_integer("max_train_examples", 0, "Train on a seeded random subset of this many questions (0: all).")
flags.DEFINE_float("epochs", 1.0, "Fine-tuning epochs.")
flags.DEFINE_float("learning_rate", 5e-5, "Fine-tuning peak learning rate.")
flags.DEFINE_integer("global_batch_size", 8, "Training questions per step (each with 1 + negatives pairs).")
flags.DEFINE_integer("max_seq_length", 256, "Tokens per (question, paragraph) pair of the cross-encoder.")
flags.DEFINE_integer("bi_max_seq_length", 256, "Tokens per text of the bi-encoder (all-MiniLM-L6-v2's own: 256).")
flags.DEFINE_list(
    "reranker",
    [],
    "Cross-encoders to rerank with instead of fine-tuning (model directories, CrossEncoder folders): one row each.",
)
flags.DEFINE_integer("eval_batch_size", 64, "Pairs (texts) per scoring batch.")
flags.DEFINE_integer("seed", 0, "Fine-tuning seed (negatives, shuffling, head, dropout).")
flags.DEFINE_string("work_dir", None, "Where the training file and the fine-tuned rerankers go (default: a temp dir).")

K = 10  # MRR@10, NDCG@10


def ranking_row(name, scores, relevance, hits_at):
    """The table's metrics of one ranking: `scores`/`relevance` per query over its candidates (the bi-encoder's
    top N in some order), the relevant passage counted only where it is a candidate."""
    judged = [[1]] * len(scores)  # one relevant paragraph per question, a candidate or not
    row = {"ranking": name, **metrics.reranking_metrics(scores, relevance, k=K, judged=judged)}
    for k in hits_at:
        row[f"recall@{k}"] = float(
            np.mean(
                [
                    any(r > 0 for r in (np.asarray(rel)[metrics.rank_candidates(s, rel)][:k]))
                    for s, rel in zip(scores, relevance)
                ]
            )
        )
    return row


def reciprocal_ranks(scores, relevance):
    """Per query: 1 / the rank of its relevant candidate (0 past rank 10 or absent)."""
    ranks = []
    for query_scores, gains in zip(scores, relevance):
        order = [gains[i] for i in metrics.rank_candidates(query_scores, gains)][:K]
        ranks.append(next((1.0 / r for r, gain in enumerate(order, 1) if gain > 0), 0.0))
    return np.asarray(ranks)


def training_file(path, titles, output):
    """A SQuAD file of the articles of `path` titled `titles` (the training articles)."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    data["data"] = [article for article in data["data"] if article.get("title", "") in titles]
    with open(output, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return output


def main(argv):
    del argv
    work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="rerank_quality_")
    os.makedirs(work_dir, exist_ok=True)
    examples = read_squad(FLAGS.squad_file)
    train, held = split_by_article(examples, FLAGS.eval_every_nth_article)
    held = [e for e in held if not e.is_impossible]
    corpus = list(dict.fromkeys(e.context for e in held))
    gold = [corpus.index(e.context) for e in held]
    queries = [e.question for e in held]
    hits_at = sorted({1, 5, 10, FLAGS.top_n})

    started = time.time()
    embedder = SentenceEmbedder(
        FLAGS.bi_encoder, max_seq_length=FLAGS.bi_max_seq_length, batch_size=FLAGS.eval_batch_size
    )
    query_vectors, passage_vectors = embedder.encode(queries), embedder.encode(corpus)
    top = rank_passages(query_vectors, passage_vectors, max(FLAGS.top_n, K))  # [Q, N]
    query_vectors, passage_vectors = normalized(query_vectors), normalized(passage_vectors)
    similarities = np.sum(query_vectors[:, None, :] * passage_vectors[top], axis=-1)  # [Q, N]: cosines
    relevance = [[int(p == g) for p in row] for row, g in zip(top, gold)]
    bi_seconds = time.time() - started
    rows = [ranking_row("bi-encoder alone", list(similarities), relevance, hits_at)]

    n = FLAGS.top_n
    candidates = top[:, :n]
    train_titles = {e.title for e in train}
    train_file = training_file(FLAGS.squad_file, train_titles, os.path.join(work_dir, "train_articles.json"))
    pair_queries = [q for q in queries for _ in range(n)]
    pair_passages = [corpus[p] for row in candidates for p in row]
    runs = []
    rerankers = [(os.path.basename(os.path.normpath(path)), path) for path in FLAGS.reranker]
    if not rerankers:
        rerankers = [(loss, os.path.join(work_dir, f"reranker_{loss}")) for loss in FLAGS.rerank_loss]
    for name, model_dir in rerankers:
        train_seconds = None
        if not FLAGS.reranker:
            config = FinetuneConfig(
                task="rerank",
                init=FLAGS.cross_init or FLAGS.bi_encoder,
                train_file=train_file,
                model_dir=model_dir,
                max_seq_length=FLAGS.max_seq_length,
                global_batch_size=FLAGS.global_batch_size,
                epochs=FLAGS.epochs,
                learning_rate=FLAGS.learning_rate,
                rerank_loss=name,
                rerank_negatives=FLAGS.rerank_negatives,
                seed=FLAGS.seed,
                max_train_examples=FLAGS.max_train_examples,
            )
            started = time.time()
            finetune(config, log=lambda message: print(message, flush=True))
            train_seconds = round(time.time() - started)
        started = time.time()
        model, _ = tasks.load_model(model_dir)
        directory = ModelDirectory.read(model_dir)
        tokenizer = directory.build_tokenizer({**directory.settings, **directory.tokenizer_settings})
        batches = rerank.pair_dataset(
            pair_queries,
            pair_passages,
            tokenizer,
            FLAGS.max_seq_length,
            FLAGS.eval_batch_size,
            max_position_embeddings=model.encoder.max_position_embeddings,
        )
        scores = common.predict(model, batches)["logits"].reshape(len(queries), n)  # [Q, N]
        score_seconds = time.time() - started
        # Past the top N the bi-encoder's order stays: those candidates score below every reranked one.
        tail = scores.min() - 1.0 - np.arange(similarities.shape[1] - n)[None, :] + np.zeros((len(queries), 1))
        merged = [list(np.concatenate([s, t])) for s, t in zip(scores, tail)]
        rows.append(ranking_row(f"bi-encoder top {n} + reranker ({name})", merged, relevance, hits_at))
        change = reciprocal_ranks(merged, relevance) - reciprocal_ranks(list(similarities), relevance)
        runs.append(
            dict(
                reranker=name,
                train_s=train_seconds,
                score_s=round(score_seconds),
                queries_up=int((change > 0).sum()),  # the paragraph ranked higher than the bi-encoder ranked it
                queries_down=int((change < 0).sum()),
            )
        )

    columns = ["ranking", f"mrr@{K}", f"ndcg@{K}"] + [f"recall@{k}" for k in hits_at]
    print()
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join([row["ranking"]] + [f"{row[c]:.4f}" for c in columns[1:]]) + " |")
    print()
    print(
        json.dumps(
            dict(
                queries=len(queries),
                passages=len(corpus),
                training_questions=len([e for e in train if not e.is_impossible]),
                bi_encoder_s=round(bi_seconds),
                runs=runs,
                work_dir=work_dir,
            )
        )
    )


if __name__ == "__main__":
    flags.mark_flags_as_required(["bi_encoder", "squad_file"])
    app.run(main)
