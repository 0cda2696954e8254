"""bert-tf-pretrain: pretrain BERT and its family from raw text, under any tf.distribute strategy.

    bert-tf-pretrain --model_dir=runs/mini --corpus='corpus/*.txt' --model=mini --train_steps=10000

--model_type=distilbert|electra|roberta|albert|deberta-v2 pretrains that family's encoder
(masked LM alone, except ALBERT's sentence-order prediction: the others have no
sentence head in their Hugging Face models). The recipe flags choose the paper:
--sentence_objective=nsp|sop|none (BERT, ALBERT, RoBERTa), --packing=pairs|
full_sentences|doc_sentences (BERT, RoBERTa), --masking=token|whole_word|span
and --masking_rate (BERT, SpanBERT, up to 0.5 as MosaicBERT/ModernBERT's 0.3).
A recipe file sets several at once, any flag after it overriding it:

    bert-tf-pretrain --flagfile=configs/recipes/roberta_base.cfg --model_dir=runs/rb --train_steps=2000

--init=DIR continues pretraining a checkpoint (BioBERT-style domain adaptation,
BERT's 512-token second phase): its config, weights, heads and tokenizer.

Without --corpus it trains on an offline default corpus (Python's own
documentation); without --vocab it builds a vocabulary from the corpus.
Re-running the same command continues from the newest checkpoint.
"""

import sys

from absl import app, flags

