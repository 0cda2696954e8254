"""bert-tf-embed: the sentence embeddings of a corpus file, resumable.

    bert-tf-embed --model_dir=models/minilm --input=corpus.txt --output=corpus_embeddings
    bert-tf-embed --model_dir=models/minilm --input=docs.jsonl --text_column=text --id_column=doc_id \\
        --output=docs_embeddings --output_format=tfrecord

`--input` is a text file (one passage per line; ids are 0-based line numbers) or a TSV/CSV/JSONL file
(`--text_column`, `--id_column`). `--output` is a directory: `embeddings.npy` (float32 [N, D], input order),
`ids.txt` and the manifest `embeddings.json` (or `embeddings.tfrecord` of `{id, embedding}` examples). Shards of
`--shard_size` passages are written as they finish; running the same command again after an interruption keeps
them, and after the run finished says it is already complete. The pooling and normalization are the model directory's (`bert_tf.json`).
`--truncate_dim=N` keeps each embedding's first N dimensions (Matryoshka); `--prompt_name` puts one of the model's
prompts (`config_sentence_transformers.json`) before each passage (default: its `default_prompt_name`).
A sparse (SPLADE) encoder (a SparseEncoder folder or its conversion) writes `sparse.jsonl` instead, one
`{"id", "indices", "values"}` line per passage (the non-zero vocabulary weights, largest first; at most
`--max_active_dims`), and `sparse.json`.
"""

import os
import sys

from absl import app, flags

from bert_tf.apps import common_flags, errors, launch
from bert_tf.apps.common_flags import check_checkpoint_dir
from bert_tf.checkpoints import CheckpointError
from bert_tf.config import ConfigError
from bert_tf.embeddings import EmbedConfig, embed_file
from bert_tf.embeddings.prompts import check_truncate_dim, resolve_prompt

FLAGS = flags.FLAGS
# A flag for each field of EmbedConfig, with the field's help.
common_flags.define_config_flags(EmbedConfig, sys.modules[__name__])


def _validate_flags():
    """Checks every flag before any side effect; raises app.UsageError naming the bad one."""
    directory = check_checkpoint_dir("model_dir")
    model_dir = directory.path  # a Hub id's snapshot: never written into either
    _check_embedding_flags(directory)
    for name in ("input", "output"):
        if not FLAGS[name].value:
            raise app.UsageError(f"--{name} is required. Received: --{name}=None")
    if not os.path.isfile(FLAGS.input):
        raise app.UsageError(f"--input is not a file. Received: --input={FLAGS.input}")
    if os.path.exists(FLAGS.output) and not os.path.isdir(FLAGS.output):
        raise app.UsageError(f"--output exists and is not a directory. Received: --output={FLAGS.output}")
    if os.path.abspath(FLAGS.output) == os.path.abspath(model_dir):
        raise app.UsageError(f"--output must differ from --model_dir. Received: --output={FLAGS.output}")


def _check_embedding_flags(directory):
    """--prompt_name one of the model's prompts and --truncate_dim at most its embedding dimension: app.UsageError
    naming the flag and value otherwise (before any side effect)."""
    settings = directory.settings
    try:
        resolve_prompt(settings.get("prompts") or {}, prompt_name=FLAGS.prompt_name)
        check_truncate_dim(
            FLAGS.truncate_dim, directory.config.hidden_size * len(settings["pooling"]), source="--truncate_dim"
        )
    except ValueError as e:
        raise app.UsageError(f"--prompt_name: {e}" if "prompt" in str(e) else str(e)) from None


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected positional arguments. Received: {argv[1:]}")
    _validate_flags()

    def embed():
        config = common_flags.config_from_flags(EmbedConfig, sys.modules[__name__], exclude=())
        embed_file(**config.kwargs())

    code, _ = errors.run_command(
        "bert-tf-embed",
        embed,
        (CheckpointError, ConfigError, ValueError, FileExistsError, FileNotFoundError),
        kept=f"finished shards kept in {FLAGS.output}; run again to resume",
    )
    return code


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
