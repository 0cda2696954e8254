"""The largest differences of each family's reference checkpoints from transformers' and sentence-transformers'
outputs, in-process: a table for docs/results (the tests hold the same comparisons to 1e-4).

For each family of `--families` in `../shared/reference/families` (FAMILY, FAMILY-cls and FAMILY-st folders with
`FAMILY/reference.json`): every single, pair and long row run alone (no padding) through `tasks.load_model` of the
masked-LM folder (hidden states; masked-LM logits at the reference's top-5 ids) and of the classifier (logits), and
the single texts through `SentenceEmbedder(FAMILY-st).encode` (embeddings).

Usage:
  python tools/family_exactness.py --families=xlm-roberta,bert-multilingual-sp,mpnet,nomic_bert,gte
"""

import json
import os
import sys

from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `bert_tf` from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FAMILIES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "reference", "families")
FLAGS = flags.FLAGS
flags.DEFINE_list("families", ["xlm-roberta", "bert-multilingual-sp", "mpnet", "nomic_bert", "gte"], "Folders to read.")
flags.DEFINE_string("references", os.path.normpath(FAMILIES_DIR), "The reference families directory.")


def _batch(row):
    import numpy as np

    ids = np.array(row["input_ids"], np.int32)[None]
    segments = np.array(row.get("token_type_ids", np.zeros_like(ids[0])), np.int32)[None]
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": np.ones_like(ids)}


def differences(folder):
    """`(rows, hidden, top5_logits, cls, st)`: the largest absolute differences over every row of `folder`."""
    import numpy as np

    from bert_tf import tasks
    from bert_tf.embeddings import SentenceEmbedder

    with open(os.path.join(folder, "reference.json"), encoding="utf-8") as f:
        reference = json.load(f)
    rows = reference["single"] + reference["pair"] + reference.get("long", [])
    mlm, _ = tasks.load_model(folder)
    classifier, _ = tasks.load_model(folder + "-cls")
    hidden = top5 = logits = 0.0
    for row in rows:
        batch = _batch(row)
        out = mlm.encoder(batch)["sequence_output"][0].numpy()
        hidden = max(hidden, float(np.abs(out - np.asarray(row["last_hidden_state"])).max()))
        logits = max(logits, float(np.abs(classifier(batch)[0].numpy() - np.asarray(row["cls_logits"])).max()))
        positions = np.arange(batch["token_ids"].shape[1], dtype=np.int32)[None]
        mlm_logits = mlm({**batch, "mask_positions": positions})["mlm"][0].numpy()
        at_top5 = np.take_along_axis(mlm_logits, np.asarray(row["mlm_top5_ids"]), 1)
        top5 = max(top5, float(np.abs(at_top5 - np.asarray(row["mlm_top5_logits"])).max()))
    embeddings = np.asarray(SentenceEmbedder(folder + "-st").encode([row["text"] for row in reference["single"]]))
    st = float(np.abs(embeddings - np.asarray(reference["st_embeddings"])).max())
    return len(rows), hidden, top5, logits, st


def main(argv):
    del argv
    print(
        "| family | rows | hidden states | fill-mask top-5 logits | classifier logits | sentence-transformers embeddings |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for family in FLAGS.families:
        rows, hidden, top5, logits, st = differences(os.path.join(FLAGS.references, family))
        print(f"| {family} | {rows} | {hidden:.1e} | {top5:.1e} | {logits:.1e} | {st:.1e} |", flush=True)


if __name__ == "__main__":
    app.run(main)
