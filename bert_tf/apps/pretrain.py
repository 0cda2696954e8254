"""bert-tf-pretrain: pretrain BERT (masked LM + NSP) from raw text, under any tf.distribute strategy.

    bert-tf-pretrain --model_dir=runs/mini --corpus='corpus/*.txt' --model=mini --train_steps=10000

--model_type=distilbert|electra|roberta|albert pretrains that family's encoder with
masked LM alone (no NSP head in their Hugging Face models).

Without --corpus it trains on an offline default corpus (Python's own
documentation); without --vocab it builds a vocabulary from the corpus.
Re-running the same command continues from the newest checkpoint.
"""

import sys

from absl import app, flags

from bert_tf.apps import common_flags, errors, launch
from bert_tf.config import MODEL_TYPES, PRESETS
from bert_tf.data.pretraining import FORMATS
from bert_tf.training import (
    NonFiniteLossError,
    PretrainConfig,
    ResumeError,
    TrainingInterrupted,
    WorkerLostError,
    pretrain,
)
from bert_tf.training.pretraining import FILL_MASK_SENTENCES

FLAGS = flags.FLAGS
common_flags.define_training_flags()
flags.adopt_module_key_flags(common_flags)
flags.DEFINE_list("corpus", [], "Text files or globs (comma-separated). Empty: the offline default corpus.")
flags.DEFINE_enum(
    "corpus_format",
    "lines",
    FORMATS,
    "lines: one sentence per line, blank line between documents; paragraphs: one document per line.",
)
flags.DEFINE_integer(
    "group_size", 16, "Documents per pair-building group; every 20th group is held out for evaluation.", lower_bound=2
)
flags.DEFINE_string(
    "vocab",
    None,
    "vocab.txt (--model_type=roberta: a byte-level BPE vocab.json, merges.txt beside it; any model type: a "
    "SentencePiece .model, or a directory holding spiece.model/spm.model, e.g. from bert-tf-vocab --kind=unigram); "
    "a vocabulary of the model type's kind is built from the corpus into model_dir when absent.",
)
flags.DEFINE_integer("vocab_size", 8000, "Size of a vocabulary built on the fly.", lower_bound=6)
flags.DEFINE_bool("lowercase", True, "Uncased tokenization.")
# allow_override: finetune defines it with its own default (None: the --init directory's).
flags.DEFINE_bool(
    "split_special_tokens",
    False,
    "Read [MASK], [SEP], ... written in the corpus as text ([, mask, ]) instead of their single ids (kept whole by "
    "default, as Hugging Face's tokenizers do); recorded in the model directory's bert_tf.json.",
    allow_override=True,
)
flags.DEFINE_string("model", "mini", f"Preset ({', '.join(PRESETS)}) or a bert_config.json path.")
flags.DEFINE_enum(
    "model_type",
    "bert",
    MODEL_TYPES,
    "The architecture a preset becomes: roberta (one segment, positions from 2, LayerNorm 1e-5), distilbert "
    "(no segments), electra (--embedding_size), albert (--embedding_size, one shared layer, gelu_new). "
    "A bert_config.json's own model_type must agree.",
)
flags.DEFINE_integer(
    "embedding_size",
    None,
    "ELECTRA's and ALBERT's embedding width, projected to the hidden size (default: ELECTRA hidden size / 2, as "
    "ELECTRA-small's 128; ALBERT min(128, hidden size), as ALBERT-base's).",
    lower_bound=1,
)
# allow_override: finetune and export define these names with their own help or default (a process importing
# several apps keeps the last definition; each bert-tf-* command imports only its own app).
flags.DEFINE_string("model_dir", None, "Checkpoints, logs and the final model directory go here.", allow_override=True)
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example.", lower_bound=8, allow_override=True)
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per example.", lower_bound=1)
flags.DEFINE_float("masking_rate", 0.15, "Share of tokens masked.")
flags.DEFINE_bool("whole_word_masking", False, "Mask all pieces of a word together.")
flags.DEFINE_bool(
    "nsp",
    None,
    "Next-sentence prediction (default: on for --model_type=bert; the other families have no NSP head).",
)
flags.DEFINE_integer(
    "train_steps", 1000, "Total optimizer steps.", lower_bound=1, allow_override=True
)  # finetune: 0 (use --epochs)
flags.DEFINE_float("learning_rate", 1e-4, "Peak learning rate.", lower_bound=0.0, allow_override=True)  # finetune: 5e-5
flags.DEFINE_integer(
    "warmup_steps",
    None,
    "Linear warmup steps, then linear decay to zero (default: --warmup_proportion).",
    lower_bound=0,
)
flags.DEFINE_float(
    "warmup_proportion",
    0.1,
    "Share of --train_steps with linear warmup when --warmup_steps is not set (BERT's own run: 0.01).",
    lower_bound=0.0,
    upper_bound=1.0,
)
flags.DEFINE_integer("grad_accum_steps", 1, "Micro-batches per step.", lower_bound=1)
# allow_override: finetune defines both with its own defaults.
flags.DEFINE_integer("checkpoint_steps", 500, "Steps between checkpoints.", lower_bound=1, allow_override=True)
flags.DEFINE_integer("keep_checkpoints", 3, "Checkpoints kept.", lower_bound=1, allow_override=True)
flags.DEFINE_integer("eval_steps", 20, "Held-out batches per evaluation (0: none).", lower_bound=0)
flags.DEFINE_integer("eval_interval", 500, "Steps between evaluations.", lower_bound=1)
flags.DEFINE_integer(
    "nonfinite_retries",
    0,
    "On a NaN/inf loss: restore the last checkpoint and skip the batches this many times before stopping.",
    lower_bound=0,
)
flags.DEFINE_integer("seed", 0, "Seed for initialization, data and masking.", allow_override=True)
flags.DEFINE_list(
    "fill_mask",
    list(FILL_MASK_SENTENCES),
    "Sentences with [MASK] to complete with the trained model at the end.",
)


def _config():
    """The run's `PretrainConfig` from the flags (each flag is the field of the same name); checked before any
    side effect."""
    try:
        config = common_flags.config_from_flags(PretrainConfig, sys.modules[__name__])
    except ValueError as e:  # ConfigError: names the field (= the flag) and its value
        raise app.UsageError(str(e)) from None
    common_flags.validate_training_flags()
    return config


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    config = _config()
    strategy = common_flags.training_strategy()
    try:
        pretrain(config, strategy=strategy)
    except TrainingInterrupted as e:  # SIGTERM/SIGINT: saved at the current step
        print(f"bert-tf-pretrain: error: {e}", file=sys.stderr)
        return e.exit_code
    except (ResumeError, NonFiniteLossError, WorkerLostError, ValueError) as e:
        print(f"bert-tf-pretrain: error: {e}", file=sys.stderr)
        return 1
    except errors.STORAGE_ERRORS as e:  # a read-only, full or missing disk
        print(errors.storage_error("bert-tf-pretrain", e, errors.kept_checkpoints(config.model_dir)), file=sys.stderr)
        return 1
    return 0


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
