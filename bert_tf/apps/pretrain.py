"""bert-tf-pretrain: pretrain BERT (masked LM + NSP) from raw text, under any tf.distribute strategy.

    bert-tf-pretrain --model_dir=runs/mini --corpus='corpus/*.txt' --model=mini --train_steps=10000

Without --corpus it trains on an offline default corpus (Python's own
documentation); without --vocab it builds a vocabulary from the corpus.
Re-running the same command continues from the newest checkpoint.
"""

import os
import sys

from absl import app, flags, logging

from bert_tf.apps import common_flags

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported

FLAGS = flags.FLAGS
common_flags.define_training_flags()
flags.adopt_module_key_flags(common_flags)
flags.DEFINE_list("corpus", [], "Text files or globs (comma-separated). Empty: the offline default corpus.")
flags.DEFINE_enum(
    "corpus_format",
    "lines",
    ["lines", "paragraphs"],
    "lines: one sentence per line, blank line between documents; paragraphs: one document per line.",
)
flags.DEFINE_integer(
    "group_size", 16, "Documents per pair-building group; every 20th group is held out for evaluation.", lower_bound=2
)
flags.DEFINE_string("vocab", None, "vocab.txt; built from the corpus into model_dir when absent.")
flags.DEFINE_integer("vocab_size", 8000, "Size of a vocabulary built on the fly.", lower_bound=6)
flags.DEFINE_bool("lowercase", True, "Uncased tokenization.")
flags.DEFINE_string("model", "mini", "Preset (tiny, mini, small, medium, base, large) or a bert_config.json path.")
# allow_override: finetune and export define these names with their own help or default (a process importing
# several apps keeps the last definition; each bert-tf-* command imports only its own app).
flags.DEFINE_string("model_dir", None, "Checkpoints, logs and the final model directory go here.", allow_override=True)
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example.", lower_bound=8, allow_override=True)
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per example.", lower_bound=1)
flags.DEFINE_float("masking_rate", 0.15, "Share of tokens masked.")
flags.DEFINE_bool("whole_word_masking", False, "Mask all pieces of a word together.")
flags.DEFINE_bool("nsp", True, "Next-sentence prediction.")
flags.DEFINE_integer(
    "train_steps", 1000, "Total optimizer steps.", lower_bound=1, allow_override=True
)  # finetune: 0 (use --epochs)
flags.DEFINE_float("learning_rate", 1e-4, "Peak learning rate.", lower_bound=0.0, allow_override=True)  # finetune: 5e-5
flags.DEFINE_integer("warmup_steps", 100, "Linear warmup steps, then linear decay to zero.", lower_bound=0)
flags.DEFINE_integer("grad_accum_steps", 1, "Micro-batches per step.", lower_bound=1)
flags.DEFINE_integer("checkpoint_steps", 500, "Steps between checkpoints.", lower_bound=1)
flags.DEFINE_integer("keep_checkpoints", 3, "Checkpoints kept.", lower_bound=1)
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
    ["The [MASK] of the function is returned.", "This module provides [MASK] for files."],
    "Sentences with [MASK] to complete with the trained model at the end.",
)


def _validate():
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    if FLAGS.vocab and not os.path.isfile(FLAGS.vocab):
        raise app.UsageError(f"--vocab does not exist. Received: --vocab={FLAGS.vocab}")
    if not 0.0 < FLAGS.masking_rate <= 1.0:
        raise app.UsageError(f"--masking_rate must be in (0, 1]. Received: --masking_rate={FLAGS.masking_rate}")
    if FLAGS.warmup_steps > FLAGS.train_steps:
        raise app.UsageError(f"--warmup_steps ({FLAGS.warmup_steps}) exceeds --train_steps ({FLAGS.train_steps}).")
    common_flags.validate_training_flags()
    if FLAGS.model not in ("tiny", "mini", "small", "medium", "base", "large") and not os.path.isfile(FLAGS.model):
        raise app.UsageError(f"--model must be a preset or a bert_config.json path. Received: --model={FLAGS.model}")
    from bert_tf.text.vocab import expand_files

    try:
        expand_files(FLAGS.corpus) if FLAGS.corpus else None
    except FileNotFoundError as e:
        raise app.UsageError(f"--corpus: {e}") from None


