"""Pretraining: raw text + a vocabulary + `BertPretrainer` + the distributed `TrainingLoop`.

One `PretrainConfig` describes a run (its fields are the flags of
`bert-tf-pretrain`); `pretrain(config)` does it:

1. the corpus: `corpus` files, or without them an offline default corpus
   (Python's own documentation) written to `model_dir/default_corpus.txt`;
2. the vocabulary: `vocab`, or one built from the corpus into
   `model_dir/vocab.txt` (kept, so a re-run uses the same one); its kind by
   `model_type` (`VOCAB_KIND_BY_MODEL_TYPE`): WordPiece, byte-level BPE
   (`vocab.json` + `merges.txt`) or SentencePiece unigram (`spiece.model`; a
   `.model` or a directory holding one as `vocab` of any model type);
3. the model: a preset (`bert_tf.config.PRESETS`) or a `bert_config.json`,
   with the vocabulary's size; `model_type` makes a preset a model of that
   family (`BertConfig.for_family`: RoBERTa's one segment and offset
   positions, DistilBERT's no segments, ELECTRA's and ALBERT's `embedding_size`);
4. masked LM (+ next-sentence prediction, BERT only) with `TrainingLoop` under any
   strategy: tokenization, pair building and masking run in `tf.data`
   (`bert_tf.data.pretraining`); a re-run resumes from `model_dir/checkpoints`;
   every 20th group of documents is held out for evaluation when the corpus
   has that many;
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

from bert_tf.checkpoints import load_tokenizer, save_model_dir, write_tokenizer_files
from bert_tf.checkpoints.tokenizer_files import (
    SENTENCEPIECE_FILES,
    save_sentencepiece_tokenizer,
    sentencepiece_options,
)
from bert_tf.config import EMBEDDING_SIZE_TYPES, MODEL_TYPES, PRESETS, BertConfig, ConfigError
from bert_tf.data.default_corpus import write_default_corpus
from bert_tf.data.pretraining import FORMATS, EmptyCorpusError, pretraining_dataset
from bert_tf.models import BertPretrainer, build_encoder
from bert_tf.text import SPECIAL_TOKENS, BertTokenizer, SentencePieceTokenizer, packer_for
from bert_tf.text.vocab import build_bpe_vocab, build_unigram_vocab, build_vocab, expand_files
from bert_tf.training.distribute import DTYPES, create_strategy, dtype_policy, is_chief
from bert_tf.training.optimization import OPTIMIZERS, create_optimizer
from bert_tf.training.trainer import (
    INCOMPATIBLE,
    LoopConfig,
    TrainingLoop,
    glob_characters_error,
    newest_step,
    read_training_settings,
)

DEFAULT_CORPUS_FILE = "default_corpus.txt"
FILL_MASK_SENTENCES = ("The [MASK] of the function is returned.", "This module provides [MASK] for files.")

# Smallest value of each numeric field (the app's flags have the same lower bounds).
_MINIMUM = {
    "group_size": 2,
    "vocab_size": 6,
    "train_steps": 1,
    "max_seq_length": 8,
    "max_predictions_per_seq": 1,
    "global_batch_size": 1,
    "learning_rate": 0.0,
    "weight_decay": 0.0,
    "clip_norm": 0.0,
    "grad_accum_steps": 1,
    "checkpoint_steps": 1,
    "keep_checkpoints": 1,
    "eval_steps": 0,
    "eval_interval": 1,
    "steps_per_loop": 1,
    "nonfinite_retries": 0,
}


@dataclasses.dataclass
class PretrainConfig:
    """A pretraining run; each field is the `bert-tf-pretrain` flag of the same name, with its default."""

    model_dir: str  # checkpoints, TensorBoard logs and the final model directory
    # Data
    corpus: list = dataclasses.field(default_factory=list)  # files or globs; empty: the offline default corpus
    corpus_format: str = "lines"  # bert_tf.data.pretraining.FORMATS
    group_size: int = 16  # documents per pair-building group; every 20th group is held out
    # vocab.txt (roberta: a byte-level BPE vocab.json, merges.txt beside it; any: a SentencePiece .model or a
    # directory with spiece.model/spm.model); None: built here, of the kind VOCAB_KIND_BY_MODEL_TYPE says
    vocab: str = None
    vocab_size: int = 8000  # of a vocabulary built here
    lowercase: bool = True
    # False: "[MASK]", "[SEP]", ... written in the corpus are their single ids (never masked), as Hugging Face's
    # tokenizers read them; True: they are text ("[", "mask", "]"), as google-research/bert's. bert_tf.json keeps it.
    split_special_tokens: bool = False
    # Model and objective
    model: str = "mini"  # a preset (bert_tf.config.PRESETS) or a bert_config.json path
    model_type: str = "bert"  # bert_tf.config.MODEL_TYPES: the family a preset becomes (a config file's must agree)
    # ELECTRA's and ALBERT's embedding width; None: ELECTRA hidden_size // 2 (ELECTRA-small: 128 over 256),
    # ALBERT min(128, hidden_size) (ALBERT-base: 128 over 768)
    embedding_size: int = None
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masking_rate: float = 0.15
    whole_word_masking: bool = False
    nsp: bool = None  # next-sentence prediction; None: on for model_type bert, off for the others (no NSP head)
    # Optimization
    train_steps: int = 1000
    global_batch_size: int = 32  # over all replicas
    learning_rate: float = 1e-4  # peak, after linear warmup; then linear decay to zero
    warmup_steps: int = None  # linear warmup steps; None: warmup_proportion of train_steps
    warmup_proportion: float = 0.1  # share of train_steps warming up when warmup_steps is None
    optimizer: str = "adamw"  # bert_tf.training.optimization.OPTIMIZERS
    weight_decay: float = 0.01
    clip_norm: float = 1.0  # global gradient norm; 0 disables clipping
    grad_accum_steps: int = 1
    dtype: str = "float32"  # bert_tf.training.distribute.DTYPES
    jit_compile: bool = False
    # Loop
    steps_per_loop: int = 50
    checkpoint_steps: int = 500
    keep_checkpoints: int = 3
    eval_steps: int = 20  # held-out batches per evaluation; 0: none
    eval_interval: int = 500
    nonfinite_retries: int = 0  # on a NaN/inf loss: restore the last checkpoint and skip the batches
    seed: int = 0  # initialization (keras.utils.set_random_seed), data order and masking
    fill_mask: list = dataclasses.field(default_factory=lambda: list(FILL_MASK_SENTENCES))  # completed at the end

    def __post_init__(self):
        self.validate()

    def run_nsp(self):
        """Whether the run trains next-sentence prediction: `nsp`, by default BERT's alone."""
        return self.model_type == "bert" if self.nsp is None else self.nsp

    def run_warmup_steps(self):
        """The run's warmup steps: `warmup_steps`, or by default `warmup_proportion` of `train_steps`."""
        if self.warmup_steps is not None:
            return self.warmup_steps
        return int(self.warmup_proportion * self.train_steps)

    def validate(self):
        """Raises ConfigError naming the first bad field and its value; touches no file but to check it exists."""

        def fail(message, name):
            raise ConfigError(f"PretrainConfig: {message}. Received: {name}={getattr(self, name)!r}")

        if not self.model_dir:
            fail("`model_dir` is required", "model_dir")
        if glob_characters_error(self.model_dir):
            raise ConfigError(f"PretrainConfig: {glob_characters_error(self.model_dir)}.")
        for name, minimum in _MINIMUM.items():
            if getattr(self, name) < minimum:
                fail(f"`{name}` must be >= {minimum}", name)
        for name, choices in (("corpus_format", FORMATS), ("optimizer", OPTIMIZERS), ("dtype", DTYPES)):
            if getattr(self, name) not in choices:
                fail(f"`{name}` must be one of {choices}", name)
        if not 0.0 < self.masking_rate <= 1.0:
            fail("`masking_rate` must be in (0, 1]", "masking_rate")
        for name in ("lowercase", "split_special_tokens"):
            if not isinstance(getattr(self, name), bool):
                fail(f"`{name}` must be True or False", name)
        if self.warmup_steps is not None:  # set: checked as given (None derives it from warmup_proportion)
            if self.warmup_steps < 0:
                fail("`warmup_steps` must be >= 0", "warmup_steps")
            if self.warmup_steps > self.train_steps:
                fail(f"`warmup_steps` exceeds `train_steps` ({self.train_steps})", "warmup_steps")
        if not 0.0 <= self.warmup_proportion <= 1.0:
            fail("`warmup_proportion` must be in [0, 1]", "warmup_proportion")
        if self.model_type not in MODEL_TYPES:
            fail(f"`model_type` must be one of {MODEL_TYPES}", "model_type")
        if self.nsp and self.model_type != "bert":
            raise ConfigError(
                f"PretrainConfig: `nsp` (next-sentence prediction) is BERT's: a Hugging Face {self.model_type} model "
                f"has no NSP head. Leave `nsp` unset (off for {self.model_type}) or use model_type='bert'. "
                f"Received: nsp={self.nsp!r}, model_type={self.model_type!r}"
            )
        if self.embedding_size is not None:
            if self.model_type not in EMBEDDING_SIZE_TYPES:
                raise ConfigError(
                    f"PretrainConfig: `embedding_size` is ELECTRA's and ALBERT's; a {self.model_type} model has none. "
                    f"Received: embedding_size={self.embedding_size!r}, model_type={self.model_type!r}"
                )
            if self.embedding_size < 1:
                fail("`embedding_size` must be >= 1", "embedding_size")
        if self.model_type == "roberta" and self.vocab and not is_byte_pair_vocab(self.vocab):
            fail(
                "`model_type` roberta needs a byte-level BPE vocabulary: a vocab.json with merges.txt beside it "
                "(bert-tf-vocab --kind=bpe), or none to build one from the corpus",
                "vocab",
            )
        if self.vocab and os.path.isdir(self.vocab) and not sentencepiece_model_in(self.vocab):
            fail(
                f"`vocab` is a directory without a SentencePiece model ({' or '.join(SENTENCEPIECE_FILES.values())})",
                "vocab",
            )
        if self.vocab and not os.path.exists(self.vocab):
            fail("`vocab` does not exist", "vocab")
        if self.model not in PRESETS and not os.path.isfile(self.model):
            fail(f"`model` must be a preset {PRESETS} or a bert_config.json path", "model")
        if self.corpus:
            try:
                expand_files(self.corpus)
            except FileNotFoundError as e:
                fail(f"`corpus`: {e}", "corpus")


