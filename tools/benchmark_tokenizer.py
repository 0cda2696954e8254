"""Tokenizer throughput: bert_tf vs Hugging Face tokenizers vs keras-hub.

Prints a markdown table of MB/s (input UTF-8 bytes per second) on the same
lines for:
  * bert_tf.text.BertTokenizer.tokenize inside a tf.function, batched;
  * tokenizers.BertWordPieceTokenizer.encode_batch (the reference);
  * keras_hub.tokenizers.BertTokenizer, batched.

Usage:
  python tools/benchmark_tokenizer.py --vocab=path/to/vocab.txt \
      --input='../shared/data/corpus/gutenberg/*.txt' --batch_size=4096
"""

import glob
import time

from absl import app
from absl import flags

FLAGS = flags.FLAGS
flags.DEFINE_string("vocab", None, "WordPiece vocab.txt.", required=True)
flags.DEFINE_string("input", None, "Glob of text files (one example a line).",
                    required=True)
flags.DEFINE_integer("batch_size", 4096, "Lines per call.")
flags.DEFINE_boolean("lowercase", True, "Uncased (True) or cased (False).")
flags.DEFINE_integer("repeats", 3, "Timed passes; the best is reported.")


def _best_seconds(fn, repeats):
    fn()  # warm-up (tracing, caches)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv):
    del argv
    import tensorflow as tf

    from bert_tf.text import BertTokenizer

    paths = sorted(glob.glob(FLAGS.input))
    if not paths:
        raise app.UsageError(f"--input matches no file. Received: {FLAGS.input}")
    if FLAGS.batch_size < 1:
        raise app.UsageError(
            f"--batch_size must be positive. Received: {FLAGS.batch_size}")
    lines = []
    for path in paths:
        with open(path, "rb") as f:
            lines.extend(f.read().split(b"\n"))
    megabytes = sum(len(line) for line in lines) / 1e6
    texts = [line.decode("utf-8", errors="replace") for line in lines]
    size = FLAGS.batch_size
    batches = [tf.constant(lines[i:i + size]) for i in range(0, len(lines), size)]
    rows = []

    ours = BertTokenizer(FLAGS.vocab, lowercase=FLAGS.lowercase)
    tokenize = tf.function(ours.tokenize)
    with_offsets = tf.function(ours.tokenize_with_offsets)

    def run_ours():
        for batch in batches:
            tokenize(batch).flat_values.numpy()

    def run_ours_offsets():
        for batch in batches:
            with_offsets(batch)[0].flat_values.numpy()

    rows.append(("bert_tf BertTokenizer (tf.function)", run_ours))
    rows.append(("bert_tf BertTokenizer.tokenize_with_offsets", run_ours_offsets))

    try:
        import tokenizers

        reference = tokenizers.BertWordPieceTokenizer(
            FLAGS.vocab, lowercase=FLAGS.lowercase)
        reference._tokenizer.encode_special_tokens = True

        def run_reference():
            for i in range(0, len(texts), size):
                reference.encode_batch(texts[i:i + size], add_special_tokens=False)

        rows.append(("HF tokenizers BertWordPieceTokenizer.encode_batch",
                     run_reference))
    except ImportError:
        print("tokenizers is not installed: skipped")

    try:
        import keras_hub

        hub = keras_hub.tokenizers.BertTokenizer(
            vocabulary=FLAGS.vocab, lowercase=FLAGS.lowercase)
        hub_fn = tf.function(hub.tokenize)

        def run_hub():
            for batch in batches:
                hub_fn(batch).flat_values.numpy()

        rows.append(("keras_hub BertTokenizer (tf.function)", run_hub))
    except ImportError:
        print("keras-hub is not installed: skipped")

    print(f"\n{len(lines)} lines, {megabytes:.1f} MB, batch_size={size}, "
          f"lowercase={FLAGS.lowercase}\n")
    print("| tokenizer | seconds | MB/s |")
    print("|---|---:|---:|")
    for name, fn in rows:
        seconds = _best_seconds(fn, FLAGS.repeats)
        print(f"| {name} | {seconds:.2f} | {megabytes / seconds:.1f} |")


if __name__ == "__main__":
    app.run(main)