def _corpus_and_vocab(chief):
    """Corpus files and vocab path, building the default corpus and the vocab when needed."""
    from bert_tf.data.default_corpus import write_default_corpus
    from bert_tf.text.vocab import build_vocab, expand_files

    os.makedirs(FLAGS.model_dir, exist_ok=True)
    corpus_format = FLAGS.corpus_format
    if FLAGS.corpus:
        files = expand_files(FLAGS.corpus)
    else:
        path = os.path.join(FLAGS.model_dir, "default_corpus.txt")
        if chief and not os.path.exists(path):
            print(f"No --corpus: wrote {write_default_corpus(path)} documents of Python documentation to {path}")
        files, corpus_format = [path], "paragraphs"
    vocab = FLAGS.vocab or os.path.join(FLAGS.model_dir, "vocab.txt")
    if not FLAGS.vocab and not os.path.exists(vocab) and chief:
        print(build_vocab(files, vocab, vocab_size=FLAGS.vocab_size, lowercase=FLAGS.lowercase, show_progress=False))
    return files, corpus_format, vocab


def _fill_mask(pretrainer, tokenizer_file, sentences, top_k=5):
    import numpy as np
    import tensorflow as tf

    from bert_tf.text import BertTokenizer
    from bert_tf.text.packing import BertPacker

    tokenizer = BertTokenizer(tokenizer_file, lowercase=FLAGS.lowercase, split_special_tokens=False)
    inputs = BertPacker(FLAGS.max_seq_length, tokenizer.cls_id, tokenizer.sep_id)(
        tokenizer.tokenize(tf.constant(sentences))
    )
    ids = inputs["token_ids"].numpy()
    positions = np.array(
        [[list(row).index(tokenizer.mask_id) if tokenizer.mask_id in row else 0] for row in ids], "int32"
    )
    logits = pretrainer(dict(inputs, mask_positions=tf.constant(positions)))["mlm"].numpy()[:, 0]
    vocab = open(tokenizer_file, encoding="utf-8").read().split("\n")
    for sentence, row in zip(sentences, logits):
        probabilities = np.exp(row - row.max())
        probabilities /= probabilities.sum()
        best = np.argsort(-probabilities)[:top_k]
        print(f"  {sentence}\n    " + ", ".join(f"{vocab[i]} ({probabilities[i]:.2f})" for i in best))


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    _validate()
    logging.set_verbosity(logging.WARNING)  # TensorFlow's per-save INFO lines are noise here
    import hashlib

    import tensorflow as tf

    from bert_tf import BertConfig
    from bert_tf.checkpoints import save_model_dir
    from bert_tf.data.pretraining import EmptyCorpusError, pretraining_dataset
    from bert_tf.models import BertEncoder, BertPretrainer
    from bert_tf.text import BertTokenizer
    from bert_tf.training.distribute import is_chief
    from bert_tf.training.optimization import create_optimizer
    from bert_tf.training.trainer import LoopConfig, NonFiniteLossError, PretrainingLoop, ResumeError

    strategy = common_flags.training_strategy()
    chief = is_chief(strategy)
    files, corpus_format, vocab_file = _corpus_and_vocab(chief)
    tokenizer = BertTokenizer(vocab_file, lowercase=FLAGS.lowercase)
    config = (
        BertConfig.preset(FLAGS.model, vocab_size=tokenizer.vocab_size)
        if not os.path.isfile(FLAGS.model)
        else BertConfig.from_json_file(FLAGS.model)
    )
    if config.vocab_size != tokenizer.vocab_size:
        raise app.UsageError(
            f"--model has vocab_size {config.vocab_size} but --vocab has {tokenizer.vocab_size} pieces."
        )
    if FLAGS.max_seq_length > config.max_position_embeddings:
        raise app.UsageError(
            f"--max_seq_length ({FLAGS.max_seq_length}) exceeds the model's "
            f"max_position_embeddings ({config.max_position_embeddings})."
        )
    dtype = {"float32": None, "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}[FLAGS.dtype]
    with strategy.scope():
        pretrainer = BertPretrainer(BertEncoder.from_bert_config(config, dtype=dtype), nsp=FLAGS.nsp)
        optimizer = create_optimizer(
            FLAGS.optimizer,
            FLAGS.learning_rate,
            FLAGS.train_steps,
            FLAGS.warmup_steps,
            FLAGS.weight_decay,
            clip_norm=0,
            loss_scale=FLAGS.dtype == "float16",
        )

    def dataset_fn(split):
        def make(context):
            return pretraining_dataset(
                files,
                tokenizer,
                seq_length=FLAGS.max_seq_length,
                max_predictions_per_seq=FLAGS.max_predictions_per_seq,
                masking_rate=FLAGS.masking_rate,
                whole_word_masking=FLAGS.whole_word_masking,
                nsp=FLAGS.nsp,
                batch_size=FLAGS.global_batch_size // context.num_input_pipelines,
                seed=FLAGS.seed,
                corpus_format=corpus_format,
                input_context=context,
                split=split,
                max_position_embeddings=config.max_position_embeddings,
                group_size=FLAGS.group_size,
                shuffle_buffer=1 if split == "eval" else 10_000,
            )

        return make

    with open(vocab_file, "rb") as f:
        vocab_sha = hashlib.sha256(f.read()).hexdigest()
    settings = {
        "model": config.to_dict(),
        "vocab_sha256": vocab_sha,
        "max_seq_length": FLAGS.max_seq_length,
        "max_predictions_per_seq": FLAGS.max_predictions_per_seq,
        "global_batch_size": FLAGS.global_batch_size,
        "nsp": FLAGS.nsp,
        "corpus": [os.path.relpath(f) for f in files],
        "seed": FLAGS.seed,
        "corpus_format": corpus_format,
        "group_size": FLAGS.group_size,
        "masking_rate": FLAGS.masking_rate,
        "whole_word_masking": FLAGS.whole_word_masking,
        "lowercase": FLAGS.lowercase,
    }
    loop_config = LoopConfig(
        train_steps=FLAGS.train_steps,
        steps_per_loop=FLAGS.steps_per_loop,
        checkpoint_steps=FLAGS.checkpoint_steps,
        keep_checkpoints=FLAGS.keep_checkpoints,
        eval_steps=FLAGS.eval_steps,
        eval_interval=FLAGS.eval_interval,
        grad_accum_steps=FLAGS.grad_accum_steps,
        clip_norm=FLAGS.clip_norm,
        jit_compile=FLAGS.jit_compile,
        nonfinite_retries=FLAGS.nonfinite_retries,
    )
    eval_fn = None
    if FLAGS.eval_steps:
        try:
            dataset_fn("eval")(tf.distribute.InputContext())
            eval_fn = dataset_fn("eval")
        except EmptyCorpusError as e:
            print(f"No held-out evaluation: {e}")
    try:
        loop = PretrainingLoop(
            strategy,
            pretrainer,
            optimizer,
            dataset_fn("train"),
            FLAGS.global_batch_size,
            FLAGS.model_dir,
            loop_config,
            eval_dataset_fn=eval_fn,
            settings=settings,
        )
        metrics = loop.train()
    except (ResumeError, NonFiniteLossError, ValueError) as e:
        print(f"bert-tf-pretrain: error: {e}", file=sys.stderr)
        return 1
    if chief:
        save_model_dir(
            pretrainer,
            FLAGS.model_dir,
            vocab_file=None if FLAGS.vocab is None else vocab_file,
            settings={"lowercase": FLAGS.lowercase, "max_seq_length": FLAGS.max_seq_length},
        )
        print("Final: " + ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()))
        print(
            f"Model directory: {FLAGS.model_dir} (bert_config.json, vocab.txt, bert_model.ckpt, bert_tf.json; "
            f"TensorBoard logs in {os.path.join(FLAGS.model_dir, 'logs')})"
        )
        if FLAGS.fill_mask:
            print("Fill-mask:")
            _fill_mask(pretrainer, vocab_file, FLAGS.fill_mask)
    return 0


def run():
    app.run(main)


if __name__ == "__main__":
    run()