# The vocabulary kind (bert-tf-vocab --kind) a model_type builds on the fly when `vocab` is not given; others:
# "wordpiece". SentencePiece's family (special tokens, normalization) is UNIGRAM_FAMILY_BY_MODEL_TYPE's, else ALBERT's.
VOCAB_KIND_BY_MODEL_TYPE = {"roberta": "bpe", "albert": "unigram", "deberta-v2": "unigram"}
UNIGRAM_FAMILY_BY_MODEL_TYPE = {"deberta-v2": "deberta-v2"}


def sentencepiece_model_in(path):
    """The SentencePiece model of a directory (spiece.model or spm.model), or `None`."""
    for name in SENTENCEPIECE_FILES.values():
        if os.path.isfile(os.path.join(path, name)):
            return os.path.join(path, name)
    return None


def corpus_and_vocab(config, chief=True, log=print):
    """(corpus files, corpus format, vocab file): writes the default corpus and builds the vocabulary when needed.

    Only the chief writes; every worker gets the same paths.
    """
    os.makedirs(config.model_dir, exist_ok=True)
    corpus_format = config.corpus_format
    if config.corpus:
        files = expand_files(config.corpus)
    else:
        path = os.path.join(config.model_dir, DEFAULT_CORPUS_FILE)
        if chief and not os.path.exists(path):
            log(f"No corpus: wrote {write_default_corpus(path)} documents of Python documentation to {path}")
        files, corpus_format = [path], "paragraphs"
    kind = VOCAB_KIND_BY_MODEL_TYPE.get(config.model_type, "wordpiece")
    if config.vocab and os.path.isdir(config.vocab):
        return files, corpus_format, sentencepiece_model_in(config.vocab)
    if kind == "unigram" and not config.vocab:
        family = UNIGRAM_FAMILY_BY_MODEL_TYPE.get(config.model_type, "albert")
        vocab = os.path.join(config.model_dir, SENTENCEPIECE_FILES[family])
        if chief and not os.path.exists(vocab):
            lowercase = config.lowercase if family == "albert" else None
            log(build_unigram_vocab(files, config.model_dir, config.vocab_size, family, lowercase, show_progress=False))
        return files, corpus_format, vocab
    if kind == "bpe":  # a byte-level BPE vocabulary: vocab.json + merges.txt
        vocab = config.vocab or os.path.join(config.model_dir, "vocab.json")
        merges = os.path.join(os.path.dirname(vocab), "merges.txt")
        if not config.vocab and chief and not (os.path.exists(vocab) and os.path.exists(merges)):
            log(build_bpe_vocab(files, config.model_dir, vocab_size=config.vocab_size, show_progress=False))
        return files, corpus_format, vocab
    vocab = config.vocab or os.path.join(config.model_dir, "vocab.txt")
    if not config.vocab and chief:
        if os.path.exists(vocab) and _only_special_tokens(vocab):
            log(f"{vocab} holds only the special tokens (left by a failed build): building it again from the corpus")
            os.remove(vocab)
        if not os.path.exists(vocab):
            # Raises ValueError naming the corpus files, and writes nothing, when they hold no text.
            summary = build_vocab(
                files, vocab, vocab_size=config.vocab_size, lowercase=config.lowercase, show_progress=False
            )
            log(summary)
    return files, corpus_format, vocab


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
    """True for a byte-level BPE vocabulary (`vocab.json`, with `merges.txt` beside it); else WordPiece."""
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


