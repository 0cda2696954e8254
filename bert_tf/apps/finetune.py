"""bert-tf-finetune: fine-tune any BERT for classification, regression, NER, extractive QA or sentence embeddings.

    bert-tf-finetune --task=classification --init=path/to/bert --glue_task=sst2 \\
        --train_file=SST-2/train.tsv --eval_file=SST-2/dev.tsv --model_dir=runs/sst2

`--init` is anything `load_encoder` reads: a bert_tf model directory (e.g. the
output of bert-tf-pretrain), a Hugging Face BERT directory or a Google TF1
checkpoint. Data files: TSV/CSV/JSONL (classification, regression), CoNLL
column files (ner), SQuAD v1.1/v2.0 JSON (squad), text pairs in TSV/CSV/JSONL or
SQuAD JSON (embedding), or `tfds:NAME[:SPLIT]`.
After every epoch the evaluation file is scored with the task's official
metric; the best weights, `eval_results.json` and the predictions stay in
`--model_dir`. Re-running the same command continues from the newest checkpoint.
"""

import os
import sys

from absl import app, flags

from bert_tf import tasks
from bert_tf.apps import common_flags, errors, launch
from bert_tf.data.classification import FORMATS as FILE_FORMATS
from bert_tf.data.tagging import SCHEMES
from bert_tf.layers import POOLING_MODES
from bert_tf.layers.dense_head import HEAD_INITIALIZERS
from bert_tf.training import (
    FinetuneConfig,
    finetune,
)

FLAGS = flags.FLAGS
common_flags.define_training_flags()
flags.adopt_module_key_flags(common_flags)

