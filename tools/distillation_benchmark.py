"""Teacher vs distilled student: SavedModel throughput (and quality) on raw text, one run.

Each model directory (a fine-tuned teacher, and its student from
bert-tf-distill, and any further `--models`; all of one task) is exported with
`export_saved_model` and loaded back; raw sentences go into `serving_default`
at batch `--batch_size` (the whole set) and batch 1 (its first
`--single_sentences`). The sentences are the task's dev set:

- classification: SST-2 dev (`--sst2`); the quality column is the dev
  accuracy of the SavedModel's own predictions (so it checks the export too);
- ner: the sentences of a CoNLL file (`--conll`, eng.testa: each sentence's
  words joined by spaces, as a user sends raw text); the quality column is
  the entity F1 the model directory's `eval_results.json` records (conlleval,
  measured on the same file by bert-tf-finetune / bert-tf-distill).

As tools/benchmark.py's serve section: the sides alternate inside every
repeat (load from other processes hits them alike) and the table gives the
median of `--repeats`. One process; the CPU model is in
the table's heading.

Usage:
  python tools/distillation_benchmark.py --models=runs/sst2,runs/sst2-student \\
      --sst2=../shared/data/glue/SST-2/dev.tsv --output_md=runs/distillation_benchmark.md
  python tools/distillation_benchmark.py --models=runs/conll,runs/conll-student \
      --conll=../shared/data/conll2003/eng.testa
"""

import os
import sys
import tempfile

from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.bench.harness import median_rates
from tools.machine import cpu_model

FLAGS = flags.FLAGS
flags.DEFINE_list("models", None, "Model directories to compare, the teacher first (e.g. teacher,student).")
flags.DEFINE_string(
    "sst2",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "glue", "SST-2", "dev.tsv"),
    "GLUE SST-2 dev.tsv (header `sentence\\tlabel`).",
)
flags.DEFINE_string(
    "conll",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "conll2003", "eng.testa"),
    "NER models: the CoNLL file whose sentences are served (eng.testa).",
)
flags.DEFINE_integer("batch_size", 32, "Sentences per request of the batched row.", lower_bound=1)
flags.DEFINE_integer("single_sentences", 64, "Sentences sent one by one for the batch-1 row.", lower_bound=1)
flags.DEFINE_integer("repeats", 3, "Timed repeats (median).", lower_bound=1)
flags.DEFINE_string("output_md", None, "Also write the markdown table here.")


def read_sst2(path):
    """Sentences and int labels of a GLUE SST-2 dev.tsv."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines or lines[0].split("\t")[:2] != ["sentence", "label"]:
        raise ValueError(f"{path}: expected the GLUE SST-2 header 'sentence\\tlabel'")
    rows = [line.split("\t") for line in lines[1:] if line]
    return [row[0] for row in rows], [int(row[1]) for row in rows]


def dev_texts(task):
    """The raw dev sentences served for `task`, and the gold labels of classification (None for ner)."""
    if task == "ner":
        from bert_tf.data import read_conll

        return [" ".join(words) for words in read_conll(FLAGS.conll).sentences], None
    if task != "classification":
        raise app.UsageError(f"The models' task must be classification or ner. Received: task={task!r}")
    return read_sst2(FLAGS.sst2)


def quality(task, path, signature, batch_list, labels):
    """Classification: dev accuracy of the SavedModel's predictions; ner: the f1 in `path`'s eval_results.json."""
    import json

    import numpy as np

    if task == "ner":
        with open(os.path.join(path, "eval_results.json"), encoding="utf-8") as f:
            return json.load(f)["f1"]
    predicted = np.concatenate([signature(text=b)["probabilities"].numpy() for b in batch_list]).argmax(-1)
    return float(np.mean(predicted == np.asarray(labels)))


def main(argv):
    del argv
    if not FLAGS.models or len(FLAGS.models) < 2:
        raise app.UsageError(f"--models needs the teacher and at least one student. Received: --models={FLAGS.models}")
    import tensorflow as tf

    from bert_tf.checkpoints import load_config, read_settings
    from bert_tf.export import export_saved_model

    tasks = {read_settings(path).get("task") for path in FLAGS.models}
    if len(tasks) != 1:
        raise app.UsageError(f"--models must all be of one task. Received: tasks {sorted(map(str, tasks))}")
    task = tasks.pop()
    sentences, labels = dev_texts(task)
    batches = [tf.constant(sentences[i : i + FLAGS.batch_size]) for i in range(0, len(sentences), FLAGS.batch_size)]
    singles = [tf.constant([s]) for s in sentences[: FLAGS.single_sentences]]
    names = [os.path.basename(os.path.normpath(path)) for path in FLAGS.models]
    with tempfile.TemporaryDirectory() as workdir:
        served, described = {}, {}
        for name, path in zip(names, FLAGS.models):
            output = os.path.join(workdir, name)
            export_saved_model(path, output)
            served[name] = tf.saved_model.load(output).signatures["serving_default"]
            config, settings = load_config(path), read_settings(path)
            described[name] = f"{config.num_hidden_layers} layers, hidden {config.hidden_size}"
            if settings.get("labels") and task == "classification":
                described[name] += f", labels {settings['labels']}"

        def over(batch_list, signature):
            return lambda: [[t.numpy() for t in signature(text=b).values()] for b in batch_list]

        score = {name: quality(task, path, served[name], batches, labels) for name, path in zip(names, FLAGS.models)}
        batched = median_rates({n: over(batches, s) for n, s in served.items()}, len(sentences), 1, 1, FLAGS.repeats)
        single = median_rates({n: over(singles, s) for n, s in served.items()}, len(singles), 1, 1, FLAGS.repeats)
    teacher = names[0]
    lines = [
        f"Teacher vs students, SavedModels on raw {'CoNLL' if task == 'ner' else 'SST-2'} dev text "
        f"({len(sentences)} sentences), {cpu_model()}, median of {FLAGS.repeats}:",
        "",
        f"| model | architecture | {'entity F1' if task == 'ner' else 'dev accuracy'} | sent/s, batch {FLAGS.batch_size} | x teacher | "
        f"sent/s, batch 1 | x teacher |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in names:
        lines.append(
            f"| {name} | {described[name]} | {score[name]:.4f} | {batched[name]:.1f} | "
            f"{batched[name] / batched[teacher]:.2f} | {single[name]:.1f} | {single[name] / single[teacher]:.2f} |"
        )
    table = "\n".join(lines) + "\n"
    print(table)
    if FLAGS.output_md:
        with open(FLAGS.output_md, "w", encoding="utf-8") as f:
            f.write(table)


if __name__ == "__main__":
    app.run(main)
