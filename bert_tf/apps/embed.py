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

`--runner=NAME` runs the same embedding as an Apache Beam pipeline (`bert_tf.beam`, the `[beam]` extra) on that
runner; everything after `--` is Beam's pipeline options:

    bert-tf-embed --model_dir=models/minilm --input=corpus.txt --output=corpus_embeddings \\
        --runner=DirectRunner -- --direct_num_workers=2 --direct_running_mode=multi_processing

It also reads Parquet (`--text_column`, `--id_column`) and takes an exported embedding SavedModel as `--model_dir`;
it writes Parquet (default) or TFRecord shards and `embeddings.json`, which `bert_tf.embeddings.read_embeddings` and
`bert-tf-export --search_embeddings` read. Without `--runner` the run is local, as above.
"""

import os
import sys

from absl import app, flags

from bert_tf.apps import common_flags, errors, launch
from bert_tf.apps.common_flags import check_checkpoint_dir
from bert_tf.checkpoints import CheckpointError
from bert_tf.checkpoints.readers import is_saved_model
from bert_tf.config import ConfigError
from bert_tf.embeddings import EmbedConfig, embed_file
from bert_tf.embeddings.prompts import check_truncate_dim, resolve_prompt

FLAGS = flags.FLAGS
# A flag for each field of EmbedConfig, with the field's help.
common_flags.define_config_flags(EmbedConfig, sys.modules[__name__])
# Local-run options a Beam run does not have, with their defaults.
LOCAL_ONLY = {"quantize": "none", "calibration_embeddings": None, "max_active_dims": None, "max_shards": None}


def _validate_beam_flags():
    """A Beam run's flags (the pipeline checks the input and output, which may be remote): app.UsageError naming
    a local-only option, an output format Beam does not write, or an output equal to the model."""
    for name, default in LOCAL_ONLY.items():
        if FLAGS[name].value != default:
            raise app.UsageError(
                f"--{name} is a local run's option, not --runner's. Received: --{name}={FLAGS[name].value}"
            )
    if FLAGS["output_format"].present and FLAGS.output_format == "npy":
        raise app.UsageError(
            "--runner writes --output_format=parquet or tfrecord shards. Received: --output_format=npy"
        )
    if not is_saved_model(FLAGS.model_dir):
        _check_embedding_flags(check_checkpoint_dir("model_dir"))
    for name in ("input", "output"):
        if not FLAGS[name].value:
            raise app.UsageError(f"--{name} is required. Received: --{name}=None")
    if os.path.abspath(FLAGS.output) == os.path.abspath(FLAGS.model_dir):
        raise app.UsageError(f"--output must differ from --model_dir. Received: --output={FLAGS.output}")


def _validate_flags():
    """Checks every flag before any side effect; raises app.UsageError naming the bad one."""
    if FLAGS.output_format == "parquet":
        raise app.UsageError(
            "--output_format=parquet is a Beam run's (--runner=...). Received: --output_format=parquet"
        )
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


def _embed_on_beam(pipeline_args):
    """`bert_tf.beam.embed_corpus` with the flags' settings; its errors are one line."""
    _validate_beam_flags()
    try:
        from bert_tf import beam
    except ImportError as e:
        raise app.UsageError(f"--runner={FLAGS.runner}: {e}") from None
    names = ["text_column", "id_column", "file_format", "batch_size", "max_seq_length", "long_text", "window_stride"]
    names += ["max_windows", "truncate_dim", "prompt_name", "shard_size", "overwrite"]
    values = {name: FLAGS[name].value for name in names}
    output_format = FLAGS.output_format if FLAGS["output_format"].present else "parquet"

    def embed():
        beam.embed_corpus(
            FLAGS.model_dir,
            FLAGS.input,
            FLAGS.output,
            output_format=output_format,
            pipeline_args=pipeline_args,
            runner=FLAGS.runner,
            **values,
        )

    code, _ = errors.run_command(
        "bert-tf-embed", embed, (CheckpointError, ConfigError, ValueError), kept=f"rerun to replace {FLAGS.output}"
    )
    return code


def main(argv):
    if FLAGS.runner is not None:
        return _embed_on_beam(argv[1:])
    if len(argv) > 1:
        raise app.UsageError(
            f"Unexpected positional arguments (Beam pipeline options after -- need --runner). Received: {argv[1:]}"
        )
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
