"""Pretraining: raw text + a vocabulary + `BertPretrainer` + the distributed `TrainingLoop`.

One `PretrainConfig` describes a run (its fields are the flags of
`bert-tf-pretrain`); `pretrain(config)` does it:

1. the corpus: `corpus` files, or without them an offline default corpus
   (Python's own documentation) written to `model_dir/default_corpus.txt`;
2. the vocabulary: `vocab`, or one built from the corpus into
   `model_dir/vocab.txt` (kept, so a re-run uses the same one); its kind by
   `model_type` (`VOCAB_KIND_BY_MODEL_TYPE`): WordPiece, byte-level BPE
   (`vocab.json` + `merges.txt`), byte-level BPE with BERT's special tokens
   (ModernBERT's `tokenizer.json`) or SentencePiece unigram (`spiece.model`; a
   `.model` or a directory holding one as `vocab` of any model type);
3. the model: a preset (`bert_tf.config.PRESETS`) or a `bert_config.json`,
   with the vocabulary's size; `model_type` makes a preset a model of that
   family (`BertConfig.for_family`: RoBERTa's one segment and offset
   positions, DistilBERT's no segments, ELECTRA's and ALBERT's `embedding_size`);
   or, with `init`, the model, its weights and its tokenizer from a checkpoint
   (continued pretraining; see `PretrainConfig.init`);
4. the recipe: masked LM (`masking`: token, whole-word or SpanBERT's spans, at
   `masking_rate`) plus a sentence objective (`sentence_objective`: BERT's
   next-sentence or ALBERT's sentence-order prediction, or none as RoBERTa)
   on examples cut as `packing` says (segment pairs, or RoBERTa's
   full-sentence packings), with `TrainingLoop` under any strategy:
   tokenization, pair building and masking run in `tf.data`
   (`bert_tf.data.pretraining`); a re-run resumes from `model_dir/checkpoints`
   (refusing changed settings, `INCOMPATIBLE`, except ModernBERT's long-context
   phase: `max_seq_length` raised with `global_rope_theta`, recorded as
   `resume_changes`, see `resume_changes`); every 20th group of documents
   is held out for evaluation when the corpus has that many;
5. the model directory in `model_dir` (`bert_config.json`, `vocab.txt`,
   `bert_tf.json`, `bert_model.ckpt`), then the final metrics and the
   fill-mask predictions of `fill_mask` sentences.
"""

import dataclasses
import hashlib
import json
import os

import keras
import numpy as np
import tensorflow as tf

from bert_tf.checkpoints import (
    CheckpointError,
    ModelDirectory,
    generator_dir,
    infer_settings,
    init_pretrainer,
    load_config,
    load_tokenizer,
    read_settings,
    save_model_dir,
    write_settings,
    write_tokenizer_files,
)
from bert_tf.checkpoints.hub import HUB_REF_PATTERN, is_local, parse_hub_id
from bert_tf.checkpoints.tokenizer_files import (
    BPE_VOCAB_FILE,
    MERGES_FILE,
    SENTENCEPIECE_FILES,
    TOKENIZER_JSON,
    VOCAB_FILE,
    find_tokenizer,
    save_sentencepiece_tokenizer,
    sentencepiece_options,
)
from bert_tf.config import EMBEDDING_SIZE_TYPES, MODEL_TYPES, PRESETS, BertConfig, ConfigError
from bert_tf.data import service as tf_data_service
from bert_tf.data.default_corpus import write_default_corpus
from bert_tf.data.pretraining import (
    FORMATS,
    MASKINGS,
    MAX_MASKING_RATE,
    OBJECTIVES,
    PACKINGS,
    SENTENCE_OBJECTIVES,
    EmptyCorpusError,
    default_max_predictions,
    pretraining_dataset,
    resolve_objectives,
)
from bert_tf.models import RTD_MODEL_TYPES, BertPretrainer, ElectraPretrainer, build_encoder, encoder_class
from bert_tf.options import lower_bounds, option, override
from bert_tf.text import SPECIAL_TOKENS, BertTokenizer, SentencePieceTokenizer, packer_for
from bert_tf.text.vocab import build_bert_bpe_vocab, build_bpe_vocab, build_unigram_vocab, build_vocab, expand_files
from bert_tf.training.distribute import DTYPES, create_strategy, dtype_policy, is_chief, wait_for_chief
from bert_tf.training.optimization import OPTIMIZERS, run_optimizer
from bert_tf.training.run_options import MaskedLMData, Optimization, Schedule
from bert_tf.training.trainer import (
    INCOMPATIBLE,
    TRAINING_SETTINGS_FILE,
    LoopConfig,
    ResumeError,
    TrainingLoop,
    checkpoints_in,
    glob_characters_error,
    newest_step,
    read_training_settings,
)

DEFAULT_CORPUS_FILE = "default_corpus.txt"
FILL_MASK_SENTENCES = ("The [MASK] of the function is returned.", "This module provides [MASK] for files.")

# The sentence objective of each family when `sentence_objective` (and `nsp`) are not set: BERT's next-sentence
# prediction, ALBERT's sentence-order prediction; the other families have no sentence head in Hugging Face.
SENTENCE_OBJECTIVE_BY_MODEL_TYPE = {"bert": "nsp", "albert": "sop"}
# Fields that describe a model or vocabulary built here: with `init` the checkpoint has its own, so they are refused.
INIT_REFUSES = ("model", "vocab", "vocab_size", "embedding_size", "lowercase")
DEFAULT_MODEL = "mini"
DEFAULT_VOCAB_SIZE = 8000

# The families a preset can become: every one.
PRETRAIN_MODEL_TYPES = MODEL_TYPES
# Families whose Hugging Face tokenizers no vocabulary built here can be (fairseq's id layout, MPNet's specials): a
# model of theirs built from a preset would convert to a checkpoint its own tokenizer class cannot read. They train
# further from a published checkpoint (`init`); model_type -> (why, what to do instead).
INIT_ONLY_MODEL_TYPES = {
    "xlm-roberta": (
        "its tokenizer is SentencePiece in fairseq's id layout (<s> 0, <pad> 1, </s> 2, <unk> 3, <mask> last), which "
        "bert-tf-vocab does not build",
        "continue a published checkpoint with --init (e.g. --init=FacebookAI/xlm-roberta-base), or start a new "
        "model with --model_type=roberta",
    ),
    "mpnet": (
        "its tokenizer is WordPiece with MPNet's <s>/<pad>/</s>/<unk> first and <mask> last, which bert-tf-vocab "
        "does not build",
        "continue a published checkpoint with --init (e.g. --init=microsoft/mpnet-base), or start a new model with "
        "--model_type=bert",
    ),
}
# ModernBERT's positions are rotary (no table to outgrow): a ModernBERT made from a preset may take sequences up to
# ModernBERT's 8,192, so a long-context phase can raise `max_seq_length` on resume without changing the model.
MODERNBERT_MAX_POSITIONS = 8192
# What a resume of a ModernBERT run may change (its long-context phase, Warner et al. 2024: 1,024 -> 8,192 tokens
# with the global layers' RoPE theta raised from 10,000 to 160,000): the sequence length and the global RoPE theta
# of `model`; with the length, the masked positions per sequence and the batch (the data starts over at the new
# length, so no saved data position holds them). Anything else in `INCOMPATIBLE` is still refused.
PHASE_SETTINGS = ("max_seq_length", "max_predictions_per_seq", "global_batch_size")
PHASE_MODEL_FIELDS = ("global_rope_theta",)
# The settings of PHASE_SETTINGS that change only with `max_seq_length`.
_WITH_LENGTH_ONLY = ("max_predictions_per_seq", "global_batch_size")
# The flag that sets each model field a resume may not change (the others come from --model).
_MODEL_FIELD_FLAGS = {"vocab_size": "vocab_size", "global_rope_theta": "global_rope_theta"}


def has_checkpoint(model_dir):
    """True when `model_dir` holds a run's checkpoints (or their state file): a run there resumes, never starts."""
    directory = os.path.join(model_dir, "checkpoints")
    return os.path.exists(os.path.join(directory, "checkpoint")) or bool(checkpoints_in(directory))


