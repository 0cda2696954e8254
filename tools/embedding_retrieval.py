"""Retrieval scores of a sentence-embedding model on held-out SQuAD articles, as `--task=embedding` evaluates them.

    python tools/embedding_retrieval.py --model=runs/xquad_embedding --squad_file=../shared/data/squad/xquad.en.json

The questions of every `--eval_every_nth_article`-th article are the queries;
the distinct paragraphs of those articles are the corpus (each question's
relevant passage is its own paragraph), or with `--corpus=all` every paragraph
of the file (the training articles' too: a harder search). Prints
recall@1/5/10 and MRR@10 as JSON. With `--corpus=held_out` it is the evaluation
`bert-tf-finetune --task=embedding --train_file=SQUAD --eval_every_nth_article=N`
runs after each epoch, here on any model `checkpoints.load_encoder` reads (a
sentence-transformers folder included: pooling and normalization from its
settings), e.g. the checkpoint fine-tuning starts from.
"""

import json
import os
import sys

from absl import app, flags

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf import metrics
from bert_tf.data import read_squad
from bert_tf.embeddings import SentenceEmbedder
from bert_tf.tasks.embedding import MRR_AT, RECALL_AT, rank_passages
from bert_tf.tasks.squad import split_by_article

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "model", None, "The model: a bert_tf model directory, Hugging Face or sentence-transformers folder."
)
flags.DEFINE_string("squad_file", None, "A SQuAD v1.1/v2.0 JSON file.")
flags.DEFINE_integer("eval_every_nth_article", 5, "Every n-th article is held out (the queries and corpus).")
flags.DEFINE_integer("max_seq_length", 256, "Tokens per text.")
flags.DEFINE_integer("batch_size", 64, "Texts per batch.")
flags.DEFINE_enum("corpus", "held_out", ["held_out", "all"], "The passages searched: the held-out articles' or all.")


def main(argv):
    del argv
    embedder = SentenceEmbedder(FLAGS.model, max_seq_length=FLAGS.max_seq_length, batch_size=FLAGS.batch_size)
    examples = read_squad(FLAGS.squad_file)
    _, held = split_by_article(examples, FLAGS.eval_every_nth_article)
    corpus = list(dict.fromkeys(e.context for e in (held if FLAGS.corpus == "held_out" else examples)))
    index = {text: i for i, text in enumerate(corpus)}

    queries, passages = embedder.encode([e.question for e in held]), embedder.encode(corpus)
    top = rank_passages(queries, passages, max(RECALL_AT + (MRR_AT,)))
    results = metrics.retrieval_metrics(top.tolist(), [[index[e.context]] for e in held], RECALL_AT, MRR_AT)
    summary = {"queries": len(held), "passages": len(corpus), **{k: round(v, 4) for k, v in results.items()}}
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    flags.mark_flags_as_required(["model", "squad_file"])
    app.run(main)