def fill_mask(pretrainer, vocab_file, sentences, lowercase=True, max_seq_length=128, top_k=5, model_type="bert"):
    """The `top_k` pieces the masked-LM head predicts for the first `[MASK]` of each sentence.

    `[MASK]` stands for the vocabulary's mask token (RoBERTa's `<mask>`).

    Returns:
        One `(sentence, [(piece, probability), ...])` per sentence, most probable first
        (a sentence without `[MASK]` is scored at position 0).
    """
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
    if any(saved.get(key) != json.loads(json.dumps(settings.get(key))) for key in INCOMPATIBLE):
        return None  # the loop refuses the resume and names the differences
    return step if os.path.exists(os.path.join(config.model_dir, "bert_model.ckpt.index")) else None


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
    keras.utils.set_random_seed(config.seed)
    strategy = strategy or create_strategy("one_device")
    chief = is_chief(strategy)
    files, corpus_format, vocab_file = corpus_and_vocab(config, chief, log)
    tokenizer = pretraining_tokenizer(
        vocab_file, config.lowercase, config.model_type, split_special_tokens=config.split_special_tokens
    )
    bert_config = model_config(config.model, tokenizer.vocab_size, config.model_type, config.embedding_size)
    if config.max_seq_length > bert_config.max_position_embeddings:
        raise ConfigError(
            f"PretrainConfig: `max_seq_length` ({config.max_seq_length}) exceeds the model's "
            f"max_position_embeddings ({bert_config.max_position_embeddings})."
        )
    with open(vocab_file, "rb") as f:
        vocab_sha = hashlib.sha256(f.read()).hexdigest()
    settings = {
        "model": bert_config.to_dict(),
        "vocab_sha256": vocab_sha,
        "max_seq_length": config.max_seq_length,
        "max_predictions_per_seq": config.max_predictions_per_seq,
        "global_batch_size": config.global_batch_size,
        "nsp": config.run_nsp(),
        "corpus": [os.path.relpath(f) for f in files],
        "seed": config.seed,
        "corpus_format": corpus_format,
        "group_size": config.group_size,
        "masking_rate": config.masking_rate,
        "whole_word_masking": config.whole_word_masking,
        "lowercase": config.lowercase,
        "split_special_tokens": config.split_special_tokens,
    }
    done = _finished(config, settings, strategy)
    if done is not None:
        log(
            f"{config.model_dir}: already complete at step {done} (train_steps {config.train_steps}; nothing to do). "
            f"Model directory: {config.model_dir} (bert_config.json, vocab.txt, bert_model.ckpt, bert_tf.json; "
            f"TensorBoard logs in {os.path.join(config.model_dir, 'logs')}). Raise train_steps to train further."
        )
        return {}
    with strategy.scope():
        encoder = build_encoder(bert_config, dtype=dtype_policy(config.dtype))
        pretrainer = BertPretrainer(encoder, nsp=config.run_nsp())
        optimizer = create_optimizer(
            config.optimizer,
            config.learning_rate,
            config.train_steps,
            config.run_warmup_steps(),
            config.weight_decay,
            clip_norm=0,  # the loop clips the global gradient
            loss_scale=config.dtype == "float16",
        )

    def dataset(context, split):
        return pretraining_dataset(
            files,
            tokenizer,
            max_seq_length=config.max_seq_length,
            max_predictions_per_seq=config.max_predictions_per_seq,
            masking_rate=config.masking_rate,
            whole_word_masking=config.whole_word_masking,
            nsp=config.run_nsp(),
            batch_size=config.global_batch_size // context.num_input_pipelines,
            seed=config.seed,
            corpus_format=corpus_format,
            input_context=context,
            split=split,
            max_position_embeddings=bert_config.max_position_embeddings,
            group_size=config.group_size,
            shuffle_buffer=1 if split == "eval" else 10_000,
        )

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
        lambda context: dataset(context, "train"),
        config.global_batch_size,
        config.model_dir,
        loop_config,
        eval_dataset_fn=eval_dataset if config.eval_steps else None,
        settings=settings,
    )
    metrics = loop.train(log=log)
    if chief:
        byte_pairs = is_byte_pair_vocab(vocab_file)
        sentencepiece = is_sentencepiece_vocab(vocab_file)
        save_model_dir(
            pretrainer,
            config.model_dir,
            # A built vocabulary is already there; a BPE or SentencePiece one is written below.
            vocab_file=vocab_file if config.vocab and not (byte_pairs or sentencepiece) else None,
            settings={
                "lowercase": config.lowercase,
                "max_seq_length": config.max_seq_length,
                "split_special_tokens": config.split_special_tokens,
            },
        )
        if byte_pairs:
            write_tokenizer_files(os.path.dirname(os.path.abspath(vocab_file)), config.model_dir)
        if sentencepiece:  # the .model and how to read it (tokenizer_config.json), as load_tokenizer finds them
            save_sentencepiece_tokenizer(tokenizer, config.model_dir)
        if metrics:  # none when the loop found the run complete
            log("Final: " + ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()))
        log(
            f"Model directory: {config.model_dir} (bert_config.json, "
            f"{'vocab.json, merges.txt' if byte_pairs else SENTENCEPIECE_FILES[tokenizer.family] if sentencepiece else 'vocab.txt'}, "
            f"bert_model.ckpt, bert_tf.json; TensorBoard logs in {os.path.join(config.model_dir, 'logs')})"
        )
        if config.fill_mask:
            log("Fill-mask:")
            results = fill_mask(
                pretrainer,
                vocab_file,
                config.fill_mask,
                config.lowercase,
                config.max_seq_length,
                model_type=config.model_type,
            )
            for line in format_fill_mask(results):
                log(line)
    return metrics