@dataclasses.dataclass(kw_only=True)
class PretrainConfig(MaskedLMData, Schedule, Optimization):
    """A pretraining run; each field is the `bert-tf-pretrain` flag of the same name, with its default."""

    model_dir: str = option(help="Checkpoints, logs and the final model directory go here.")
    # Data (the corpus and its masking: `MaskedLMData`)
    # vocab.txt (roberta: a byte-level BPE vocab.json, merges.txt beside it; any: a SentencePiece .model or a
    # directory with spiece.model/spm.model); None: built here, of the kind VOCAB_KIND_BY_MODEL_TYPE says
    vocab: str = option(
        None,
        "vocab.txt (--model_type=roberta: a byte-level BPE vocab.json, merges.txt beside it; --model_type="
        "modernbert: a byte-level BPE tokenizer.json; any model type: a SentencePiece .model; or a directory holding "
        "one of them, e.g. from bert-tf-vocab); a vocabulary of the model type's kind is built from the corpus into "
        "model_dir when absent. Not with --init.",
    )
    vocab_size: int = option(  # of a vocabulary built here; None: DEFAULT_VOCAB_SIZE (8000)
        None, "Size of a vocabulary built on the fly (default: 8000). Not with --init.", lower_bound=6
    )
    lowercase: bool = option(  # None: True (uncased); with `init`, the checkpoint's tokenizer decides
        None, "Uncased tokenization (default: true). Not with --init: the checkpoint's tokenizer decides."
    )
    # False: "[MASK]", "[SEP]", ... written in the corpus are their single ids (never masked), as Hugging Face's
    # tokenizers read them; True: they are text ("[", "mask", "]"), as google-research/bert's. bert_tf.json keeps it.
    split_special_tokens: bool = option(
        False,
        "Read [MASK], [SEP], ... written in the corpus as text ([, mask, ]) instead of their single ids (kept whole "
        "by default, as Hugging Face's tokenizers do); recorded in the model directory's bert_tf.json.",
    )
    # Model
    model: str = option(  # a preset (bert_tf.config.PRESETS) or a bert_config.json path; None: DEFAULT_MODEL ("mini")
        None, f"Preset ({', '.join(PRESETS)}) or a bert_config.json path (default: mini). Not with --init."
    )
    # bert_tf.config.MODEL_TYPES: the family a preset becomes (a config file's must agree); None: "bert", or with
    # `init` the checkpoint's (given with `init`, it must agree)
    model_type: str = option(
        None,
        "The architecture a preset becomes (default: bert; with --init the checkpoint's, and if given it must "
        "agree): roberta (one segment, positions from 2, LayerNorm 1e-5), distilbert (no segments), electra "
        "(--embedding_size), albert (--embedding_size, one shared layer, gelu_new), deberta-v2, modernbert (rotary "
        "positions up to 8192, global and sliding-window layers, GeGLU; --global_rope_theta), nomic_bert (rotary "
        "positions, SwiGLU), gte (rotary positions, gated GELU, no segments); xlm-roberta and mpnet only with --init "
        "(their tokenizers are not built here). A bert_config.json's own model_type must agree.",
        enum=PRETRAIN_MODEL_TYPES,
    )
    # ELECTRA's and ALBERT's embedding width; None: ELECTRA hidden_size // 2 (ELECTRA-small: 128 over 256),
    # ALBERT min(128, hidden_size) (ALBERT-base: 128 over 768)
    embedding_size: int = option(
        None,
        "ELECTRA's and ALBERT's embedding width, projected to the hidden size (default: ELECTRA hidden size / 2, "
        "as ELECTRA-small's 128; ALBERT min(128, hidden size), as ALBERT-base's). Not with --init.",
        lower_bound=1,
    )
    # Continued pretraining (BioBERT, BERT's 512-token second phase): a checkpoint load_encoder reads (bert_tf model
    # directory, Hugging Face directory incl. ...ForPreTraining/...ForMaskedLM, TF1). Its config, family, weights
    # (with the masked-LM and sentence heads it has, when of the run's objective) and tokenizer start the run;
    # `model`, `vocab`, `vocab_size`, `embedding_size` and `lowercase` are then refused. Read only when model_dir
    # holds no checkpoint: a resumed run ignores it (and needs it no more).
    init: str = option(
        None,
        "Continue pretraining this checkpoint (BioBERT's domain adaptation; BERT's 512-token second phase, Devlin "
        "et al. 2019): a bert_tf model directory, a Hugging Face directory (...Model, ...ForPreTraining, "
        "...ForMaskedLM), an original TF1 checkpoint or a Hugging Face Hub id (org/name[@revision]). Its config, family, weights, tokenizer and its masked-LM "
        "and sentence heads (when of --sentence_objective's kind: BERT's are NSP, ALBERT's SOP) start the run; the "
        "heads it lacks are initialised (the log says which). --model, --vocab, --vocab_size, --embedding_size and "
        "--lowercase are refused with it; --model_type must agree. --max_seq_length may exceed the length it was "
        "trained at, up to its max_position_embeddings. Read only when --model_dir holds no checkpoint: a resumed "
        "run ignores it.",
    )
    # RTD with `init`: the generator's checkpoint (a published ELECTRA generator beside its discriminator); None:
    # `init`/generator when it is one, else a new generator of the generator_* settings
    init_generator: str = option(
        None,
        "--objective=rtd with --init: the generator's checkpoint (e.g. google/electra-small-generator beside "
        "--init=google/electra-small-discriminator; any format --init takes). Default: the generator directory "
        "inside --init (what bert-tf-pretrain and bert-tf-convert --to=hf write), else a new generator sized by "
        "--generator_size. Read only when --model_dir holds no checkpoint.",
    )
    max_seq_length: int = option(  # up to the model's max_position_embeddings (with `init`, the checkpoint's)
        128,
        "Tokens per example. A ModernBERT run may raise it on resume (its long-context phase, with "
        "--global_rope_theta): recorded in training_settings.json and bert_tf.json.",
        lower_bound=8,
    )
    # ModernBERT only: the global-attention layers' RoPE base; None: the model's (a preset's 160000, as Hugging
    # Face's default; the recipe's short phase sets 10000), on resume the checkpoint's. Changing it on resume is the
    # long-context phase.
    global_rope_theta: float = option(
        None,
        "ModernBERT: the RoPE theta (base) of the global-attention layers (default: the model's, 160000 for a "
        "preset; on resume the checkpoint's). ModernBERT trained at 1024 tokens with 10000, then raised it to 160000 "
        "with --max_seq_length=8192 (Warner et al. 2024): a resume may change both, recorded as the run's "
        "long-context phase.",
    )
    # The recipe (bert_tf.data.pretraining; `MaskedLMData` holds packing and masking): None-valued fields follow
    # the family or the legacy switches.
    # "nsp" (BERT), "sop" (ALBERT), "none" (RoBERTa); None: `nsp` if set, else the family's
    # (SENTENCE_OBJECTIVE_BY_MODEL_TYPE; "none" with a sentence packing)
    sentence_objective: str = option(
        None,
        "The sentence-level objective beside masked LM: nsp (next-sentence prediction, BERT: Devlin et al. 2019), "
        "sop (sentence-order prediction, ALBERT: Lan et al. 2020; bert and albert only), none (RoBERTa: Liu et al. "
        "2019). Default: the family's (nsp for bert, sop for albert, none for the others; none with a sentence "
        "--packing).",
        enum=SENTENCE_OBJECTIVES,
    )
    # "mlm": masked LM (with the sentence objective); "rtd": ELECTRA's replaced-token detection (electra only)
    objective: str = option(
        "mlm",
        "The token-level objective: mlm (masked LM, BERT and the family), rtd (ELECTRA's replaced-token "
        "detection, Clark et al. 2020: a small generator fills the masks with sampled tokens and the model, the "
        "discriminator, judges every token as original or replaced; --model_type=electra).",
        enum=OBJECTIVES,
    )
    discriminator_weight: float = option(  # RTD's lambda: total loss = generator MLM + lambda * discriminator
        50.0,
        "--objective=rtd: the discriminator loss's weight against the generator's masked-LM loss (ELECTRA's "
        "lambda, 50).",
    )
    generator_size: float = option(  # RTD: the generator's hidden size as a share of the discriminator's
        0.25,
        "--objective=rtd: the generator's hidden size as a fraction of the discriminator's, in (0, 1] (ELECTRA's "
        "1/4); its heads are one per 64 dimensions, its feed-forward 4x its width, its layers the "
        "discriminator's.",
    )
    generator_hidden_size: int = option(
        None, "--objective=rtd: the generator's hidden size, instead of --generator_size.", lower_bound=1
    )
    generator_num_layers: int = option(
        None, "--objective=rtd: the generator's layers (default: the discriminator's).", lower_bound=1
    )
    whole_word_masking: bool = option(  # legacy alias: True is masking="whole_word", False "token"
        None, "Alias: --whole_word_masking is --masking=whole_word."
    )
    nsp: bool = option(  # legacy alias: True is sentence_objective="nsp", False "none"
        None, "Alias: --nsp is --sentence_objective=nsp, --nonsp --sentence_objective=none."
    )
    # Optimization (and `Optimization`, `Schedule`)
    train_steps: int = override(Schedule, "train_steps", default=1000, help="Total optimizer steps.", lower_bound=1)
    learning_rate: float = override(Schedule, "learning_rate", default=1e-4)  # after linear warmup; then decay
    warmup_steps: int = option(  # linear warmup steps; None: warmup_proportion of train_steps
        None, "Linear warmup steps, then linear decay to zero (default: --warmup_proportion).", lower_bound=0
    )
    warmup_proportion: float = override(  # share of train_steps warming up when warmup_steps is None
        Schedule,
        "warmup_proportion",
        help="Share of --train_steps with linear warmup when --warmup_steps is not set (BERT's own run: 0.01).",
    )
    grad_accum_steps: int = option(1, "Micro-batches per step.", lower_bound=1)
    # Loop
    checkpoint_steps: int = override(
        Schedule, "checkpoint_steps", default=500, help="Steps between checkpoints.", lower_bound=1
    )
    keep_checkpoints: int = override(Schedule, "keep_checkpoints", default=3, help="Checkpoints kept.")
    nonfinite_retries: int = option(  # on a NaN/inf loss: restore the last checkpoint and skip the batches
        0,
        "On a NaN/inf loss: restore the last checkpoint and skip the batches this many times before stopping.",
        lower_bound=0,
    )
    # The training input pipeline on tf.data service (bert_tf.data.service); None: on this host
    data_service: str = option(
        None,
        "Run the training input pipeline (reading, tokenization, pairs, masking) on the tf.data service whose "
        "dispatcher is at grpc://HOST:PORT (started with bert-tf-data-service; docs/scaling-out.md). Held-out "
        "evaluation stays on this host.",
    )
    data_service_mode: str = option(
        "exact",
        "--data_service: exact (one service worker runs each trainer worker's whole pipeline: the batches and a "
        "resume are exactly those of a run without the service) or dynamic (every service worker takes epochs of "
        "the corpus as it is free: the same examples in other batches; a resume continues the run's job, "
        "at-most-once, not exact).",
        enum=tf_data_service.MODES,
    )
    # initialization (keras.utils.set_random_seed), data order and masking
    seed: int = override(Schedule, "seed", help="Seed for initialization, data and masking.")
    fill_mask: list = option(  # completed at the end
        default_factory=lambda: list(FILL_MASK_SENTENCES),
        help="Sentences with [MASK] to complete with the trained model at the end.",
    )

    def __post_init__(self):
        if isinstance(self.init, ModelDirectory):  # already read by the caller: kept, not read again
            self.__dict__["_init_directory"] = (self.init.name, self.init)
            self.init = self.init.name  # its path, or the Hub id it was read by (what records and messages name)
        self.validate()

    def init_directory(self):
        """`init`'s `checkpoints.ModelDirectory` (a directory, a TF1 checkpoint prefix or a Hugging Face Hub id,
        resolved to its snapshot in huggingface_hub's cache), read once per config: its config, tokenizer files,
        weights and generator are all read through it. None without `init`; CheckpointError where it holds no
        checkpoint or an id is not in the cache offline."""
        if not self.init:
            return None
        cached = self.__dict__.get("_init_directory")
        if cached is None or cached[0] != self.init:  # `init` set again since: read the new one
            cached = (self.init, ModelDirectory.read(self.init))
            self.__dict__["_init_directory"] = cached
        return cached[1]

    def _init_missing(self):
        """Whether `init` names nothing to read: no path, TF1 checkpoint prefix or Hugging Face Hub id."""
        return not is_local(self.init) and parse_hub_id(self.init) is None

    def resumes(self):
        """True when `model_dir` holds checkpoints: the run continues them (and does not read `init`)."""
        return has_checkpoint(self.model_dir)

    def reads_init(self):
        """True when the run starts from `init`: it is set and `model_dir` holds no checkpoint yet."""
        return bool(self.init) and not self.resumes()

    def init_model_config(self):
        """The `BertConfig` of the run's model when `init` is set: the checkpoint's, or on resume the one recorded
        in training_settings.json (the init checkpoint need not exist any more); None without `init`."""
        if not self.init:
            return None
        if not self.reads_init():
            saved = read_training_settings(self.model_dir) or {}
            if isinstance(saved.get("model"), dict):
                return BertConfig.from_dict(saved["model"], source=os.path.join(self.model_dir, TRAINING_SETTINGS_FILE))
            if self._init_missing():
                raise ConfigError(
                    f"PretrainConfig: {self.model_dir} holds checkpoints but no {TRAINING_SETTINGS_FILE} recording "
                    f"the model, and `init` does not exist. Received: init={self.init!r}"
                )
        try:
            return load_config(self.init_directory())
        except (CheckpointError, ConfigError, OSError) as e:
            raise ConfigError(
                f"PretrainConfig: `init` is not a checkpoint load_encoder reads: {e} Received: init={self.init!r}"
            ) from None

    def run_model_type(self):
        """The run's family: `init`'s, else `model_type` (default "bert")."""
        init = self.init_model_config()
        return init.model_type if init is not None else self.model_type or "bert"

    def run_objectives(self):
        """`(sentence_objective, masking)` of the run, the legacy `nsp` / `whole_word_masking` switches and the
        family's default folded in (`resolve_objectives`); ConfigError for a combination that cannot be built."""
        sentence_objective = self.sentence_objective
        if sentence_objective is None and self.nsp is None:
            default = SENTENCE_OBJECTIVE_BY_MODEL_TYPE.get(self.run_model_type(), "none")
            sentence_objective = default if self.packing == "pairs" else "none"
        try:
            return resolve_objectives(
                sentence_objective,
                self.packing,
                self.masking,
                nsp=self.nsp,
                whole_word_masking=self.whole_word_masking,
                masking_rate=self.masking_rate,
                flag_names=True,
            )
        except ValueError as e:
            raise ConfigError(f"PretrainConfig: {e}") from None

    def run_sentence_objective(self):
        """ "nsp", "sop" or "none" (see `sentence_objective`)."""
        return self.run_objectives()[0]

    def run_masking(self):
        """ "token", "whole_word" or "span" (see `masking`)."""
        return self.run_objectives()[1]

    def run_nsp(self):
        """Whether the run trains next-sentence prediction (`run_sentence_objective() == "nsp"`)."""
        return self.run_sentence_objective() == "nsp"

    def run_max_predictions(self):
        """`max_predictions_per_seq`, or by default `default_max_predictions(masking_rate, max_seq_length)`."""
        if self.max_predictions_per_seq is not None:
            return self.max_predictions_per_seq
        return default_max_predictions(self.masking_rate, self.max_seq_length)

    def run_warmup_steps(self):
        """The run's warmup steps: `warmup_steps`, or by default `warmup_proportion` of `train_steps`."""
        if self.warmup_steps is not None:
            return self.warmup_steps
        return int(self.warmup_proportion * self.train_steps)

    def validate(self):
        """Raises ConfigError naming the first bad field and its value; reads no file but to check it exists and
        the small config files of `init` (or training_settings.json of a run it resumes)."""

        def fail(message, name):
            raise ConfigError(f"PretrainConfig: {message}. Received: {name}={getattr(self, name)!r}")

        def fail_both(message, first, second):
            raise ConfigError(
                f"PretrainConfig: {message}. Received: {first}={getattr(self, first)!r}, "
                f"{second}={getattr(self, second)!r}"
            )

        if not self.model_dir:
            fail("`model_dir` is required", "model_dir")
        if glob_characters_error(self.model_dir):
            raise ConfigError(f"PretrainConfig: {glob_characters_error(self.model_dir)}.")
        for name, minimum in _MINIMUM.items():
            if getattr(self, name) is not None and getattr(self, name) < minimum:
                fail(f"`{name}` must be >= {minimum}", name)
        for name, choices in (("corpus_format", FORMATS), ("optimizer", OPTIMIZERS), ("dtype", DTYPES)):
            if getattr(self, name) not in choices:
                fail(f"`{name}` must be one of {choices}", name)
        for name, choices in (
            ("sentence_objective", SENTENCE_OBJECTIVES),
            ("packing", PACKINGS),
            ("masking", MASKINGS),
        ):
            if getattr(self, name) is not None and getattr(self, name) not in choices:
                fail(f"`{name}` must be one of {choices}", name)
        if not 0.0 < self.masking_rate <= MAX_MASKING_RATE:
            fail(f"`masking_rate` must be in (0, {MAX_MASKING_RATE}]", "masking_rate")
        if not 0.0 < self.span_geometric_p <= 1.0:
            fail("`span_geometric_p` must be in (0, 1]", "span_geometric_p")
        for name in ("split_special_tokens",):
            if not isinstance(getattr(self, name), bool):
                fail(f"`{name}` must be True or False", name)
        for name in ("lowercase", "whole_word_masking", "nsp"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                fail(f"`{name}` must be True, False or None", name)
        if self.warmup_steps is not None:  # set: checked as given (None derives it from warmup_proportion)
            if self.warmup_steps < 0:
                fail("`warmup_steps` must be >= 0", "warmup_steps")
            if self.warmup_steps > self.train_steps:
                fail(f"`warmup_steps` exceeds `train_steps` ({self.train_steps})", "warmup_steps")
        if not 0.0 <= self.warmup_proportion <= 1.0:
            fail("`warmup_proportion` must be in [0, 1]", "warmup_proportion")
        if self.model_type is not None and self.model_type not in PRETRAIN_MODEL_TYPES:
            fail(f"`model_type` must be one of {PRETRAIN_MODEL_TYPES}", "model_type")
        if self.init:
            self._validate_init(fail, fail_both)
        elif self.model_type in INIT_ONLY_MODEL_TYPES:
            why, instead = INIT_ONLY_MODEL_TYPES[self.model_type]
            fail(f"a {self.model_type} model is not pretrained from scratch here: {why}; {instead}", "model_type")
        model_type = self.run_model_type()
        if self.global_rope_theta is not None:
            theta = self.global_rope_theta
            if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not theta > 0:
                fail("`global_rope_theta` must be a positive number", "global_rope_theta")
            if not encoder_class(model_type).takes("global_rope_theta"):
                raise ConfigError(
                    f"PretrainConfig: `global_rope_theta` (--global_rope_theta) is ModernBERT's rotary positions' "
                    f"base; a {model_type} model has none. Received: global_rope_theta={theta!r}, "
                    f"model_type={model_type!r}"
                )
            if self.reads_init() and float(theta) != self.init_model_config().global_rope_theta:
                fail_both(
                    "`global_rope_theta` (--global_rope_theta) differs from the `init` (--init) checkpoint's "
                    f"({self.init_model_config().global_rope_theta}): a run from --init starts with its theta; change "
                    "it when resuming that run (its long-context phase)",
                    "global_rope_theta",
                    "init",
                )
        sentence_objective, _ = self.run_objectives()  # ConfigError naming both settings of a bad combination
        if sentence_objective != "none" and model_type not in SENTENCE_OBJECTIVE_BY_MODEL_TYPE:
            given = "sentence_objective" if self.sentence_objective is not None else "nsp"
            raise ConfigError(
                f"PretrainConfig: `{given}` (--{given}) asks for a {sentence_objective.upper()} head on the pooled "
                f"output, which only {' and '.join(SENTENCE_OBJECTIVE_BY_MODEL_TYPE)} models have (a Hugging Face "
                f"{model_type} model has none): use --sentence_objective=none (the default for {model_type}) or "
                f"--model_type=bert/albert. Received: {given}={getattr(self, given)!r}, model_type={model_type!r}"
            )
        self._validate_objective(model_type)
        if self.embedding_size is not None:
            if model_type not in EMBEDDING_SIZE_TYPES:
                raise ConfigError(
                    f"PretrainConfig: `embedding_size` is ELECTRA's and ALBERT's; a {model_type} model has none. "
                    f"Received: embedding_size={self.embedding_size!r}, model_type={model_type!r}"
                )
            if self.embedding_size < 1:
                fail("`embedding_size` must be >= 1", "embedding_size")
        if self.vocab and os.path.isdir(self.vocab) and not vocab_file_in(self.vocab):
            fail(
                f"`vocab` is a directory without a vocabulary ({TOKENIZER_JSON}, {BPE_VOCAB_FILE} with {MERGES_FILE}, "
                f"{' or '.join(SENTENCEPIECE_FILES.values())}, or vocab.txt)",
                "vocab",
            )
        if self.vocab and not os.path.exists(self.vocab):
            fail("`vocab` does not exist", "vocab")
        vocab_file = self.vocab and (vocab_file_in(self.vocab) if os.path.isdir(self.vocab) else self.vocab)
        byte_level = BYTE_LEVEL_VOCABS.get(VOCAB_KIND_BY_MODEL_TYPE.get(model_type))
        if byte_level and vocab_file and vocab_kind(vocab_file) != "bpe":
            fail(f"`model_type` {model_type} needs a byte-level BPE vocabulary: {byte_level}", "vocab")
        if self.model is not None and self.model not in PRESETS and not os.path.isfile(self.model):
            fail(f"`model` must be a preset {PRESETS} or a bert_config.json path", "model")
        if self.corpus:
            try:
                expand_files(self.corpus)
            except FileNotFoundError as e:
                fail(f"`corpus`: {e}", "corpus")
        if self.data_service_mode not in tf_data_service.MODES:
            fail(f"`data_service_mode` must be one of {tf_data_service.MODES}", "data_service_mode")
        if self.data_service is not None:
            try:
                tf_data_service.parse_address(self.data_service, "`data_service`")
            except tf_data_service.DataServiceError as e:
                raise ConfigError(f"PretrainConfig: {e}") from None

    def _validate_objective(self, model_type):
        """ConfigError naming the setting: replaced-token detection of a family without it or with a generator
        larger than the discriminator; generator settings without it. (ELECTRA's sentence objective is refused
        with the other families' that have no sentence head.)"""
        if self.objective not in OBJECTIVES:
            raise ConfigError(
                f"PretrainConfig: `objective` must be one of {OBJECTIVES}. Received: objective={self.objective!r}"
            )
        generator_fields = ("generator_hidden_size", "generator_num_layers")
        if self.init_generator is not None and not (self.objective == "rtd" and self.init):
            raise ConfigError(
                "PretrainConfig: `init_generator` (--init_generator) starts ELECTRA's generator from a checkpoint: it "
                f"needs --objective=rtd and --init. Received: init_generator={self.init_generator!r}, "
                f"objective={self.objective!r}, init={self.init!r}"
            )
        if (
            self.init_generator is not None
            and self.reads_init()
            and not is_local(self.init_generator)
            and parse_hub_id(self.init_generator) is None
        ):
            raise ConfigError(
                "PretrainConfig: `init_generator` is not a path or a Hugging Face Hub id "
                f"({HUB_REF_PATTERN}). Received: init_generator={self.init_generator!r}"
            )
        if self.objective != "rtd":
            for name in generator_fields:
                if getattr(self, name) is not None:
                    raise ConfigError(
                        f"PretrainConfig: `{name}` (--{name}) sizes ELECTRA's generator, which only "
                        f"--objective=rtd trains. Received: {name}={getattr(self, name)!r}, objective="
                        f"{self.objective!r}"
                    )
            return
        if model_type not in RTD_MODEL_TYPES:
            raise ConfigError(
                f"PretrainConfig: `objective` rtd (replaced-token detection) trains {', '.join(RTD_MODEL_TYPES)} "
                f"models (a discriminator with a generator sharing its embeddings); a {model_type} model pretrains "
                f"with --objective=mlm. Use --model_type=electra. Received: objective='rtd', model_type="
                f"{model_type!r}"
            )
        weight = self.discriminator_weight
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight > 0:
            raise ConfigError(
                f"PretrainConfig: `discriminator_weight` must be a positive number. Received: "
                f"discriminator_weight={weight!r}"
            )
        self.generator_config(self.discriminator_config())  # ConfigError naming both sizes of a bad generator

    def discriminator_config(self, vocab_size=None):
        """The `BertConfig` of the run's model before its vocabulary is known (sizes only): `init`'s, the
        recorded one of a resumed `init` run, or that of `model` as `model_type`."""
        init = self.init_model_config()
        if init is not None:
            return init
        model = self.model or DEFAULT_MODEL
        model_type = self.model_type or "bert"
        if os.path.isfile(model):
            return BertConfig.from_json_file(model)
        return BertConfig.preset(model, vocab_size=vocab_size).for_family(model_type, self.embedding_size)

    def generator_config(self, discriminator):
        """The generator's `BertConfig` for the discriminator's (`BertConfig.electra_generator` with the
        `generator_*` settings); ConfigError for a generator larger than the discriminator."""
        try:
            return discriminator.electra_generator(
                self.generator_size, self.generator_hidden_size, self.generator_num_layers
            )
        except ConfigError as e:
            raise ConfigError(f"PretrainConfig: {e}") from None

    def _validate_init(self, fail, fail_both):
        if glob_characters_error(self.init, what="init"):
            raise ConfigError(f"PretrainConfig: {glob_characters_error(self.init, what='init')}.")
        for name in INIT_REFUSES:
            if getattr(self, name) is not None:
                fail_both(
                    f"`{name}` (--{name}) describes a model or vocabulary built here, but `init` (--init) brings "
                    f"its own (config, weights and tokenizer): leave --{name} unset with --init",
                    name,
                    "init",
                )
        if self.reads_init() and self._init_missing():
            fail(f"`init` does not exist, nor is it a Hugging Face Hub id ({HUB_REF_PATTERN})", "init")
        config = self.init_model_config()
        if self.model_type is not None and self.model_type != config.model_type:
            fail_both(
                f"`model_type` (--model_type) disagrees with the `init` (--init) checkpoint, a {config.model_type} "
                f"model: leave --model_type unset with --init, or set it to {config.model_type}",
                "model_type",
                "init",
            )
        if self.max_seq_length > config.max_position_embeddings:
            fail_both(
                f"`max_seq_length` (--max_seq_length) {self.max_seq_length} exceeds the `init` (--init) checkpoint's "
                f"position capacity (max_position_embeddings {config.max_position_embeddings}); a longer sequence than "
                f"it was trained at is fine up to {config.max_position_embeddings}",
                "max_seq_length",
                "init",
            )


# The vocabulary kind (bert-tf-vocab --kind) a model_type builds on the fly when `vocab` is not given; others:
# "wordpiece". SentencePiece's family (special tokens, normalization) is UNIGRAM_FAMILY_BY_MODEL_TYPE's, else ALBERT's.
# "bert_bpe" (ModernBERT's): a byte-level BPE with [CLS]/[SEP]/[MASK]/[PAD]/[UNK], one tokenizer.json
# (`text.build_bert_bpe_vocab`).
VOCAB_KIND_BY_MODEL_TYPE = {"roberta": "bpe", "albert": "unigram", "deberta-v2": "unigram", "modernbert": "bert_bpe"}
UNIGRAM_FAMILY_BY_MODEL_TYPE = {"deberta-v2": "deberta-v2"}
# The byte-level BPE kinds of VOCAB_KIND_BY_MODEL_TYPE: the vocabularies a family of that kind accepts as `vocab`.
BYTE_LEVEL_VOCABS = {
    "bpe": "a vocab.json with merges.txt beside it (bert-tf-vocab --kind=bpe), a byte-level BPE tokenizer.json, or "
    "none to build one from the corpus",
    "bert_bpe": "a tokenizer.json (or a directory holding one, as a ModernBERT directory), a vocab.json with "
    "merges.txt beside it, or none to build one with BERT's special tokens from the corpus",
}


# Smallest value of each numeric field: its option's lower bound (the flag's), checked in this order; the
# warmup fields and `embedding_size` have checks of their own.
_MINIMUM = {
    name: bound
    for name, bound in lower_bounds(PretrainConfig).items()
    if name not in ("warmup_steps", "warmup_proportion", "embedding_size")
}


def sentencepiece_model_in(path):
    """The SentencePiece model of a directory (spiece.model or spm.model), or `None`."""
    for name in SENTENCEPIECE_FILES.values():
        if os.path.isfile(os.path.join(path, name)):
            return os.path.join(path, name)
    return None


def vocab_file_in(path):
    """The vocabulary file of a directory given as `vocab`, or None: its SentencePiece model, else its
    `tokenizer.json` (what `load_tokenizer` prefers: a ModernBERT directory has only this), else `vocab.json` with
    `merges.txt` beside it, else `vocab.txt`."""
    model = sentencepiece_model_in(path)
    if model:
        return model
    for name in (TOKENIZER_JSON, BPE_VOCAB_FILE, VOCAB_FILE):
        candidate = os.path.join(path, name)
        if os.path.isfile(candidate) and (name != BPE_VOCAB_FILE or os.path.isfile(os.path.join(path, MERGES_FILE))):
            return candidate
    return None


def vocab_kind(vocab_file):
    """ "wordpiece", "bpe" or "sentencepiece": the kind of a vocabulary file (a `tokenizer.json` says its own)."""
    if is_sentencepiece_vocab(vocab_file):
        return "sentencepiece"
    if os.path.basename(vocab_file) == TOKENIZER_JSON:
        try:
            return find_tokenizer(os.path.dirname(os.path.abspath(vocab_file)))[0]
        except CheckpointError as e:
            raise ConfigError(f"PretrainConfig: `vocab`: {e} Received: vocab={vocab_file!r}") from None
    return "bpe" if is_byte_pair_vocab(vocab_file) else "wordpiece"


def corpus_and_vocab(config, chief=True, log=print):
    """(corpus files, corpus format, vocab file): writes the default corpus and builds the vocabulary when needed.

    Only the chief writes; the other workers wait until it has written them whole (`wait_for_chief`), so every
    worker reads the same vocabulary.
    """
    files, corpus_format = corpus_files(config, chief, log)
    model_type = config.run_model_type()
    lowercase = True if config.lowercase is None else config.lowercase
    vocab_size = config.vocab_size or DEFAULT_VOCAB_SIZE
    kind = VOCAB_KIND_BY_MODEL_TYPE.get(model_type, "wordpiece")
    if config.vocab and os.path.isdir(config.vocab):
        return files, corpus_format, vocab_file_in(config.vocab)
    if kind == "bert_bpe":  # ModernBERT's: one tokenizer.json, kept in model_dir so a re-run uses the same one
        vocab = config.vocab or os.path.join(config.model_dir, TOKENIZER_JSON)
        if not config.vocab and chief and not os.path.exists(vocab):
            log(build_bert_bpe_vocab(files, config.model_dir, vocab_size=vocab_size, show_progress=False))
        elif not config.vocab and not chief:
            wait_for_chief([vocab], "the vocabulary", log=log)
        return files, corpus_format, vocab
    if kind == "unigram" and not config.vocab:
        family = UNIGRAM_FAMILY_BY_MODEL_TYPE.get(model_type, "albert")
        vocab = os.path.join(config.model_dir, SENTENCEPIECE_FILES[family])
        if chief and not os.path.exists(vocab):
            log(
                build_unigram_vocab(
                    files,
                    config.model_dir,
                    vocab_size,
                    family,
                    lowercase if family == "albert" else None,
                    show_progress=False,
                )
            )
        elif not chief:  # the .model is written last (build_unigram_vocab)
            wait_for_chief([vocab], "the vocabulary", log=log)
        return files, corpus_format, vocab
    if kind == "bpe":  # a byte-level BPE vocabulary: vocab.json + merges.txt
        vocab = config.vocab or os.path.join(config.model_dir, "vocab.json")
        merges = os.path.join(os.path.dirname(vocab), "merges.txt")
        if not config.vocab and chief and not (os.path.exists(vocab) and os.path.exists(merges)):
            log(build_bpe_vocab(files, config.model_dir, vocab_size=vocab_size, show_progress=False))
        elif not config.vocab and not chief:
            wait_for_chief([vocab, merges], "the vocabulary", log=log)
        return files, corpus_format, vocab
    vocab = config.vocab or os.path.join(config.model_dir, "vocab.txt")
    if not config.vocab and chief:
        if os.path.exists(vocab) and _only_special_tokens(vocab):
            log(f"{vocab} holds only the special tokens (left by a failed build): building it again from the corpus")
            os.remove(vocab)
        if not os.path.exists(vocab):
            # Raises ValueError naming the corpus files, and writes nothing, when they hold no text.
            summary = build_vocab(files, vocab, vocab_size=vocab_size, lowercase=lowercase, show_progress=False)
            log(summary)
    elif not config.vocab:  # a vocabulary of special tokens alone is one the chief is building again
        wait_for_chief([vocab], "the vocabulary", ready=lambda paths: not _only_special_tokens(paths[0]), log=log)
    return files, corpus_format, vocab


def corpus_files(config, chief=True, log=print):
    """(corpus files, corpus format): `config.corpus`, or the default corpus, written to model_dir when needed."""
    os.makedirs(config.model_dir, exist_ok=True)
    if config.corpus:
        return expand_files(config.corpus), config.corpus_format
    path = os.path.join(config.model_dir, DEFAULT_CORPUS_FILE)
    if chief and not os.path.exists(path):
        log(f"No corpus: wrote {write_default_corpus(path)} documents of Python documentation to {path}")
    elif not chief:
        wait_for_chief([path], "the default corpus", log=log)
    return [path], "paragraphs"


def _only_special_tokens(vocab_file):
    """True when `vocab_file` holds no piece beyond `SPECIAL_TOKENS` (nothing can be tokenized with it)."""
    with open(vocab_file, encoding="utf-8") as f:
        return all(line.strip() in SPECIAL_TOKENS or not line.strip() for line in f)


def model_config(model, vocab_size, model_type="bert", embedding_size=None):
    """The `BertConfig` of a preset name (with `vocab_size`, as a `model_type` model) or of a bert_config.json path
    (whose vocabulary size, model_type and ELECTRA embedding_size must agree with the arguments)."""
    if not os.path.isfile(model):
        return BertConfig.preset(model, vocab_size=vocab_size).for_family(model_type, embedding_size)
    config = BertConfig.from_json_file(model)
    if config.vocab_size != vocab_size:
        raise ConfigError(f"{model} has vocab_size {config.vocab_size} but the vocabulary has {vocab_size} pieces.")
    if config.model_type != model_type:
        raise ConfigError(
            f"{model} is a {config.model_type} model but model_type is {model_type!r}: "
            f"pass model_type={config.model_type!r} (--model_type={config.model_type})."
        )
    if embedding_size is not None and embedding_size != (config.embedding_size or config.hidden_size):
        raise ConfigError(
            f"{model} has embedding_size {config.embedding_size or config.hidden_size} but embedding_size is "
            f"{embedding_size}: leave it unset with a config file."
        )
    return config


def is_byte_pair_vocab(vocab_file):
    """True for a byte-level BPE vocabulary (`vocab.json`, with `merges.txt` beside it) or a `tokenizer.json` (read
    with its directory by `load_tokenizer`, whatever its kind); else WordPiece."""
    return vocab_file.endswith(".json")


def is_sentencepiece_vocab(vocab_file):
    """True for a SentencePiece unigram model (a `.model` file)."""
    return vocab_file.endswith(".model")


def pretraining_tokenizer(vocab_file, lowercase=True, model_type="bert", **kwargs):
    """The tokenizer of `vocab_file`: a WordPiece `BertTokenizer` of a vocab.txt, the byte-level BPE tokenizer
    of the directory holding a vocab.json and its merges.txt (`checkpoints.load_tokenizer`), or the
    `SentencePieceTokenizer` of a `.model`, read as the `tokenizer_config.json` beside it says (without one: the
    family `model_type` builds, `lowercase` for ALBERT's)."""
    if is_byte_pair_vocab(vocab_file):
        return load_tokenizer(os.path.dirname(os.path.abspath(vocab_file)), **kwargs)
    if is_sentencepiece_vocab(vocab_file):
        family = UNIGRAM_FAMILY_BY_MODEL_TYPE.get(model_type, "albert")
        options = sentencepiece_options(os.path.dirname(os.path.abspath(vocab_file)), vocab_file, family)
        if family == "albert" and not os.path.isfile(
            os.path.join(os.path.dirname(os.path.abspath(vocab_file)), "tokenizer_config.json")
        ):
            options.update(lowercase=lowercase, strip_accents=lowercase)
        return SentencePieceTokenizer(vocab_file, **options, **kwargs)
    return BertTokenizer(vocab_file, lowercase=lowercase, **kwargs)


def fill_mask(
    pretrainer, vocab_file, sentences, lowercase=True, max_seq_length=128, top_k=5, model_type="bert", tokenizer=None
):
    """The `top_k` pieces the masked-LM head predicts for the first `[MASK]` of each sentence.

    `[MASK]` stands for the vocabulary's mask token (RoBERTa's `<mask>`). `tokenizer` (one that keeps special
    tokens whole, `split_special_tokens=False`) replaces the one of `vocab_file`, `lowercase` and `model_type`.

    Returns:
        One `(sentence, [(piece, probability), ...])` per sentence, most probable first
        (a sentence without `[MASK]` is scored at position 0).
    """
    if tokenizer is None:
        tokenizer = pretraining_tokenizer(vocab_file, lowercase, model_type, split_special_tokens=False)
    mask_token = tokenizer.get_vocabulary()[tokenizer.mask_id]
    packer = packer_for(tokenizer, max_seq_length)
    inputs = packer(tokenizer.tokenize(tf.constant([s.replace("[MASK]", mask_token) for s in sentences])))
    ids = inputs["token_ids"].numpy()  # [B, T]
    positions = np.array(
        [[list(row).index(tokenizer.mask_id) if tokenizer.mask_id in row else 0] for row in ids], "int32"
    )  # [B, 1]
    logits = pretrainer(dict(inputs, mask_positions=tf.constant(positions)))["mlm"].numpy()[:, 0]  # [B, V]
    results = []
    for sentence, row in zip(sentences, logits):
        probabilities = np.exp(row - row.max())
        probabilities /= probabilities.sum()
        best = np.argsort(-probabilities)[:top_k]
        # Each piece detokenized alone: WordPiece's as written ("##ing"), byte-level BPE's as its text (" the").
        pieces = [piece.decode("utf-8", "replace") for piece in tokenizer.detokenize(best[:, None]).numpy()]
        results.append((sentence, [(piece, float(probabilities[i])) for piece, i in zip(pieces, best)]))
    return results


def format_fill_mask(results):
    """Two lines per sentence: the sentence, then its predictions with probabilities."""
    return [
        f"  {sentence}\n    " + ", ".join(f"{piece} ({probability:.2f})" for piece, probability in predictions)
        for sentence, predictions in results
    ]


def upgrade_training_settings(saved):
    """Pretraining settings saved by an older version, with the recipe keys it did not record filled in as it
    behaved: `sentence_objective` from `nsp`, `masking` from `whole_word_masking`, `packing` "pairs", no span
    distribution, `split_special_tokens` false, a shuffle buffer of 10,000, masked LM (no generator). Settings that have the keys are returned as they are."""
    saved = dict(saved)
    saved.setdefault("sentence_objective", "nsp" if saved.get("nsp", True) else "none")
    saved.setdefault("masking", "whole_word" if saved.get("whole_word_masking") else "token")
    saved.setdefault("packing", "pairs")
    saved.setdefault("span_geometric_p", None)
    saved.setdefault("max_span_length", None)
    saved.setdefault("split_special_tokens", False)
    saved.setdefault("shuffle_buffer", 10_000)
    saved.setdefault("objective", "mlm")
    saved.setdefault("discriminator_weight", None)
    saved.setdefault("generator", None)
    return saved


def modernbert_run_config(bert_config, tokenizer, preset=True):
    """A ModernBERT `bert_config` built here, fitted to its tokenizer: `pad_token_id` the tokenizer's padding id
    (Hugging Face's config names it), and from a preset ModernBERT's 8,192 positions (`MODERNBERT_MAX_POSITIONS`:
    rotary positions have no table, so a later long-context phase needs no new weights)."""
    fields = {}
    if bert_config.pad_token_id is None and tokenizer.pad_id is not None:
        fields["pad_token_id"] = int(tokenizer.pad_id)
    if preset:
        fields["max_position_embeddings"] = max(bert_config.max_position_embeddings, MODERNBERT_MAX_POSITIONS)
    return dataclasses.replace(bert_config, **fields)


def _run_global_rope_theta(config, bert_config):
    """The global RoPE theta of a ModernBERT run: `global_rope_theta` when given, else on resume the checkpoint's
    (recorded in training_settings.json), else `bert_config`'s."""
    if config.global_rope_theta is not None:
        return float(config.global_rope_theta)
    saved = read_training_settings(config.model_dir) if newest_step(config.model_dir) is not None else None
    model = (saved or {}).get("model")
    if isinstance(model, dict) and _rotary(model.get("model_type")) and model.get("global_rope_theta"):
        return float(model["global_rope_theta"])
    return bert_config.global_rope_theta


def _rotary(model_type):
    """Whether `model_type`'s runs have ModernBERT's long-context phase: rotary positions
    (`Encoder.rotary_positions`: no table bounds the length, so a run may resume with longer sequences) and a global
    RoPE theta a resume may raise. NomicBERT and GTE rotate too but have one theta and Hugging Face's
    `pad_token_id`-free configs: their runs are planned as BERT's. False for a value that is no model_type (an old
    or damaged settings file)."""
    if model_type not in MODEL_TYPES:
        return False
    encoder = encoder_class(model_type)
    return encoder.rotary_positions and encoder.takes("global_rope_theta")


def resume_changes(model_dir, settings):
    """`(changes, new)`: the changes a resume of the ModernBERT run in `model_dir` accepts, oldest first, and
    whether the last is new (this run's).

    Each change is `{"step": S, "max_seq_length": [old, new], "model.global_rope_theta": [old, new], ...}` (only the
    keys that changed): the run resumed at step S with `PHASE_SETTINGS` or `PHASE_MODEL_FIELDS` of `model` changed
    (ModernBERT's long-context phase). Earlier changes come from training_settings.json's `resume_changes`. A run
    of another family, or without checkpoints, has none: its loop refuses every change in `INCOMPATIBLE`.

    Raises:
        ResumeError naming each other change of a ModernBERT run (the model field or setting, and its flag).
    """
    saved = read_training_settings(model_dir)
    step = newest_step(model_dir)
    if saved is None or step is None:
        return [], False
    saved = upgrade_training_settings(saved)
    earlier = [dict(change) for change in saved.get("resume_changes") or [] if isinstance(change, dict)]
    old_model, new_model = saved.get("model"), settings.get("model")
    same_family = isinstance(old_model, dict) and old_model.get("model_type") == new_model.get("model_type")
    if not (same_family and _rotary(new_model.get("model_type"))):
        return earlier, False
    now = json.loads(json.dumps({key: settings.get(key) for key in INCOMPATIBLE}))
    accepted, refused = {}, []
    for key in INCOMPATIBLE:
        old, new = saved.get(key), now.get(key)
        if old == new:
            continue
        if key in PHASE_SETTINGS:
            accepted[key] = [old, new]
        elif key == "model" and isinstance(old, dict) and isinstance(new, dict):
            for field in sorted(set(old) | set(new)):
                if old.get(field) == new.get(field):
                    continue
                if field in PHASE_MODEL_FIELDS:
                    accepted[f"model.{field}"] = [old.get(field), new.get(field)]
                else:
                    flag = _MODEL_FIELD_FLAGS.get(field, "model")
                    refused.append(
                        f"  model.{field} (--{flag}): checkpoint has {old.get(field)!r}, this run has {new.get(field)!r}"
                    )
        else:
            flag = "vocab" if key == "vocab_sha256" else key
            refused.append(f"  {key} (--{flag}): checkpoint has {old!r}, this run has {new!r}")
    if "max_seq_length" not in accepted:
        for key in _WITH_LENGTH_ONLY:
            if key in accepted:
                old, new = accepted.pop(key)
                refused.append(
                    f"  {key} (--{key}): checkpoint has {old!r}, this run has {new!r} (it may change only with "
                    "--max_seq_length)"
                )
    if refused:
        raise ResumeError(
            f"{model_dir} holds a run with incompatible settings; use a new --model_dir or the old settings (a "
            "ModernBERT run may change --max_seq_length and --global_rope_theta on resume, its long-context phase, "
            "and with --max_seq_length --max_predictions_per_seq and --global_batch_size):\n" + "\n".join(refused)
        )
    if not accepted:
        return earlier, False
    return [*earlier, {"step": step, **accepted}], True


def _accept_resume_changes(config, settings, chief, log):
    """Accepts (and records) a ModernBERT run's long-context phase on resume (`resume_changes`).

    Adds the run's `resume_changes` to `settings`; a new change is logged and, by the chief, written to
    training_settings.json at once (so the loop's check of `INCOMPATIBLE` finds the run's settings). Returns
    `(changes, fresh_data_through)`: the step of the last change, whose checkpoint and earlier ones are resumed
    without their data position (the input pipeline is another at the new length: the data starts over), or None.
    """
    changes, new = resume_changes(config.model_dir, settings)
    if changes:
        settings["resume_changes"] = changes
    if new:
        change = changes[-1]
        said = ", ".join(f"{key} {values[0]} -> {values[1]}" for key, values in change.items() if key != "step")
        log(
            f"{config.model_dir}: resuming step {change['step']} with {said} (ModernBERT's long-context phase; "
            f"recorded as resume_changes in {TRAINING_SETTINGS_FILE} and the model directory's bert_tf.json). The "
            "weights, optimizer and step continue; the data starts over at the new length."
        )
        if chief:
            path = os.path.join(config.model_dir, TRAINING_SETTINGS_FILE)
            temporary = path + ".tmp"
            with open(temporary, "w", encoding="utf-8") as f:
                json.dump(settings, f, indent=2, sort_keys=True)
            os.replace(temporary, path)
    return changes, max((change["step"] for change in changes), default=None)


def init_generator_path(config):
    """The generator checkpoint a run from `init` with `objective="rtd"` starts its generator from: `init_generator`,
    else `init`'s `generator` directory when it holds a checkpoint (what pretraining and conversion to Hugging
    Face write), else None (a new generator)."""
    if config.init_generator:
        return config.init_generator
    return generator_dir(config.init_directory())  # `init/generator` when it holds a checkpoint (an id's snapshot's)


def _run_generator_config(config, bert_config):
    """The generator's `BertConfig` of an RTD run: on resume the recorded one; from `init`, its generator
    checkpoint's (`init_generator_path`) when there is one; else `PretrainConfig.generator_config`."""
    if newest_step(config.model_dir) is not None:
        saved = (read_training_settings(config.model_dir) or {}).get("generator")
        if isinstance(saved, dict):
            return BertConfig.from_dict(saved, source=os.path.join(config.model_dir, TRAINING_SETTINGS_FILE))
    if config.reads_init():
        path = init_generator_path(config)
        if path is not None:
            try:
                return load_config(path)
            except (CheckpointError, ConfigError, OSError) as e:
                raise ConfigError(f"PretrainConfig: the generator checkpoint {path} cannot be read: {e}") from None
    return config.generator_config(bert_config)


def _masked_lm(pretrainer):
    """The model whose `mlm` output fills masks: the pretrainer, or an `ElectraPretrainer`'s generator."""
    return getattr(pretrainer, "generator", pretrainer)


def _finished(config, settings, strategy):
    """The step of `config.model_dir`'s newest checkpoint when that directory holds this run (the same
    incompatible settings), trained to `train_steps` and saved as a model directory; else None.

    Reads only training_settings.json, the checkpoint-state file and the model directory's index, before any model
    is built or data read. Under several workers it answers None (each must take the same path; the loop says so).
    """
    if strategy.num_replicas_in_sync > len(strategy.extended.worker_devices):
        return None
    saved = read_training_settings(config.model_dir)
    step = newest_step(config.model_dir)
    if saved is None or step is None or step < config.train_steps:
        return None
    saved = upgrade_training_settings(saved)
    if any(saved.get(key) != json.loads(json.dumps(settings.get(key))) for key in INCOMPATIBLE):
        return None  # the loop refuses the resume and names the differences
    return step if os.path.exists(os.path.join(config.model_dir, "bert_model.ckpt.index")) else None


def _tokenizer_source_settings(path, max_position_embeddings):
    """How the tokenizer files of the checkpoint at `path` are read (`bert_tf.json`'s keys): its own settings
    (or those Hugging Face's files imply), with what its `tokenizer.json` says."""
    directory = ModelDirectory.read(path)  # its format, config and tokenizer files read once
    settings = infer_settings(directory, max_position_embeddings)
    if directory.format != "bert_tf":
        settings.update(directory.tokenizer_settings)
    return {key: value for key, value in settings.items() if key not in ("labels", "task")}


def _vocabulary_sha256(tokenizer):
    """SHA-256 of a tokenizer's pieces in id order: the same for a checkpoint's tokenizer files and their copy."""
    return hashlib.sha256("\n".join(tokenizer.get_vocabulary()).encode("utf-8")).hexdigest()


def _init_run(config, chief, log):
    """The tokenizer, its settings and the model config of a run with `init`, and a function building its model.

    A new run reads `init` (the chief copies its tokenizer files and their settings into model_dir, so the final
    model directory has them and a resume needs `init` no more); a resumed run reads model_dir's copies and the
    config recorded in training_settings.json.
    """
    bert_config = config.init_model_config()
    if config.reads_init():
        source = config.init_directory()  # the directory read once (an id's snapshot): config, tokenizer, weights
        settings = _tokenizer_source_settings(source, bert_config.max_position_embeddings)
        if chief:
            os.makedirs(config.model_dir, exist_ok=True)
            source.write_tokenizer_files(config.model_dir)
            write_settings(config.model_dir, settings)
        trained_at = settings.get("max_seq_length")
        if trained_at and config.max_seq_length > trained_at:
            log(
                f"max_seq_length {config.max_seq_length} is longer than {config.init} was used at ({trained_at}): "
                f"fine up to its max_position_embeddings ({bert_config.max_position_embeddings})."
            )
    else:
        source = config.model_dir
        settings = read_settings(config.model_dir)
        log(
            f"{config.model_dir} holds checkpoints: resuming them; --init={config.init} is not read (it only starts "
            "a new run)."
        )
    tokenizer = load_tokenizer(source, settings, split_special_tokens=config.split_special_tokens)
    return tokenizer, settings, bert_config, source


def _log_finished_run(log, config, pretrainer, metrics, tokenizer_files, vocab_file, **fill_mask_options):
    """The end of a pretraining run's log: its final metrics (none when the loop found the run complete), what the
    model directory holds (`tokenizer_files` naming the tokenizer's) and, with `fill_mask`, the masked LM's
    predictions (`fill_mask` with `vocab_file` and `fill_mask_options`)."""
    if metrics:
        log("Final: " + ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()))
    log(
        f"Model directory: {config.model_dir} (bert_config.json, {tokenizer_files}, "
        f"bert_model.ckpt, bert_tf.json; TensorBoard logs in {os.path.join(config.model_dir, 'logs')})"
    )
    if config.fill_mask:
        log("Fill-mask:")
        results = fill_mask(
            _masked_lm(pretrainer),
            vocab_file,
            config.fill_mask,
            max_seq_length=config.max_seq_length,
            **fill_mask_options,
        )
        for line in format_fill_mask(results):
            log(line)


