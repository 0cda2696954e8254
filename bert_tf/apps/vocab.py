"""bert-tf-vocab: builds a WordPiece vocab.txt from text files.

bert-tf-vocab --input=GLOB[,GLOB] --output=vocab.txt --vocab_size=N [--nolowercase] [--min_frequency=N]
"""

import sys

from absl import app, flags

from bert_tf.apps import errors, launch
from bert_tf.text.vocab import build_vocab, expand_files

FLAGS = flags.FLAGS
flags.DEFINE_list("input", None, "Text files or globs, comma-separated (one sentence or paragraph per line).")
flags.DEFINE_string("output", None, "Path of the vocab.txt to write.")
flags.DEFINE_integer("vocab_size", 30522, "Vocabulary size, special tokens included.", lower_bound=6)
flags.DEFINE_bool("lowercase", True, "Uncased vocabulary (lowercase and strip accents); --nolowercase for cased.")
flags.DEFINE_integer("min_frequency", 2, "Pieces seen fewer times are not added.", lower_bound=1)
flags.DEFINE_bool("progress", True, "Show a progress bar.")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if not FLAGS.input:
        raise app.UsageError("--input is required (text files or globs).")
    if not FLAGS.output:
        raise app.UsageError("--output is required (path of vocab.txt).")
    try:
        expand_files(FLAGS.input)
    except FileNotFoundError as e:
        raise app.UsageError(f"--input: {e}") from None
    try:
        summary = build_vocab(
            FLAGS.input,
            FLAGS.output,
            vocab_size=FLAGS.vocab_size,
            lowercase=FLAGS.lowercase,
            strip_accents=None if FLAGS.lowercase else False,
            min_frequency=FLAGS.min_frequency,
            show_progress=FLAGS.progress,
        )
    except ValueError as e:  # no text in the input files
        print(f"bert-tf-vocab: error: {e}", file=sys.stderr)
        return 1
    except errors.STORAGE_ERRORS as e:  # a read-only, full or missing disk
        kept = f"no vocabulary written to {FLAGS.output}"
        print(errors.storage_error("bert-tf-vocab", e, kept), file=sys.stderr)
        return 1
    print(summary, file=sys.stdout)
    return 0


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
