"""Accuracy kept per export format: a fine-tuned model exported in every format and scored on held-out data.

    python tools/format_accuracy.py --model_dir=runs/sst2 --eval_file=../shared/data/glue/SST-2/dev.tsv
    python tools/format_accuracy.py --model_dir=runs/conll --eval_file=../shared/data/conll2003/eng.testa

The model directory's task decides the data and the metric:

- classification: SST-2's dev.tsv (GLUE's layout, read by `bert_tf.data.classification`), raw sentences in
  each format's serving path: the SavedModel's `serving_default` (tokenizer in the graph), LiteRT with the tokenizer
  inside, ONNX Runtime fed by Hugging Face `tokenizers` on the exported `tokenizer.json`. Metric: accuracy
  (`bert_tf.metrics.glue_metrics`).
- ner: a CoNLL-2003 column file (word first, tag last; read by `bert_tf.data.read_conll`). Every format gets the
  same piece ids (the exported `tokenizer.json` on the words, `is_pretokenized`; a sentence longer than
  `max_seq_length` in windows of `max_seq_length - 2` pieces without overlap, as fine-tuning's evaluation): the
  SavedModel's `ids` signature, an ids-in LiteRT model, ONNX Runtime; a word's tag is its first piece's label, as
  fine-tuning scores it. Metric: entity F1 (conlleval, `bert_tf.metrics.conll_metrics`).

Formats: the float32 SavedModel (the reference), LiteRT float32, float16 and dynamic int8, ONNX float32 and dynamic
int8 (`--formats` picks some). The table gives each format's size on disk, its metric, and the share of examples
(sentences; for NER, words) whose answer equals the SavedModel's. CPU named in the header.
"""

import os
import sys
import tempfile
import time

from absl import app, flags

if not __package__:  # run as `python tools/format_accuracy.py`: import `tools.*` and `bert_tf` from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.bench.serve_format_probe import feeds, litert_runner, onnx_session, size_mb

FORMATS = ("saved_model", "litert_float32", "litert_float16", "litert_int8", "onnx_float32", "onnx_int8")
QUANTIZE = {"float32": "none", "float16": "float16", "int8": "dynamic_int8"}


def define_flags():
    """The command line's flags, defined when run as a script only (importing the readers defines none: the apps'
    flags of the same names live in the same absl registry in a test process)."""
    flags.DEFINE_string("model_dir", None, "A fine-tuned classification or NER model directory.", required=True)
    flags.DEFINE_string("eval_file", None, "SST-2 style dev.tsv (classification) or a CoNLL file (ner).", required=True)
    flags.DEFINE_list("formats", list(FORMATS), f"Formats to score, of {', '.join(FORMATS)}.")
    flags.DEFINE_integer("batch_size", 32, "Examples per call.")
    flags.DEFINE_integer("limit", 0, "Score the first N examples only (0: all).")
    flags.DEFINE_string("workdir", None, "Where the exports go (default: a temporary directory, removed at the end).")


FLAGS = flags.FLAGS


def read_eval(task, path):
    """(examples, gold) of the held-out file, read as fine-tuning reads it: SST-2's GLUE layout through bert_tf's
    classification reader (sentences, label ids), or a CoNLL file through its tagging reader (word lists, BIO tag
    lists; IOB1 converted). Bad input raises ValueError naming the file and line."""
    from bert_tf.data import read_conll
    from bert_tf.data.classification import glue_layout, read_examples

    if task == "classification":
        examples = read_examples(path, **glue_layout("sst2"))
        return examples.texts, examples.labels
    data = read_conll(path)
    return data.sentences, data.tags


def export(model_dir, workdir, name, tokenizer_inside):
    """The exported path of format `name` (the SavedModel directory, the .tflite or .onnx file)."""
    from bert_tf.export import export_litert, export_onnx, export_saved_model

    output = os.path.join(workdir, name)
    if name == "saved_model":
        export_saved_model(model_dir, output)
        return output
    kind, precision = name.split("_")
    if kind == "litert":
        export_litert(model_dir, output, quantize=QUANTIZE[precision], tokenizer_inside=tokenizer_inside)
        return os.path.join(output, "model.tflite")
    export_onnx(model_dir, output, quantize=QUANTIZE[precision])
    return os.path.join(output, "model.onnx")


def classify(name, path, tokenizer, sentences, batch_size):
    """Label ids of `sentences` (raw strings) through format `name`'s serving path."""
    import numpy as np

    batches = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
    if name == "saved_model":
        import tensorflow as tf

        signature = tf.saved_model.load(path).signatures["serving_default"]
        return np.concatenate([signature(text=tf.constant(b))["label_id"].numpy() for b in batches])
    if name.startswith("litert"):
        runner = litert_runner(path)
        encode = [np.array([s.encode("utf-8") for s in b], dtype=object) for b in batches]
        return np.concatenate([runner(text=b)["label_id"] for b in encode])
    session = onnx_session(path)
    return np.concatenate([session.run(["label_id"], feeds(tokenizer.encode_batch(b)))[0] for b in batches])