flags.DEFINE_enum("task", None, list(tasks.names()), "The task (one registered in bert_tf.tasks).")
flags.DEFINE_string(
    "init",
    None,
    "Checkpoint to start from: a bert_tf model directory, a Hugging Face BERT directory or an original TF1 checkpoint.",
)
flags.DEFINE_string("train_file", None, "Training data file, or tfds:NAME[:SPLIT].")
flags.DEFINE_string("eval_file", None, "Evaluation data file, or tfds:NAME[:SPLIT] (default split: validation).")
# allow_override: pretrain and export define model_dir, max_seq_length, learning_rate, train_steps, seed and the QA
# window flags with their own help or default (a process importing several apps keeps the last definition; each
# bert-tf-* command imports only its own app).
flags.DEFINE_string(
    "model_dir", None, "Checkpoints, logs, the best model, eval_results.json and predictions.", allow_override=True
)
flags.DEFINE_string("text_column", None, "Text column: header name, or 0-based index for header-less files.")
flags.DEFINE_string("text_pair_column", None, "Second text column of pair tasks (name or index).")
flags.DEFINE_string("label_column", None, "Label column (name or index); embedding: the pair's similarity score.")
flags.DEFINE_string(
    "negative_column",
    None,
    "Embedding: the hard negative's column of (anchor, positive, negative) rows (name or index).",
)
flags.DEFINE_list(
    "pooling",
    None,
    f"Embedding: the sentence embedding's pooling, one of {list(POOLING_MODES)} or several (concatenated), "
    "e.g. cls,mean. Default: --init's (a sentence-transformers folder's, else mean).",
)
flags.DEFINE_string(
    "eval_corpus",
    None,
    "Embedding: passages added to the retrieval evaluation's corpus (besides the evaluation's positives): a text "
    "file, one passage per line, or TSV/CSV/JSONL with the passages in --text_pair_column.",
)
flags.DEFINE_string(
    "glue_task",
    None,
    "GLUE file layout (sst2, mrpc, cola, stsb, qqp, mnli, qnli, rte, wnli): sets the columns, header and label names.",
)
flags.DEFINE_list(
    "label_names",
    None,
    "Classification labels in id order, as the files hold them (default: the training file's labels, or the "
    "--glue_task's label names, e.g. negative,positive for sst2, whose files hold 0,1).",
)
flags.DEFINE_enum("file_format", None, FILE_FORMATS, "Data file format (default: from the extension).")
flags.DEFINE_integer("tag_column", -1, "NER: the tag column of the CoNLL file.")
flags.DEFINE_enum("tag_scheme", "auto", SCHEMES, "NER: tag scheme of the CoNLL files.")
flags.DEFINE_integer(
    "max_seq_length", 128, "Tokens per example (window for NER and QA).", lower_bound=8, allow_override=True
)
flags.DEFINE_integer("doc_stride", 128, "QA: context tokens between window starts.", lower_bound=1, allow_override=True)
flags.DEFINE_integer("max_query_length", 64, "QA: question tokens kept.", lower_bound=1, allow_override=True)
flags.DEFINE_integer("n_best_size", 20, "QA: start and end candidates per window.", lower_bound=1)
flags.DEFINE_integer("max_answer_length", 30, "QA: longest answer in tokens.", lower_bound=1, allow_override=True)
flags.DEFINE_float(
    "null_score_diff_threshold",
    0.0,
    "QA, SQuAD v2.0: answer nothing when the null score beats the best span by more than this.",
)
flags.DEFINE_integer(
    "eval_every_nth_article",
    0,
    "QA and embedding on SQuAD files, without --eval_file: hold out every n-th article of "
    "--train_file for evaluation (5 = an 80/20 split by article).",
    lower_bound=0,
)
flags.DEFINE_float("epochs", 3.0, "Training epochs (ignored when --train_steps is set).", lower_bound=0.0)
flags.DEFINE_integer("train_steps", 0, "Optimizer steps; 0 uses --epochs.", lower_bound=0, allow_override=True)
flags.DEFINE_integer(
    "max_train_examples", 0, "Train on a seeded random subset of this many examples (0: all).", lower_bound=0
)
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.", lower_bound=0.0, allow_override=True)
flags.DEFINE_float(
    "warmup_proportion",
    0.1,
    "Share of the steps with linear warmup; then linear decay to zero.",
    lower_bound=0.0,
    upper_bound=1.0,
)
flags.DEFINE_float(
    "dropout", None, "Encoder dropout (default: the checkpoint's config).", lower_bound=0.0, upper_bound=1.0
)
flags.DEFINE_enum(
    "head_initializer",
    None,
    HEAD_INITIALIZERS,
    "The new task head's kernel: glorot_uniform (Keras'), or bert (truncated normal, the encoder's "
    "initializer_range). Default: the task's (glorot_uniform for the built-in tasks).",
)
flags.DEFINE_integer("evals_per_epoch", 1, "Evaluations (and checkpoints) per epoch.", lower_bound=1)
flags.DEFINE_integer(
    "checkpoint_steps",
    0,
    "Steps between training checkpoints (0: at each evaluation).",
    lower_bound=0,
    allow_override=True,
)
flags.DEFINE_integer(
    "keep_checkpoints",
    1,
    "Training checkpoints kept (for resuming; the best model is kept apart in --model_dir).",
    lower_bound=1,
    allow_override=True,
)
flags.DEFINE_integer("eval_batch_size", 64, "Batch size of evaluation.", lower_bound=1)
flags.DEFINE_string("tfds_data_dir", None, "TensorFlow Datasets data directory for tfds: inputs.")
flags.DEFINE_bool(
    "split_special_tokens",
    None,
    "Read [MASK], [SEP], ... written in the data as text (true) or as their single ids (false); default: as the "
    "--init directory's bert_tf.json says (Hugging Face and TF1 checkpoints: false, as Hugging Face's tokenizers). "
    "Recorded in the model directory's bert_tf.json, which the export follows.",
    allow_override=True,
)
flags.DEFINE_integer("seed", 0, "Seed for initialization, shuffling and dropout.", allow_override=True)


def _validate():
    for name in ("task", "init", "train_file", "model_dir"):
        if not FLAGS[name].value:
            raise app.UsageError(f"--{name} is required.")
    for name in ("init", "train_file", "eval_file", "eval_corpus"):
        value = FLAGS[name].value
        if value and not value.startswith("tfds:") and not os.path.exists(value):
            raise app.UsageError(f"--{name} does not exist. Received: --{name}={value}")
    check = tasks.get(FLAGS.task).check_config
    if check is not None:
        try:
            check(_config())
        except ValueError as e:  # the config's fields are the flags of the same name
            raise app.UsageError(str(e)) from None
    common_flags.validate_training_flags()
    if FLAGS.epochs == 0 and FLAGS.train_steps == 0:
        raise app.UsageError("Set --epochs > 0 or --train_steps > 0.")


def _config():
    """The run's `FinetuneConfig`: each flag is the field of the same name (checked both ways)."""
    return common_flags.config_from_flags(FinetuneConfig, sys.modules[__name__])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    _validate()
    strategy = common_flags.training_strategy()
    return errors.run_task_training("bert-tf-finetune", lambda: finetune(_config(), strategy=strategy), FLAGS.model_dir)


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
