"""What bert_tf computes on an ELECTRA pretraining pair, in the layout of tests/data/electra_pretraining/reference.json.

Run with the project's environment (no torch), then compare transformers' outputs on the Hugging Face
conversion with tools/references/check_electra_pretraining.py (the throwaway environment):

    python tools/references/electra_pretraining_outputs.py RUN outputs.json
    bert-tf-convert --input=RUN --to=hf --output=OUT
    ../refenv/bin/python tools/references/check_electra_pretraining.py OUT outputs.json

RUN is any checkpoint `bert_tf.checkpoints.load_pretrainer` reads as an `ElectraPretrainer` (a
replaced-token detection run's model directory, a converted pair). For each text (`--texts_from`: the
texts of a reference.json, by default the committed one) it writes `input_ids`, `token_type_ids`, the
discriminator's `discriminator_logits` `[T]` and the generator's `mlm_top5_ids` / `mlm_top5_logits`
`[T, 5]` at every position (not rounded).
"""

import argparse
import json
import os

import numpy as np
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.text import packer_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_TEXTS = os.path.join(ROOT, "tests", "data", "electra_pretraining", "reference.json")


def outputs(path, texts):
    """`{"single": rows}` of the pair at `path` on `texts`."""
    directory = checkpoints.ModelDirectory.read(path)
    pretrainer = checkpoints.load_pretrainer(directory)
    tokenizer = directory.build_tokenizer(directory.settings)
    packer = packer_for(tokenizer, directory.max_seq_length)
    rows = []
    for text in texts:
        features = packer(tokenizer.tokenize(tf.constant([text])))
        length = int(tf.reduce_sum(features["padding_mask"]))
        inputs = {name: tf.cast(value[:, :length], tf.int32) for name, value in features.items()}
        logits = pretrainer.replaced_token_logits(inputs).numpy()[0]
        mlm = pretrainer.generator({**inputs, "mask_positions": tf.range(length)[None]})["mlm"]
        top = tf.math.top_k(tf.cast(mlm[0], tf.float32), k=5)
        rows.append(
            {
                "text": text,
                "input_ids": inputs["token_ids"].numpy()[0].tolist(),
                "token_type_ids": inputs["segment_ids"].numpy()[0].tolist(),
                "discriminator_logits": logits.astype(np.float64).tolist(),
                "mlm_top5_ids": top.indices.numpy().tolist(),
                "mlm_top5_logits": top.values.numpy().astype(np.float64).tolist(),
            }
        )
    return {"source": os.fspath(path), "single": rows}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", help="the pair's directory (discriminator, generator/ inside)")
    p.add_argument("output", help="the JSON file to write")
    p.add_argument("--texts_from", default=DEFAULT_TEXTS, help="a reference.json whose `single` texts to run")
    args = p.parse_args()
    with open(args.texts_from, encoding="utf-8") as f:
        texts = [row["text"] for row in json.load(f)["single"]]
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(outputs(args.model, texts), f, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {args.output} ({len(texts)} texts)")


if __name__ == "__main__":
    main()