def tag(name, path, tokenizer, sentences, batch_size):
    """Per sentence, the label id of each word's first piece, the same piece ids fed to every format."""
    if name == "saved_model":
        import tensorflow as tf

        signature = tf.saved_model.load(path).signatures["ids"]

        def run(inputs):
            return signature(**{k: tf.constant(v) for k, v in inputs.items()})["label_id"].numpy()

    elif name.startswith("litert"):
        runner = litert_runner(path)

        def run(inputs):
            return runner(**inputs)["label_id"]

    else:
        session = onnx_session(path)

        def run(inputs):
            return session.run(["label_id"], inputs)[0]

    words = []
    for start in range(0, len(sentences), batch_size):
        encodings = tokenizer.encode_batch(sentences[start : start + batch_size], is_pretokenized=True)
        # A sentence past max_seq_length goes on in windows of max_seq_length - 2 pieces without overlap (the
        # tokenizer's overflow), as fine-tuning's evaluation cuts it; a word's label is its first piece's.
        windows = [(k, window) for k, encoding in enumerate(encodings) for window in [encoding, *encoding.overflowing]]
        label_ids = run(feeds([window for _, window in windows]))
        firsts = [{} for _ in encodings]
        for (k, window), row in zip(windows, label_ids):
            for position, word in enumerate(window.word_ids):
                if word is not None and word not in firsts[k]:
                    firsts[k][word] = int(row[position])
        words.extend(firsts)
    return words


def _hf_tokenizer(model_dir, workdir, settings):
    """The Hugging Face tokenizer the ONNX export writes (`tokenizer.json`), padding to the batch's longest."""
    import tokenizers

    from bert_tf.checkpoints import ModelDirectory, load_tokenizer
    from bert_tf.export.onnx import write_tokenizer

    folder = os.path.join(workdir, "tokenizer_json")
    os.makedirs(folder, exist_ok=True)
    write_tokenizer(ModelDirectory.read(model_dir), load_tokenizer(model_dir), folder, settings["max_seq_length"])
    return tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))


def main(argv):
    del argv
    import numpy as np

    from bert_tf import metrics
    from bert_tf.checkpoints import ModelDirectory
    from tools.machine import cpu_model

    unknown = [name for name in FLAGS.formats if name not in FORMATS]
    if unknown:
        raise app.UsageError(f"--formats: unknown {unknown}; known: {', '.join(FORMATS)}")
    settings = ModelDirectory.read(FLAGS.model_dir).settings
    task = settings.get("task")
    if task not in ("classification", "ner"):
        raise app.UsageError(f"--model_dir: a classification or ner model expected. Received task={task!r}")
    labels = list(settings["labels"])
    examples, gold = read_eval(task, FLAGS.eval_file)
    if FLAGS.limit:
        examples, gold = examples[: FLAGS.limit], gold[: FLAGS.limit]
    formats = ["saved_model"] + [name for name in FLAGS.formats if name != "saved_model"]
    with tempfile.TemporaryDirectory() as scratch:
        workdir = FLAGS.workdir or scratch
        paths = {}
        for name in formats:
            start = time.perf_counter()
            paths[name] = export(FLAGS.model_dir, workdir, name, tokenizer_inside=task == "classification")
            print(f"[exported {name} in {time.perf_counter() - start:.0f} s]", file=sys.stderr, flush=True)
        tokenizer = _hf_tokenizer(FLAGS.model_dir, workdir, settings)
        answers = {}
        for name in formats:
            start = time.perf_counter()
            if task == "classification":
                answers[name] = classify(name, paths[name], tokenizer, examples, FLAGS.batch_size)
            else:
                answers[name] = tag(name, paths[name], tokenizer, examples, FLAGS.batch_size)
            print(f"[scored {name} in {time.perf_counter() - start:.0f} s]", file=sys.stderr, flush=True)
        sizes = {name: size_mb(path) for name, path in paths.items()}
    reference = answers["saved_model"]
    print(f"CPU: {cpu_model()}")
    print(f"Model: {FLAGS.model_dir} ({task}); data: {FLAGS.eval_file}, {len(examples)} examples\n")
    if task == "classification":
        print("| format | size on disk | accuracy | same label as the SavedModel |")
        print("|---|---:|---:|---:|")
        for name in formats:
            accuracy = metrics.glue_metrics(gold, answers[name], num_classes=len(labels))["accuracy"]
            same = float(np.mean(answers[name] == reference))
            print(f"| {name} | {sizes[name]:.2f} MB | {100 * accuracy:.2f}% | {100 * same:.2f}% |")
        return
    print("| format | size on disk | entity F1 | precision | recall | words tagged as by the SavedModel |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in formats:
        predicted = [
            [labels[words.get(i, labels.index("O") if "O" in labels else 0)] for i in range(len(sentence))]
            for words, sentence in zip(answers[name], examples)
        ]
        scores = metrics.conll_metrics(gold, predicted)
        same = np.mean(
            [a.get(i) == b.get(i) for a, b, s in zip(answers[name], reference, examples) for i in range(len(s))]
        )
        print(
            f"| {name} | {sizes[name]:.2f} MB | {100 * scores['f1']:.2f} | {100 * scores['precision']:.2f} | "
            f"{100 * scores['recall']:.2f} | {100 * same:.2f}% |"
        )


if __name__ == "__main__":
    define_flags()
    app.run(main)
