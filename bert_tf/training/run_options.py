"""The option groups the training runs share, each option declared once (`bert_tf.options.option`).

- `Optimization`: the optimizer, precision and compiled loop; the same in
  every training run (`PretrainConfig`, `FinetuneConfig`, `DistillConfig`).
- `Schedule`: steps, learning rate, warmup, checkpoints and seed, with
  fine-tuning's defaults (pretraining overrides some).
- `TaskData`: the data and evaluation of a task run (fine-tuning, task
  distillation); each task adds its own options (`Task.options`).
- `MaskedLMData`: a raw-text corpus masked for masked LM, with pretraining's
  defaults (general distillation overrides some).

Each option's help is its flag's help (`bert_tf.apps.common_flags` makes the
flags); `--name` in a help text is the flag of that option.
"""

import dataclasses

from bert_tf.data.pretraining import FORMATS, MASKINGS, MAX_MASKING_RATE, PACKINGS
from bert_tf.layers.dense_head import HEAD_INITIALIZERS
from bert_tf.options import option
from bert_tf.training.distribute import DTYPES
from bert_tf.training.optimization import OPTIMIZERS


@dataclasses.dataclass(kw_only=True)
class Optimization:
    """The optimizer, precision and compiled loop of a training run."""

    global_batch_size: int = option(32, "Examples per step over all replicas.", lower_bound=1)
    optimizer: str = option("adamw", "Optimizer.", enum=OPTIMIZERS)
    weight_decay: float = option(0.01, "Decoupled weight decay (not on LayerNorm or biases).", lower_bound=0.0)
    clip_norm: float = option(1.0, "Global gradient-norm clip; 0 disables.", lower_bound=0.0)
    dtype: str = option(
        "float32",
        "Compute dtype (mixed precision; float16 adds dynamic loss scaling). auto: the dtype this machine's kind "
        "measured fastest: bfloat16 on AMX or AMD AVX512_BF16 CPUs and GPUs of compute capability 8.0+, else float32.",
        enum=DTYPES,
    )
    # None: this machine's training path (`bert_tf.layers.execution_path`)
    jit_compile: bool = option(
        None,
        "XLA-compile the forward and backward pass. Unset: this CPU's fastest path "
        "(bert_tf.layers.execution_path; BERT_TF_PATH=ops|xla overrides).",
    )
    steps_per_loop: int = option(
        50,
        "Steps per compiled loop call at most (between progress updates); calls are shorter when steps are slow, "
        "so progress shows at least every 15 s.",
        lower_bound=1,
    )


@dataclasses.dataclass(kw_only=True)
class Schedule:
    """How long a run trains, its learning rate, its checkpoints and its seed (fine-tuning's defaults)."""

    train_steps: int = option(0, "Optimizer steps; 0 uses --epochs.", lower_bound=0)  # > 0 overrides epochs
    learning_rate: float = option(5e-5, "Peak learning rate.", lower_bound=0.0)
    warmup_proportion: float = option(
        0.1, "Share of the steps with linear warmup; then linear decay to zero.", lower_bound=0.0, upper_bound=1.0
    )
    # 0: at each evaluation (evals_per_epoch)
    checkpoint_steps: int = option(0, "Steps between training checkpoints (0: at each evaluation).", lower_bound=0)
    keep_checkpoints: int = option(
        1, "Training checkpoints kept (for resuming; the best model is kept apart in --model_dir).", lower_bound=1
    )
    seed: int = option(0, "Seed for initialization, shuffling and dropout.")


