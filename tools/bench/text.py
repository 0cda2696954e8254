"""text: tokenizer MB/s (bert_tf, keras-hub, HF `tokenizers`), per UDHR file, and in-graph pretraining batches/s.

Per UDHR file: every script of `--tokenizer_multilingual`, bert_tf vs HF `tokenizers` `encode_batch` on every core.
The pipeline row is bert_tf only: no peer builds NSP pairs in tf.data.
"""

import glob
import os

from tools import udhr_text
from tools.bench.harness import Row, best_rows, median_rates
from tools.bench.options import FLAGS, weights_dir
from tools.bench.work import pretraining_batches

# Tokenizer rows time at least this many passes over their text, and as many more as fill TOKENIZER_SECONDS: one
# pass of ours over a UDHR file is 3-10 ms, short enough for the thread pools' wake-up or one descheduled thread
# on a small VM to halve a reading.
TOKENIZER_PASSES = 5
TOKENIZER_SECONDS = 0.25
ALL_FILES = "all UDHR files"  # the multilingual rows' last label: every file's lines together


def text_rows():
    import keras_hub
    import tensorflow as tf

    from bert_tf.text import BertTokenizer

    paths = sorted(glob.glob(FLAGS.tokenizer_input))
    if not paths:
        raise ValueError(f"--tokenizer_input={FLAGS.tokenizer_input} matches no file")
    weights = weights_dir()
    if not weights:
        return [Row("text", "tokenizer", "MB/s", float("nan"), note="no vocab.txt (set --weights)")]
    vocab = os.path.join(weights, "vocab.txt")
    lines = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines.extend(line for line in f.read().splitlines() if line.strip())
    if FLAGS.quick:
        lines = lines[:2000]
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    chunks = [tf.constant(lines[i : i + 4096]) for i in range(0, len(lines), 4096)]
    ours = BertTokenizer(vocab)
    ours_fn = tf.function(lambda x: ours.tokenize(x).flat_values)
    hub = keras_hub.tokenizers.BertTokenizer(vocabulary=vocab, lowercase=True)
    hub_fn = tf.function(lambda x: hub(x).flat_values)
    candidates = {
        ("bert_tf", "float32"): lambda: [ours_fn(c).numpy() for c in chunks],
        ("keras-hub", "float32"): lambda: [hub_fn(c).numpy() for c in chunks],
    }
    try:
        from tokenizers import BertWordPieceTokenizer

        reference = BertWordPieceTokenizer(vocab, lowercase=True)
        candidates[("tokenizers", "float32")] = lambda: reference.encode_batch(lines)
    except ImportError:
        pass
    rates = median_rates(candidates, megabytes, TOKENIZER_PASSES, 1, FLAGS.repeats, min_seconds=_floor())
    name = f"tokenizer, {len(lines)} lines of {os.path.basename(paths[0])}"
    rows = best_rows("text", name, "MB/s", rates)
    if ("tokenizers", "float32") in rates:
        rows.extend(best_rows("text", name, "MB/s", rates, peer="tokenizers"))
    rows.extend(_multilingual_rows(ours, vocab))
    rows.append(_pipeline_row(ours, paths))
    return rows


def _multilingual_rows(ours, vocab):
    """bert_tf vs HF `tokenizers` `encode_batch` (every core) MB/s per UDHR file and over all of them, uncased (`ours`)
    and cased (the same vocabulary without lowercasing), each row noting on how many lines the ids equal HF's."""
    import tensorflow as tf

    from bert_tf.text import BertTokenizer

    try:
        from tokenizers import BertWordPieceTokenizer
    except ImportError:
        return []
    paths = sorted(glob.glob(FLAGS.tokenizer_multilingual)) if FLAGS.tokenizer_multilingual else []
    texts = {os.path.basename(p): (udhr_text.script_of(p), udhr_text.read_lines(p)) for p in paths}
    if texts:
        texts[ALL_FILES] = ("every script", [line for _, lines in texts.values() for line in lines])
    megabytes = 0.02 if FLAGS.quick else FLAGS.tokenizer_multilingual_megabytes
    rows = []
    for casing, tokenizer in (("uncased", ours), ("cased", BertTokenizer(vocab, lowercase=False))):
        reference = BertWordPieceTokenizer(vocab, lowercase=casing == "uncased")
        ours_fn = tf.function(
            lambda x, tokenizer=tokenizer: tokenizer.tokenize(x).flat_values,
            input_signature=[tf.TensorSpec([None], tf.string)],
        )
        same_ids = {}
        for label, (script, original) in texts.items():
            lines = udhr_text.repeated(original, megabytes)
            size = sum(len(line.encode("utf-8")) for line in lines) / 1e6
            chunks = [tf.constant([t.encode("utf-8") for t in lines[i : i + 4096]]) for i in range(0, len(lines), 4096)]
            candidates = {
                ("bert_tf", "float32"): lambda chunks=chunks, fn=ours_fn: [fn(c).numpy() for c in chunks],
                ("tokenizers", "float32"): lambda lines=lines, hf=reference: hf.encode_batch(lines),
            }
            rates = median_rates(candidates, size, TOKENIZER_PASSES, 1, FLAGS.repeats, min_seconds=_floor())
            if label == ALL_FILES:  # the files' counts summed: each line was checked in its own file's row
                same = sum(same_ids.values())
            else:
                same, _ = udhr_text.same_as_reference(tokenizer, reference, original)
                same_ids[label] = same
            (row,) = best_rows(
                "text", f"tokenizer {casing}, UDHR {label} ({script}), {size:.2f} MB", "MB/s", rates, peer="tokenizers"
            )
            row.note = f"ids equal HF's on {same}/{len(original)} lines"
            rows.append(row)
    return rows


def _floor():
    return 0.0 if FLAGS.quick else TOKENIZER_SECONDS


def _pipeline_row(tokenizer, paths):
    batch_size = 32
    iterator = pretraining_batches(paths, tokenizer, batch_size)
    batches = 5 if FLAGS.quick else 50
    rates = median_rates(
        {("bert_tf", "-"): lambda: [next(iterator) for _ in range(batches)]}, batches * batch_size, 1, 1, FLAGS.repeats
    )
    return Row(
        "text",
        "pretraining batches from raw text (tokenize, NSP pairs, mask), 32x128",
        "ex/s",
        rates[("bert_tf", "-")],
        note="no peer builds NSP pairs in tf.data",
    )