from bert_tf.apps import common_flags, errors, launch
from bert_tf.config import MODEL_TYPES, PRESETS
from bert_tf.data.pretraining import FORMATS, MASKINGS, MAX_MASKING_RATE, PACKINGS, SENTENCE_OBJECTIVES
from bert_tf.training import (
    PretrainConfig,
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
flags.DEFINE_integer(
    "shuffle_buffer",
    10_000,
    "Training examples shuffled together, filled before the first step (default 10000; 1: no shuffling).",
    lower_bound=1,
)
flags.DEFINE_string(
    "vocab",
    None,
    "vocab.txt (--model_type=roberta: a byte-level BPE vocab.json, merges.txt beside it; any model type: a "
    "SentencePiece .model, or a directory holding spiece.model/spm.model, e.g. from bert-tf-vocab --kind=unigram); "
    "a vocabulary of the model type's kind is built from the corpus into model_dir when absent. Not with --init.",
)
flags.DEFINE_integer(
    "vocab_size", None, "Size of a vocabulary built on the fly (default: 8000). Not with --init.", lower_bound=6
)
flags.DEFINE_bool(
    "lowercase", None, "Uncased tokenization (default: true). Not with --init: the checkpoint's tokenizer decides."
)
# allow_override: finetune defines it with its own default (None: the --init directory's).
flags.DEFINE_bool(
    "split_special_tokens",
    False,
    "Read [MASK], [SEP], ... written in the corpus as text ([, mask, ]) instead of their single ids (kept whole by "
    "default, as Hugging Face's tokenizers do); recorded in the model directory's bert_tf.json.",
    allow_override=True,
)
flags.DEFINE_string(
    "model", None, f"Preset ({', '.join(PRESETS)}) or a bert_config.json path (default: mini). Not with --init."
)
flags.DEFINE_enum(
    "model_type",
    None,
    MODEL_TYPES,
    "The architecture a preset becomes (default: bert; with --init the checkpoint's, and if given it must agree): "
    "roberta (one segment, positions from 2, LayerNorm 1e-5), distilbert (no segments), electra "
    "(--embedding_size), albert (--embedding_size, one shared layer, gelu_new). A bert_config.json's own "
    "model_type must agree.",
)
flags.DEFINE_integer(
    "embedding_size",
    None,
    "ELECTRA's and ALBERT's embedding width, projected to the hidden size (default: ELECTRA hidden size / 2, as "
    "ELECTRA-small's 128; ALBERT min(128, hidden size), as ALBERT-base's). Not with --init.",
    lower_bound=1,
)
# allow_override: finetune defines --init with its own help.
flags.DEFINE_string(
    "init",
    None,
    "Continue pretraining this checkpoint (BioBERT's domain adaptation; BERT's 512-token second phase, Devlin et "
    "al. 2019): a bert_tf model directory, a Hugging Face directory (...Model, ...ForPreTraining, ...ForMaskedLM) "
    "or an original TF1 checkpoint. Its config, family, weights, tokenizer and its masked-LM and sentence heads "
    "(when of --sentence_objective's kind: BERT's are NSP, ALBERT's SOP) start the run; the heads it lacks are "
    "initialised (the log says which). --model, --vocab, --vocab_size, --embedding_size and --lowercase are refused "
    "with it; --model_type must agree. --max_seq_length may exceed the length it was trained at, up to its "
    "max_position_embeddings. Read only when --model_dir holds no checkpoint: a resumed run ignores it.",
    allow_override=True,
)
# allow_override: finetune and export define these names with their own help or default (a process importing
# several apps keeps the last definition; each bert-tf-* command imports only its own app).
flags.DEFINE_string("model_dir", None, "Checkpoints, logs and the final model directory go here.", allow_override=True)
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example.", lower_bound=8, allow_override=True)
# The recipe (bert_tf.data.pretraining documents each mode).
flags.DEFINE_enum(
    "sentence_objective",
    None,
    list(SENTENCE_OBJECTIVES),
    "The sentence-level objective beside masked LM: nsp (next-sentence prediction, BERT: Devlin et al. 2019), sop "
    "(sentence-order prediction, ALBERT: Lan et al. 2020; bert and albert only), none (RoBERTa: Liu et al. 2019). "
    "Default: the family's (nsp for bert, sop for albert, none for the others; none with a sentence --packing).",
)
flags.DEFINE_enum(
    "packing",
    "pairs",
    list(PACKINGS),
    "How examples are cut: pairs (two segments, BERT/ALBERT; default), full_sentences (contiguous sentences "
    "filling the sequence across document ends, a separator between documents; RoBERTa's FULL-SENTENCES), "
    "doc_sentences (the same, stopping at document ends; RoBERTa's DOC-SENTENCES). The sentence packings need "
    "--sentence_objective=none.",
)
flags.DEFINE_enum(
    "masking",
    None,
    list(MASKINGS),
    "Which tokens are masked: token (single pieces, BERT), whole_word (all pieces of a word, BERT's whole-word "
    "masking), span (contiguous whole words of geometric length, SpanBERT: Joshi et al. 2020). Default: token, or "
    "whole_word with --whole_word_masking.",
)
flags.DEFINE_float(
    "masking_rate",
    0.15,
    f"Share of tokens masked (default 0.15, BERT's; up to {MAX_MASKING_RATE}: MosaicBERT and ModernBERT use 0.3).",
)
flags.DEFINE_float(
    "span_geometric_p",
    0.2,
    "--masking=span: span lengths in words follow a geometric distribution with this p (default 0.2, SpanBERT's).",
)
flags.DEFINE_integer(
    "max_span_length",
    10,
    "--masking=span: span lengths are clipped at this many words (default 10, SpanBERT's).",
    lower_bound=1,
)
flags.DEFINE_integer(
    "max_predictions_per_seq",
    None,
    "Masked positions per example (default: ceil(--masking_rate x --max_seq_length), 20 at 0.15 x 128 as BERT).",
    lower_bound=1,
)
flags.DEFINE_bool("whole_word_masking", None, "Alias: --whole_word_masking is --masking=whole_word.")
flags.DEFINE_bool(
    "nsp",
    None,
    "Alias: --nsp is --sentence_objective=nsp, --nonsp --sentence_objective=none.",
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
    code, _ = errors.run_training("bert-tf-pretrain", lambda: pretrain(config, strategy=strategy), config.model_dir)
    return code


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