@dataclasses.dataclass(kw_only=True)
class TaskData:
    """The data, model and evaluation options of a task run (fine-tuning, task distillation)."""

    train_file: str = option(help="Training data file, or tfds:NAME[:SPLIT].")
    eval_file: str = option(None, "Evaluation data file, or tfds:NAME[:SPLIT] (default split: validation).")
    max_seq_length: int = option(128, "Tokens per example (window for NER and QA).", lower_bound=8)
    epochs: float = option(3.0, "Training epochs (ignored when --train_steps is set).", lower_bound=0.0)
    max_train_examples: int = option(  # > 0: a seeded random subset of the training data
        0, "Train on a seeded random subset of this many examples (0: all).", lower_bound=0
    )
    dropout: float = option(  # None keeps the checkpoint's config
        None, "Encoder dropout (default: the checkpoint's config).", lower_bound=0.0, upper_bound=1.0
    )
    head_initializer: str = option(  # None: the task's default (`Task.head_initializer`)
        None,
        "The new task head's kernel: glorot_uniform (Keras'), or bert (truncated normal, the encoder's "
        "initializer_range). Default: the task's (glorot_uniform for the built-in tasks).",
        enum=HEAD_INITIALIZERS,
    )
    evals_per_epoch: int = option(1, "Evaluations (and checkpoints) per epoch.", lower_bound=1)
    eval_batch_size: int = option(64, "Batch size of evaluation.", lower_bound=1)
    tfds_data_dir: str = option(None, "TensorFlow Datasets data directory for tfds: inputs.")
    # Literal "[MASK]", "[SEP]", ... in the data: True reads them as text, False as their single ids; None: as the
    # init directory says (bert_tf.json; Hugging Face and TF1 checkpoints: false, Hugging Face's default).
    split_special_tokens: bool = option(
        None,
        "Read [MASK], [SEP], ... written in the data as text (true) or as their single ids (false); default: as the "
        "--init directory's bert_tf.json says (Hugging Face and TF1 checkpoints: false, as Hugging Face's "
        "tokenizers). Recorded in the model directory's bert_tf.json, which the export follows.",
    )


@dataclasses.dataclass(kw_only=True)
class MaskedLMData:
    """A raw-text corpus cut into examples and masked for masked LM (pretraining's defaults; bert_tf.data.pretraining
    documents each mode). Every 20th group of documents is held out for evaluation."""

    corpus: list = option(  # files or globs; empty: the offline default corpus
        default_factory=list, help="Text files or globs (comma-separated). Empty: the offline default corpus."
    )
    corpus_format: str = option(
        "lines",
        "lines: one sentence per line, blank line between documents; paragraphs: one document per line.",
        enum=FORMATS,
    )
    group_size: int = option(
        16, "Documents per pair-building group; every 20th group is held out for evaluation.", lower_bound=2
    )
    shuffle_buffer: int = option(  # filled before the first step; 1: none
        10_000,
        "Training examples shuffled together, filled before the first step (default 10000; 1: no shuffling).",
        lower_bound=1,
    )
    # "pairs" (BERT), "full_sentences" / "doc_sentences" (RoBERTa; sentence objective none)
    packing: str = option(
        "pairs",
        "How examples are cut: pairs (two segments, BERT/ALBERT; default), full_sentences (contiguous sentences "
        "filling the sequence across document ends, a separator between documents; RoBERTa's FULL-SENTENCES), "
        "doc_sentences (the same, stopping at document ends; RoBERTa's DOC-SENTENCES). The sentence packings need "
        "--sentence_objective=none.",
        enum=PACKINGS,
    )
    masking: str = option(  # "token" (BERT), "whole_word", "span" (SpanBERT); None: from `whole_word_masking`
        None,
        "Which tokens are masked: token (single pieces, BERT), whole_word (all pieces of a word, BERT's whole-word "
        "masking), span (contiguous whole words of geometric length, SpanBERT: Joshi et al. 2020). Default: token, "
        "or whole_word with --whole_word_masking.",
        enum=MASKINGS,
    )
    masking_rate: float = option(  # up to MAX_MASKING_RATE
        0.15,
        f"Share of tokens masked (default 0.15, BERT's; up to {MAX_MASKING_RATE}: MosaicBERT and ModernBERT use 0.3).",
    )
    span_geometric_p: float = option(  # SpanBERT: 0.2
        0.2,
        "--masking=span: span lengths in words follow a geometric distribution with this p (default 0.2, SpanBERT's).",
    )
    max_span_length: int = option(  # SpanBERT: 10
        10, "--masking=span: span lengths are clipped at this many words (default 10, SpanBERT's).", lower_bound=1
    )
    max_predictions_per_seq: int = option(  # None: default_max_predictions(masking_rate, max_seq_length)
        None,
        "Masked positions per example (default: ceil(--masking_rate x --max_seq_length), 20 at 0.15 x 128 as BERT).",
        lower_bound=1,
    )
    eval_steps: int = option(20, "Held-out batches per evaluation (0: none).", lower_bound=0)
    eval_interval: int = option(500, "Steps between evaluations.", lower_bound=1)