def pretrain(config, strategy=None, log=print):
    """Runs `config` (see the module docstring); returns the final training (and held-out) metrics.

    Args:
        config: a `PretrainConfig`.
        strategy: a `tf.distribute.Strategy` (default: one device).
        log: receives the progress messages (`print` by default).
    Raises:
        ConfigError (a ValueError) for a bad setting or a model that does not
        fit the vocabulary or `max_seq_length`; `ResumeError` when `model_dir`
        holds an incompatible run; `NonFiniteLossError`; `EmptyCorpusError`
        (a ValueError) for a corpus without training examples.
    """
    config.validate()
    if config.data_service:  # before anything else: TensorFlow's client would wait for it for ever
        service = tf_data_service.check_reachable(config.data_service, "--data_service", dispatcher=True)
    keras.utils.set_random_seed(config.seed)
    strategy = strategy or create_strategy("one_device")
    chief = is_chief(strategy)
    sentence_objective, masking = config.run_objectives()
    max_predictions = config.run_max_predictions()
    starts_from_init = config.reads_init()
    rtd = config.objective == "rtd"
    if config.init:
        files, corpus_format = corpus_files(config, chief, log)
        tokenizer, tokenizer_source_settings, bert_config, tokenizer_source = _init_run(config, chief, log)
        vocab_file = None
        vocab_sha = _vocabulary_sha256(tokenizer)
        lowercase = getattr(tokenizer, "lowercase", None)
    else:
        files, corpus_format, vocab_file = corpus_and_vocab(config, chief, log)
        lowercase = True if config.lowercase is None else config.lowercase
        model_type = config.run_model_type()
        tokenizer = pretraining_tokenizer(
            vocab_file, lowercase, model_type, split_special_tokens=config.split_special_tokens
        )
        bert_config = model_config(
            config.model or DEFAULT_MODEL, tokenizer.vocab_size, model_type, config.embedding_size
        )
        if _rotary(model_type):
            bert_config = modernbert_run_config(bert_config, tokenizer, preset=not os.path.isfile(config.model or ""))
        with open(vocab_file, "rb") as f:
            vocab_sha = hashlib.sha256(f.read()).hexdigest()
    if _rotary(bert_config.model_type):
        bert_config = dataclasses.replace(bert_config, global_rope_theta=_run_global_rope_theta(config, bert_config))
    if config.max_seq_length > bert_config.max_position_embeddings:
        raise ConfigError(
            f"PretrainConfig: `max_seq_length` ({config.max_seq_length}) exceeds the model's "
            f"max_position_embeddings ({bert_config.max_position_embeddings})."
        )
    span = masking == "span"
    generator_config = _run_generator_config(config, bert_config) if rtd else None
    settings = {
        "model": json.loads(json.dumps(bert_config.to_dict())),  # as training_settings.json reads back (lists)
        "vocab_sha256": vocab_sha,
        "max_seq_length": config.max_seq_length,
        "max_predictions_per_seq": max_predictions,
        "global_batch_size": config.global_batch_size,
        "sentence_objective": sentence_objective,
        "packing": config.packing,
        "masking": masking,
        "masking_rate": config.masking_rate,
        # Only span masking reads them: another masking records none, so changing them does not refuse a resume.
        "span_geometric_p": config.span_geometric_p if span else None,
        "max_span_length": config.max_span_length if span else None,
        "nsp": sentence_objective == "nsp",  # as older versions recorded them (tools read them)
        "whole_word_masking": masking == "whole_word",
        "corpus": [os.path.relpath(f) for f in files],
        "seed": config.seed,
        "corpus_format": corpus_format,
        "group_size": config.group_size,
        "shuffle_buffer": config.shuffle_buffer,
        "lowercase": lowercase,
        "split_special_tokens": config.split_special_tokens,
        "init": os.path.relpath(config.init) if config.init else None,  # informational: a resumed run ignores it
        "objective": config.objective,
        # Replaced-token detection's lambda and generator; None for masked LM.
        "discriminator_weight": float(config.discriminator_weight) if rtd else None,
        "generator": json.loads(json.dumps(generator_config.to_dict())) if rtd else None,
    }
    changes, fresh_data_through = _accept_resume_changes(config, settings, chief, log)
    done = _finished(config, settings, strategy)
    if done is not None:
        log(
            f"{config.model_dir}: already complete at step {done} (train_steps {config.train_steps}; nothing to do). "
            f"Model directory: {config.model_dir} (bert_config.json, vocab.txt, bert_model.ckpt, bert_tf.json; "
            f"TensorBoard logs in {os.path.join(config.model_dir, 'logs')}). Raise train_steps to train further."
        )
        return {}
    with strategy.scope():
        if starts_from_init:
            pretrainer, initialised = init_pretrainer(
                config.init_directory(),
                sentence_objective,
                dtype=dtype_policy(config.dtype),
                **(
                    {
                        "objective": "rtd",
                        "generator_config": config.generator_config,
                        "discriminator_weight": config.discriminator_weight,
                        "generator_path": init_generator_path(config),
                    }
                    if rtd
                    else {}
                ),
            )
            log(
                f"Started from {config.init} ({bert_config.model_type}, {bert_config.num_hidden_layers} layers); "
                + (
                    "initialised here, not in it: " + ", ".join(initialised)
                    if initialised
                    else "every head came from it."
                )
            )
        else:
            encoder = build_encoder(bert_config, dtype=dtype_policy(config.dtype))
            if rtd:
                pretrainer = ElectraPretrainer(
                    encoder, generator_config=generator_config, discriminator_weight=config.discriminator_weight
                )
            else:
                pretrainer = BertPretrainer(encoder, sentence_objective=sentence_objective)
        optimizer = run_optimizer(config, config.train_steps, config.run_warmup_steps())

    def dataset(context, split, step=0):
        batches = pretraining_dataset(
            files,
            tokenizer,
            max_seq_length=config.max_seq_length,
            max_predictions_per_seq=max_predictions,
            masking_rate=config.masking_rate,
            sentence_objective=sentence_objective,
            packing=config.packing,
            masking=masking,
            span_geometric_p=config.span_geometric_p,
            max_span_length=config.max_span_length,
            batch_size=config.global_batch_size // context.num_input_pipelines,
            seed=config.seed,
            corpus_format=corpus_format,
            input_context=context,
            split=split,
            max_position_embeddings=bert_config.max_position_embeddings,
            group_size=config.group_size,
            shuffle_buffer=1 if split == "eval" else config.shuffle_buffer,
            objective=config.objective,
        )
        if split == "eval" or not config.data_service:
            return batches
        if config.data_service_mode == "exact":  # from the step's batch on, built on the service worker
            log(f"Input pipeline on tf.data service {service} (exact: one service worker, from batch {step}).")
            return tf_data_service.distribute(batches.skip(step), service, "exact")
        log(f"Input pipeline on tf.data service {service} (dynamic: epochs shared among its workers).")
        job = tf_data_service.job_name_for(config.model_dir, context.input_pipeline_id)
        return tf_data_service.distribute(batches, service, "dynamic", job_name=job)

    def eval_dataset(context):
        try:
            return dataset(context, "eval")
        except EmptyCorpusError as e:
            if context.num_input_pipelines > 1:
                # Workers that disagree on evaluating would wait on each other's collectives forever.
                raise EmptyCorpusError(f"{e} Held out on every worker: use eval_steps=0 or more documents.") from e
            log(f"No held-out evaluation: {e}")
            return None  # the loop trains without held-out evaluation

    loop_config = LoopConfig(
        train_steps=config.train_steps,
        steps_per_loop=config.steps_per_loop,
        checkpoint_steps=config.checkpoint_steps,
        keep_checkpoints=config.keep_checkpoints,
        eval_steps=config.eval_steps,
        eval_interval=config.eval_interval,
        grad_accum_steps=config.grad_accum_steps,
        clip_norm=config.clip_norm,
        jit_compile=config.jit_compile,
        nonfinite_retries=config.nonfinite_retries,
    )
    loop = TrainingLoop(
        strategy,
        pretrainer,
        optimizer,
        lambda context, step=0: dataset(context, "train", step),
        config.global_batch_size,
        config.model_dir,
        loop_config,
        eval_dataset_fn=eval_dataset if config.eval_steps else None,
        settings=settings,
        upgrade_settings=upgrade_training_settings,
        fresh_data_through=fresh_data_through,
        # tf.data service's iterator cannot be saved: the data position is the step (`dataset` skips to it).
        data_position="step" if config.data_service else "iterator",
    )
    metrics = loop.train(log=log)
    if chief:
        if config.init:
            fill_tokenizer = load_tokenizer(tokenizer_source, tokenizer_source_settings, split_special_tokens=False)
            save_model_dir(
                pretrainer,
                config.model_dir,  # the init's tokenizer files were copied there when the run started
                settings={
                    **tokenizer_source_settings,
                    "max_seq_length": config.max_seq_length,
                    "split_special_tokens": config.split_special_tokens,
                    "sentence_objective": sentence_objective,
                    **({"resume_changes": changes} if changes else {}),
                },
            )
            _log_finished_run(
                log, config, pretrainer, metrics, "the tokenizer files of --init", None, tokenizer=fill_tokenizer
            )
            return metrics
        byte_pairs = is_byte_pair_vocab(vocab_file)
        sentencepiece = is_sentencepiece_vocab(vocab_file)
        save_model_dir(
            pretrainer,
            config.model_dir,
            # A built vocabulary is already there; a BPE or SentencePiece one is written below.
            vocab_file=vocab_file if config.vocab and not (byte_pairs or sentencepiece) else None,
            settings={
                "lowercase": lowercase,
                "max_seq_length": config.max_seq_length,
                "split_special_tokens": config.split_special_tokens,
                "sentence_objective": sentence_objective,
                **({"resume_changes": changes} if changes else {}),
            },
        )
        tokenizer_files = "vocab.txt"
        if byte_pairs:
            written = write_tokenizer_files(os.path.dirname(os.path.abspath(vocab_file)), config.model_dir)
            tokenizer_files = ", ".join(written)
        if sentencepiece:  # the .model and how to read it (tokenizer_config.json), as load_tokenizer finds them
            save_sentencepiece_tokenizer(tokenizer, config.model_dir)
        if rtd and (byte_pairs or sentencepiece):  # the generator's directory reads the same tokenizer
            write_tokenizer_files(config.model_dir, os.path.join(config.model_dir, "generator"))
        _log_finished_run(
            log,
            config,
            pretrainer,
            metrics,
            SENTENCEPIECE_FILES[tokenizer.family] if sentencepiece else tokenizer_files,
            vocab_file,
            lowercase=lowercase,
            model_type=bert_config.model_type,
        )
    return metrics
