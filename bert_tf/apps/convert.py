"""bert-tf-convert: convert a checkpoint to a bert_tf model directory or a Hugging Face directory.

    bert-tf-convert --input=PATH --output=DIR [--to=bert_tf|hf] [--overwrite] [--allow_pickle]
        [--allow_missing_vocab] [--strict]

`--input` is a Hugging Face directory of BERT, RoBERTa, DistilBERT, ELECTRA, ALBERT, DeBERTa-v2/v3 or ModernBERT
(the seven families of `bert_tf.config.MODEL_TYPES`),
an original Google TF1 checkpoint (directory or `model.ckpt-N` prefix), a
bert_tf model directory or a Hugging Face Hub id of any of these
(`--input=google/electra-small-discriminator`, `org/name@revision`: read from
huggingface_hub's cache, fetched first unless HF_HUB_OFFLINE=1); its format is
detected. The model it holds is
converted whole: the encoder, the masked-LM (and NSP) head, or a fine-tuned
classification, token-classification or question-answering head with its
label names, which `bert-tf-export` then serves. ELECTRA's pretraining pair
(a replaced-token detection run's directory, or a Hugging Face
`ElectraForPreTraining` with its `ElectraForMaskedLM` generator in
`generator/`) is converted as a pair: the discriminator with its head in
`--output`, the generator in `--output/generator`; a discriminator alone
keeps its head.
"""

import dataclasses
import os
import sys

from absl import app, flags

from bert_tf import checkpoints, tasks
from bert_tf.apps import common_flags, errors, launch
from bert_tf.checkpoints import CheckpointError
from bert_tf.config import ConfigError
from bert_tf.options import option

FLAGS = flags.FLAGS


@dataclasses.dataclass(kw_only=True)
class ConvertOptions:
    """A bert-tf-convert run: one flag per field, of the same name and default (`tasks.convert_checkpoint`'s
    arguments)."""

    input: str = option(
        None,
        "Checkpoint to convert: Hugging Face directory (BERT, RoBERTa, DistilBERT, ELECTRA, ALBERT, DeBERTa-v2/v3, "
        "task heads included), TF1 checkpoint directory or prefix, bert_tf model directory (format detected), or a "
        "Hugging Face Hub id (org/name[@revision]).",
    )
    output: str = option(None, "Directory to write; must be empty or absent unless --overwrite.")
    to: str = option(
        "bert_tf",
        "Output format: a bert_tf model directory (TF1-named checkpoint, readable by Google's original code) or a "
        "Hugging Face safetensors directory.",
        enum=checkpoints.CONVERT_FORMATS,
    )
    overwrite: bool = option(False, "Write into a non-empty --output directory.")
    allow_missing_vocab: bool = option(
        False,
        "Convert a checkpoint without tokenizer files (warns); fine-tuning and export then need them in --output.",
    )
    strict: bool = option(
        False,
        "Refuse a checkpoint without the pooler (masked-LM checkpoints, DistilBERT, ELECTRA) instead of "
        "initialising it fresh with a warning.",
    )
    allow_pickle: bool = option(
        False, "UNSAFE: read a Hugging Face pytorch_model.bin (pickle; needs torch). Only for files you trust."
    )


common_flags.define_config_flags(ConvertOptions, sys.modules[__name__])


def _validate_flags():
    """Checks every flag before any side effect; raises app.UsageError naming the bad one. Returns `--input`'s
    `checkpoints.ModelDirectory` (a directory, a TF1 checkpoint prefix or a Hugging Face Hub id: its format detected
    once, by `common_flags.check_checkpoint_dir`)."""
    if not FLAGS.input:
        raise app.UsageError("--input is required. Received: --input=None")
    source = common_flags.check_checkpoint_dir("input")
    if not FLAGS.output:
        raise app.UsageError("--output is required. Received: --output=None")
    if os.path.exists(FLAGS.output):
        if not os.path.isdir(FLAGS.output):
            raise app.UsageError(f"--output must be a directory. Received: --output={FLAGS.output}")
        if os.path.samefile(source.directory, FLAGS.output):  # an id's snapshot counts as its directory
            raise app.UsageError(f"--output must differ from --input. Received: --output={FLAGS.output}")
        if os.listdir(FLAGS.output) and not FLAGS.overwrite:
            raise app.UsageError(
                f"--output is not empty; pass --overwrite to write into it. Received: --output={FLAGS.output}"
            )
    return source


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected positional arguments. Received: {argv[1:]}")
    source = _validate_flags()
    code, converted = errors.run_command(
        "bert-tf-convert",
        lambda: tasks.convert_checkpoint(
            source,  # the directory (or an id's snapshot), read once
            FLAGS.output,
            FLAGS.to,
            allow_pickle=FLAGS.allow_pickle,
            allow_missing_vocab=FLAGS.allow_missing_vocab,
            strict=FLAGS.strict,
        ),
        (CheckpointError, ConfigError),
        kept=f"{FLAGS.output} may hold a partial conversion; {FLAGS.input} unchanged",
    )
    if code:
        return code
    fmt, count, kind = converted
    print(f"Converted {fmt} checkpoint {FLAGS.input} ({kind}, {count} tensors) to {FLAGS.to} at {FLAGS.output}")
    return 0


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
