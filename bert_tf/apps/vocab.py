"""bert-tf-vocab: builds a WordPiece vocab.txt, a byte-level BPE vocab.json + merges.txt, or a SentencePiece
unigram spiece.model (spm.model), from text files.

bert-tf-vocab --input=GLOB[,GLOB] --output=vocab.txt --vocab_size=N [--nolowercase] [--min_frequency=N]
bert-tf-vocab --kind=bpe --input=GLOB[,GLOB] --output=DIR --vocab_size=N [--min_frequency=N]
bert-tf-vocab --kind=bert_bpe --input=GLOB[,GLOB] --output=DIR --vocab_size=N [--min_frequency=N]
bert-tf-vocab --kind=unigram --input=GLOB[,GLOB] --output=DIR --vocab_size=N [--family=albert|deberta-v2]
    [--nolowercase]
"""

import dataclasses
import os
import sys

from absl import app, flags

from bert_tf.apps import common_flags, errors, launch
from bert_tf.options import option
from bert_tf.text.vocab import (
    BERT_BPE_FILE,
    BPE_FILES,
    UNIGRAM_MODEL_FILES,
    UNIGRAM_SPECIAL_TOKENS,
    VOCAB_KINDS,
    build_bert_bpe_vocab,
    build_bpe_vocab,
    build_unigram_vocab,
    build_vocab,
    expand_files,
)

FLAGS = flags.FLAGS


@dataclasses.dataclass(kw_only=True)
class VocabOptions:
    """A bert-tf-vocab run: one flag per field, of the same name and default."""

    kind: str = option(
        "wordpiece",
        "wordpiece: BERT's vocab.txt; bpe: a byte-level BPE (RoBERTa's kind) vocab.json and merges.txt; bert_bpe: a "
        "byte-level BPE with BERT's [CLS]/[SEP]/[MASK] (ModernBERT's kind) as one tokenizer.json; unigram: a "
        "SentencePiece unigram model (ALBERT's spiece.model, DeBERTa-v2's spm.model) with tokenizer_config.json and "
        "tokenizer.json.",
        enum=VOCAB_KINDS,
    )
    family: str = option(
        "albert",
        "--kind=unigram: whose special tokens and normalization (albert: uncased unless --nolowercase; deberta-v2: "
        "cased unless --lowercase).",
        enum=tuple(UNIGRAM_SPECIAL_TOKENS),
    )
    input: list = option(None, "Text files or globs, comma-separated (one sentence or paragraph per line).")
    output: str = option(
        None,
        "Path of the vocab.txt to write (--kind=bpe: the directory for vocab.json and merges.txt; --kind=bert_bpe: "
        "for tokenizer.json; --kind=unigram: for the .model).",
    )
    vocab_size: int = option(30522, "Vocabulary size, special tokens included.", lower_bound=6)
    lowercase: bool = option(
        True,
        "Uncased vocabulary (lowercase and strip accents); --nolowercase for cased. WordPiece and unigram (default "
        "there: the --family's); BPE is cased.",
    )
    min_frequency: int = option(2, "Pieces seen fewer times are not added.", lower_bound=1)
    progress: bool = option(True, "Show a progress bar.")


common_flags.define_config_flags(VocabOptions, sys.modules[__name__])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if not FLAGS.input:
        raise app.UsageError("--input is required (text files or globs).")
    bert_bpe = FLAGS.kind == "bert_bpe"
    bpe = FLAGS.kind in ("bpe", "bert_bpe")  # byte-level: cased, written to a directory
    unigram = FLAGS.kind == "unigram"
    if not FLAGS.output:
        raise app.UsageError(
            "--output is required ("
            + (
                f"directory for {BERT_BPE_FILE}"
                if bert_bpe
                else "directory for vocab.json and merges.txt"
                if bpe
                else "directory for the .model"
                if unigram
                else "path of vocab.txt"
            )
            + ")."
        )
    if FLAGS["family"].present and not unigram:
        raise app.UsageError(f"--family applies to --kind=unigram only. Received: --kind={FLAGS.kind}")
    if unigram and os.path.exists(FLAGS.output) and not os.path.isdir(FLAGS.output):
        raise app.UsageError(f"--output must be a directory with --kind=unigram. Received: --output={FLAGS.output}")
    if bpe and FLAGS["lowercase"].present:
        raise app.UsageError("--lowercase/--nolowercase applies to --kind=wordpiece only (byte-level BPE is cased).")
    if bpe and os.path.exists(FLAGS.output) and not os.path.isdir(FLAGS.output):
        raise app.UsageError(
            f"--output must be a directory with --kind={FLAGS.kind}. Received: --output={FLAGS.output}"
        )
    try:
        expand_files(FLAGS.input)
    except FileNotFoundError as e:
        raise app.UsageError(f"--input: {e}") from None
    try:
        if unigram:
            summary = build_unigram_vocab(
                FLAGS.input,
                FLAGS.output,
                vocab_size=FLAGS.vocab_size,
                family=FLAGS.family,
                lowercase=FLAGS.lowercase if FLAGS["lowercase"].present else None,
                show_progress=FLAGS.progress,
            )
        elif bpe:
            summary = (build_bert_bpe_vocab if bert_bpe else build_bpe_vocab)(
                FLAGS.input,
                FLAGS.output,
                vocab_size=FLAGS.vocab_size,
                min_frequency=FLAGS.min_frequency,
                show_progress=FLAGS.progress,
            )
        else:
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
        files = [BERT_BPE_FILE] if bert_bpe else BPE_FILES
        kept = f"no vocabulary written to {FLAGS.output}" + (f" ({' and '.join(files)})" if bpe else "")
        if unigram:
            kept = f"no vocabulary written to {FLAGS.output} ({UNIGRAM_MODEL_FILES[FLAGS.family]})"
        print(errors.storage_error("bert-tf-vocab", e, kept), file=sys.stderr)
        return 1
    print(summary, file=sys.stdout)
    return 0


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
