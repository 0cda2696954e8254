"""bert-tf-embed: the sentence embeddings of a corpus file, resumable.

    bert-tf-embed --model_dir=models/minilm --input=corpus.txt --output=corpus_embeddings
    bert-tf-embed --model_dir=models/minilm --input=docs.jsonl --text_column=text --id_column=doc_id \\
        --output=docs_embeddings --output_format=tfrecord

`--input` is a text file (one passage per line; ids are 0-based line numbers) or a TSV/CSV/JSONL file
(`--text_column`, `--id_column`). `--output` is a directory: `embeddings.npy` (float32 [N, D], input order),
`ids.txt` and the manifest `embeddings.json` (or `embeddings.tfrecord` of `{id, embedding}` examples). Shards of
`--shard_size` passages are written as they finish; running the same command again after an interruption keeps
them. The pooling and normalization are the model directory's (`bert_tf.json`).
"""

import os
import sys

from absl import app, flags

from bert_tf.apps import errors, launch
from bert_tf.apps.common_flags import check_checkpoint_dir
from bert_tf.checkpoints import CheckpointError
from bert_tf.config import ConfigError
from bert_tf.embeddings import OUTPUT_FORMATS, embed_file

FLAGS = flags.FLAGS

# allow_override: other apps define model_dir, input, output, text_column, max_seq_length and overwrite with their
# own help or default (a process importing several apps keeps the last definition; each bert-tf-* command imports
# only its own app).
flags.DEFINE_string(
    "model_dir",
    None,
    "Model to embed with: bert_tf model directory, Hugging Face directory or TF1 checkpoint directory.",
    allow_override=True,
)
flags.DEFINE_string(
    "input",
    None,
    "Corpus: a text file (one passage per line) or a TSV/CSV/JSONL file (with --text_column).",
    allow_override=True,
)
flags.DEFINE_string(
    "output",
    None,
    "Output directory (embeddings.npy + ids.txt + embeddings.json, or embeddings.tfrecord); an unfinished run "
    "of the same input and model there is resumed.",
    allow_override=True,
)
flags.DEFINE_string(
    "text_column",
    None,
    "TSV/CSV/JSONL: the passage's column (header name or JSON key, or 0-based index without a header).",
    allow_override=True,
)
flags.DEFINE_string("id_column", None, "TSV/CSV/JSONL: the id column; default: the passage's 0-based index.")
flags.DEFINE_enum("output_format", "npy", OUTPUT_FORMATS, "npy: embeddings.npy + ids.txt; tfrecord: {id, embedding}.")
flags.DEFINE_integer("batch_size", 32, "Passages per forward call.", lower_bound=1, allow_override=True)
flags.DEFINE_integer(
    "max_seq_length",
    None,
    "Tokens per passage (longer ones are truncated). Default: the model directory's max_seq_length.",
    lower_bound=3,
    allow_override=True,
)
flags.DEFINE_integer("shard_size", 10000, "Passages per shard (the unit a restart skips).", lower_bound=1)
flags.DEFINE_integer(
    "max_shards",
    None,
    "Stop after this many new shards, leaving a resumable output (split a long job over several runs).",
    lower_bound=1,
)
flags.DEFINE_bool(
    "overwrite", False, "Replace whatever --output holds (a complete or different run).", allow_override=True
)
flags.DEFINE_bool("progress", True, "Show a progress bar (passages/s) on stderr.")


def _validate_flags():
    """Checks every flag before any side effect; raises app.UsageError naming the bad one."""
    check_checkpoint_dir("model_dir")
    for name in ("input", "output"):
        if not FLAGS[name].value:
            raise app.UsageError(f"--{name} is required. Received: --{name}=None")
    if not os.path.isfile(FLAGS.input):
        raise app.UsageError(f"--input is not a file. Received: --input={FLAGS.input}")
    if os.path.exists(FLAGS.output) and not os.path.isdir(FLAGS.output):
        raise app.UsageError(f"--output exists and is not a directory. Received: --output={FLAGS.output}")
    if os.path.abspath(FLAGS.output) == os.path.abspath(FLAGS.model_dir):
        raise app.UsageError(f"--output must differ from --model_dir. Received: --output={FLAGS.output}")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected positional arguments. Received: {argv[1:]}")
    _validate_flags()
    try:
        embed_file(
            FLAGS.model_dir,
            FLAGS.input,
            FLAGS.output,
            text_column=FLAGS.text_column,
            id_column=FLAGS.id_column,
            output_format=FLAGS.output_format,
            batch_size=FLAGS.batch_size,
            max_seq_length=FLAGS.max_seq_length,
            shard_size=FLAGS.shard_size,
            max_shards=FLAGS.max_shards,
            overwrite=FLAGS.overwrite,
            show_progress=FLAGS.progress,
        )
    except (CheckpointError, ConfigError, ValueError, FileExistsError, FileNotFoundError) as e:
        print(f"bert-tf-embed: error: {e}", file=sys.stderr)
        return 1
    except errors.STORAGE_ERRORS as e:  # a read-only, full or missing disk
        kept = f"finished shards kept in {FLAGS.output}; run again to resume"
        print(errors.storage_error("bert-tf-embed", e, kept), file=sys.stderr)
        return 1
    return 0


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
