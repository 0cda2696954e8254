"""Report on a bert-tf-pretrain run: training curves as a PNG, held-out masked-LM accuracy vs a baseline.

    python tools/pretraining_report.py --model_dir=runs/mini-corpus --output=docs/pretraining_mini.png

Reads the TensorBoard scalars the app wrote (`model_dir/logs/{train,eval}`;
when a resumed run wrote a step twice, the later value wins), draws loss,
masked-LM and NSP accuracy against the step, and scores the final model on
`--eval_batches` held-out batches (every 20th document group, the app's
evaluation split, rebuilt with the run's settings): masked-LM accuracy next to
the accuracy of always answering the most frequent masked token of the
training split (counted over `--baseline_batches` training batches).
Prints a markdown table.
"""

import glob
import json
import os

from absl import app, flags

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "A bert-tf-pretrain model directory.")
flags.DEFINE_string("output", None, "PNG path (default: model_dir/pretraining.png).")
flags.DEFINE_integer("eval_batches", 50, "Held-out batches scored with the final model.", lower_bound=0)
flags.DEFINE_integer(
    "baseline_batches", 200, "Training batches counted for the most frequent masked token.", lower_bound=1
)
flags.DEFINE_enum("corpus_format", None, ["lines", "paragraphs"], "Override the run's corpus format.")
flags.DEFINE_integer("group_size", None, "Override the run's pair-building group size.")


def read_scalars(log_dir):
    """{tag: {step: value}} from every event file in `log_dir` (later files win)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorflow.python.framework import tensor_util

    scalars = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "events.out.tfevents.*")), key=os.path.getmtime):
        for event in EventFileLoader(path).Load():
            for value in event.summary.value:
                number = (
                    float(tensor_util.MakeNdarray(value.tensor))
                    if value.HasField("tensor")
                    else float(value.simple_value)
                )
                scalars.setdefault(value.tag, {})[int(event.step)] = number
    return scalars


def plot(train, evaluation, output, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for tag, label in (("loss", "train loss (MLM + sentence objective)"), ("mlm_loss", "train MLM loss")):
        if tag in train:
            steps = sorted(train[tag])
            left.plot(steps, [train[tag][s] for s in steps], label=label)
    for tag, label in (("loss", "held-out loss"), ("mlm_loss", "held-out MLM loss")):
        if tag in evaluation:
            steps = sorted(evaluation[tag])
            left.plot(steps, [evaluation[tag][s] for s in steps], "o--", label=label)
    left.set_xlabel("step")
    left.set_ylabel("loss")
    left.legend()
    left.grid(alpha=0.3)
    for source, tag, style, label in (
        (train, "mlm_acc", "-", "train MLM accuracy"),
        (train, "nsp_acc", "-", "train NSP accuracy"),
        (train, "sop_acc", "-", "train SOP accuracy"),
        (evaluation, "mlm_acc", "o--", "held-out MLM accuracy"),
        (evaluation, "nsp_acc", "o--", "held-out NSP accuracy"),
        (evaluation, "sop_acc", "o--", "held-out SOP accuracy"),
    ):
        if tag in source:
            steps = sorted(source[tag])
            right.plot(steps, [source[tag][s] for s in steps], style, label=label)
    right.set_xlabel("step")
    right.set_ylabel("accuracy")
    right.set_ylim(0, 1)
    right.legend()
    right.grid(alpha=0.3)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(output, dpi=110)


def held_out_scores(model_dir, settings, eval_batches, baseline_batches, corpus_format, group_size):
    """(model MLM accuracy, baseline accuracy, masked tokens scored, baseline token)."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.checkpoints import load_pretrainer, load_tokenizer
    from bert_tf.checkpoints.settings import read_settings
    from bert_tf.data import pretraining_dataset

    tokenizer = load_tokenizer(model_dir, read_settings(model_dir))  # WordPiece or RoBERTa's byte-level BPE

    def batches(split, count):
        return pretraining_dataset(
            settings["corpus"],
            tokenizer,
            max_seq_length=settings["max_seq_length"],
            max_predictions_per_seq=settings["max_predictions_per_seq"],
            # The run's recipe (older runs recorded only `nsp`).
            sentence_objective=settings.get("sentence_objective", "nsp" if settings.get("nsp") else "none"),
            packing=settings.get("packing", "pairs"),
            masking=settings.get("masking", "whole_word" if settings.get("whole_word_masking") else "token"),
            masking_rate=settings.get("masking_rate") or 0.15,
            span_geometric_p=settings.get("span_geometric_p") or 0.2,  # None unless masking is "span"
            max_span_length=settings.get("max_span_length") or 10,
            batch_size=settings["global_batch_size"],
            seed=settings.get("seed", 0),
            corpus_format=corpus_format,
            group_size=group_size,
            split=split,
            shuffle_buffer=1 if split == "eval" else 10_000,
        ).take(count)

    counts = np.zeros([tokenizer.vocab_size], np.int64)
    for _, labels, weights in batches("train", baseline_batches):
        np.add.at(counts, labels["mlm"].numpy()[weights["mlm"].numpy() > 0], 1)
    baseline_token = int(counts.argmax())
    model = load_pretrainer(model_dir)
    predict = tf.function(lambda features: model(features, training=False)["mlm"])
    correct = baseline = total = 0
    for features, labels, weights in batches("eval", eval_batches):
        used = weights["mlm"].numpy() > 0
        gold = labels["mlm"].numpy()[used]
        guess = predict(features).numpy().argmax(-1)[used]
        correct += int((guess == gold).sum())
        baseline += int((gold == baseline_token).sum())
        total += int(used.sum())
    token = tokenizer.get_vocabulary()[baseline_token]
    return correct / max(total, 1), baseline / max(total, 1), total, token


def main(argv):
    del argv
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    with open(os.path.join(FLAGS.model_dir, "training_settings.json"), encoding="utf-8") as f:
        settings = json.load(f)
    train = read_scalars(os.path.join(FLAGS.model_dir, "logs", "train"))
    evaluation = read_scalars(os.path.join(FLAGS.model_dir, "logs", "eval"))
    if not train:
        raise app.UsageError(f"No training scalars in {FLAGS.model_dir}/logs/train.")
    output = FLAGS.output or os.path.join(FLAGS.model_dir, "pretraining.png")
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    model = settings.get("model", {})
    title = (
        f"{model.get('model_type', 'bert').upper()} L={model.get('num_hidden_layers')} H={model.get('hidden_size')} pretraining, "
        f"batch {settings['global_batch_size']} x {settings['max_seq_length']}"
    )
    plot(train, evaluation, output, title)
    speeds = list(train.get("examples/s", {}).values())
    rows = [("steps", max(train["loss"])), ("final train loss", f"{train['loss'][max(train['loss'])]:.3f}")]
    if speeds:
        rows.append(("examples/s (median over logged loops)", f"{sorted(speeds)[len(speeds) // 2]:.1f}"))
    if FLAGS.eval_batches:
        accuracy, baseline, total, token = held_out_scores(
            FLAGS.model_dir,
            settings,
            FLAGS.eval_batches,
            FLAGS.baseline_batches,
            FLAGS.corpus_format or settings.get("corpus_format", "lines"),
            FLAGS.group_size or settings.get("group_size", 16),
        )
        rows += [
            ("held-out masked tokens scored", total),
            ("held-out MLM accuracy", f"{accuracy:.4f}"),
            (f"most-frequent-token baseline ({token!r})", f"{baseline:.4f}"),
        ]
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print(f"\nChart: {output}")


if __name__ == "__main__":
    app.run(main)
