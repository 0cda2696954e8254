"""bert-tf-distill: distil a fine-tuned model (classification, regression, NER, QA) or a pretrained masked LM into a
smaller, faster student.

    bert-tf-distill --teacher=runs/sst2 --student_layers=0,2,4 --glue_task=sst2 \\
        --train_file=SST-2/train.tsv --eval_file=SST-2/dev.tsv --model_dir=runs/sst2-student
    bert-tf-distill --teacher=runs/recipes/bert --student_layers=0,2 --corpus='corpus/*/*' \\
        --train_steps=10000 --hard_weight=1 --model_dir=runs/bert-general-student

`--teacher` is a fine-tuned task model directory (the output of
bert-tf-finetune, or a Hugging Face `...ForSequenceClassification`,
`...ForTokenClassification`, `...ForQuestionAnswering` directory): its task,
labels and tokenizer are the student's. The student is the teacher's
embeddings, the layers `--student_layers` and its task head (DistilBERT's
initialisation), or a new model `--student_model` (a preset or a
bert_config.json, any width) with the teacher's vocabulary. The data flags are
bert-tf-finetune's. The losses: soft targets at `--temperature` (scaled by its
square), hard labels, hidden states through a learned projection and attention
maps over uniformly mapped layers (TinyBERT), cosine on the last hidden states
(DistilBERT), each with its `--*_weight`. After every epoch the student is
scored with the task's official metric; the best student, `eval_results.json`
and the predictions stay in `--model_dir` (bert-tf-export serves it).
Re-running the same command continues from the newest checkpoint.
`--precompute_teacher` computes the teacher's outputs once over the training
set (in `--model_dir/teacher_outputs`) so the training step runs no teacher.

General distillation (`--corpus`, DistilBERT's and TinyBERT's general stage):
`--teacher` is a pretrained encoder with its masked-LM head; the student
(`--student_layers`: the teacher's embeddings, layers and masked-LM head, or
`--student_model`) learns masked LM on the corpus (bert-tf-pretrain's masking
flags, no sentence objective) from the teacher's soft targets at the masked
positions, plus `--hard_weight` times the masked-LM cross-entropy and the
hidden/attention/cosine losses; `--train_steps` sizes the run. Every
`--eval_interval` steps the student's held-out masked-LM accuracy (and once
the teacher's) is measured; the best student stays in `--model_dir` as a
pretraining model directory with its `eval_results.json`, which
bert-tf-finetune `--init`, bert-tf-distill `--teacher` and bert-tf-export read.
"""

import dataclasses
import os
import sys

from absl import app, flags

from bert_tf.apps import common_flags, errors, launch
from bert_tf.config import PRESETS
from bert_tf.data.classification import FORMATS as FILE_FORMATS
from bert_tf.data.pretraining import FORMATS as PRETRAINING_FORMATS
from bert_tf.data.pretraining import MASKINGS, PACKINGS
from bert_tf.data.tagging import SCHEMES
from bert_tf.layers.dense_head import HEAD_INITIALIZERS
from bert_tf.training import (
    DistillConfig,
    distill,
)
from bert_tf.training.distillation import check_config, distill_tasks

FLAGS = flags.FLAGS
common_flags.define_training_flags()
flags.adopt_module_key_flags(common_flags)

flags.DEFINE_string(
    "teacher",
    None,
    "The teacher. With --train_file: a fine-tuned bert_tf model directory of a task (bert-tf-finetune's output) or a "
    "Hugging Face ...ForSequenceClassification / ForTokenClassification / ForQuestionAnswering directory. With "
    "--corpus: a pretrained encoder with its masked-LM head (bert-tf-pretrain's output, a Hugging Face "
    "...ForMaskedLM / ...ForPreTraining directory, a TF1 checkpoint with cls/predictions).",
)
flags.DEFINE_list(
    "student_layers",
    None,
    "The student from teacher layers: 0-based indices of the layers to copy (e.g. 0,2,4), with the teacher's "
    "embeddings and task head (--corpus: masked-LM head). Exclusive with --student_model.",
)
flags.DEFINE_string(
    "student_model",
    None,
    f"The student as a new model: a preset ({', '.join(PRESETS)}) or a bert_config.json (any width; the teacher's "
    "vocabulary). Exclusive with --student_layers.",
)
flags.DEFINE_enum(
    "task",
    None,
    list(distill_tasks()),
    "The task; default: the teacher's (another value is refused).",
    allow_override=True,
)
flags.DEFINE_float(
    "temperature", 2.0, "Softmax temperature of the soft targets (their loss is scaled by its square); > 0."
)
flags.DEFINE_float("soft_weight", 1.0, "Weight of the soft-target loss (KL to the teacher's outputs).", lower_bound=0.0)
flags.DEFINE_float(
    "hard_weight",
    0.0,
    "Weight of the hard-label cross-entropy (the task's own loss; --corpus: the masked-LM cross-entropy).",
    lower_bound=0.0,
)
flags.DEFINE_float(
    "hidden_weight",
    0.0,
    "Weight of the hidden-state MSE over mapped layers (through a learned projection when the widths differ).",
    lower_bound=0.0,
)
flags.DEFINE_float(
    "attention_weight",
    0.0,
    "Weight of the attention-probability MSE over mapped layers (the student needs the teacher's head count).",
    lower_bound=0.0,
)
flags.DEFINE_float(
    "cosine_weight", 0.0, "Weight of the cosine loss on the last hidden states (DistilBERT).", lower_bound=0.0
)
flags.DEFINE_string(
    "train_file",
    None,
    "Task distillation: training data file, or tfds:NAME[:SPLIT]. Exclusive with --corpus.",
    allow_override=True,
)
flags.DEFINE_bool(
    "precompute_teacher",
    False,
    "Task distillation: compute the teacher's outputs once over the training set (kept in "
    "--model_dir/teacher_outputs, reused on resume) and train without running the teacher in the step. Soft and "
    "hard losses only.",
)
flags.DEFINE_list(
    "corpus",
    None,
    "General distillation: text files or globs (comma-separated) for masked LM, with a --teacher that has its "
    "masked-LM head (bert-tf-pretrain's output, a Hugging Face ...ForMaskedLM/...ForPreTraining directory, a TF1 "
    "checkpoint with cls/predictions). Exclusive with --train_file; sized by --train_steps.",
)
flags.DEFINE_enum(
    "corpus_format",
    "lines",
    PRETRAINING_FORMATS,
    "--corpus: lines (one sentence per line, blank line between documents) or paragraphs (one document per line).",
)
flags.DEFINE_integer(
    "group_size", 16, "--corpus: documents per group; every 20th group is held out for evaluation.", lower_bound=1
)
flags.DEFINE_integer("shuffle_buffer", 10_000, "--corpus: examples shuffled together (1: none).", lower_bound=1)
flags.DEFINE_enum(
    "packing", "full_sentences", list(PACKINGS), "--corpus: how sentences fill an example (as bert-tf-pretrain's)."
)
flags.DEFINE_enum("masking", "token", list(MASKINGS), "--corpus: token, whole_word or span masking.")
flags.DEFINE_float("masking_rate", 0.15, "--corpus: share of tokens masked.", lower_bound=0.0)
flags.DEFINE_integer(
    "max_predictions_per_seq",
    None,
    "--corpus: masked-LM slots per example (default: ceil(masking_rate * max_seq_length)).",
    lower_bound=1,
)
flags.DEFINE_float("span_geometric_p", 0.2, "--corpus, --masking=span: span lengths ~ Geometric(p).")
flags.DEFINE_integer("max_span_length", 10, "--corpus, --masking=span: longest span in words.", lower_bound=1)
flags.DEFINE_integer(
    "eval_steps", 20, "--corpus: held-out batches (of --eval_batch_size) per evaluation (0: none).", lower_bound=0
)
flags.DEFINE_integer(
    "eval_interval",
    500,
    "--corpus: steps between held-out evaluations (each keeps the student if its masked-LM accuracy is the best).",
    lower_bound=1,
)
flags.DEFINE_string(
    "eval_file", None, "Evaluation data file, or tfds:NAME[:SPLIT] (default split: validation).", allow_override=True
)
flags.DEFINE_string(
    "model_dir", None, "Checkpoints, logs, the best student, eval_results.json and predictions.", allow_override=True
)
flags.DEFINE_string(
    "text_column", None, "Text column: header name, or 0-based index for header-less files.", allow_override=True
)
flags.DEFINE_string("text_pair_column", None, "Second text column of pair tasks (name or index).", allow_override=True)
flags.DEFINE_string("label_column", None, "Label column (name or index).", allow_override=True)
flags.DEFINE_string(
    "glue_task",
    None,
    "GLUE file layout (sst2, mrpc, cola, stsb, qqp, mnli, qnli, rte, wnli): sets the columns, header and label names.",
    allow_override=True,
)
flags.DEFINE_list(
    "label_names", None, "Classification labels in id order, as the files hold them.", allow_override=True
)
flags.DEFINE_enum(
    "file_format", None, FILE_FORMATS, "Data file format (default: from the extension).", allow_override=True
)
flags.DEFINE_integer("tag_column", -1, "NER: the tag column of the CoNLL file.", allow_override=True)
flags.DEFINE_enum("tag_scheme", "auto", SCHEMES, "NER: tag scheme of the CoNLL files.", allow_override=True)
flags.DEFINE_integer(
    "max_seq_length", 128, "Tokens per example (window for NER and QA).", lower_bound=8, allow_override=True
)
flags.DEFINE_integer("doc_stride", 128, "QA: context tokens between window starts.", lower_bound=1, allow_override=True)
flags.DEFINE_integer("max_query_length", 64, "QA: question tokens kept.", lower_bound=1, allow_override=True)
flags.DEFINE_integer("n_best_size", 20, "QA: start and end candidates per window.", lower_bound=1, allow_override=True)
flags.DEFINE_integer("max_answer_length", 30, "QA: longest answer in tokens.", lower_bound=1, allow_override=True)
flags.DEFINE_float(
    "null_score_diff_threshold",
    0.0,
    "QA, SQuAD v2.0: answer nothing when the null score beats the best span by more than this.",
    allow_override=True,
)
flags.DEFINE_integer(
    "eval_every_nth_article",
    0,
    "QA on SQuAD files, without --eval_file: hold out every n-th article of --train_file for evaluation.",
    lower_bound=0,
    allow_override=True,
)
flags.DEFINE_float(
    "epochs", 3.0, "Training epochs (ignored when --train_steps is set).", lower_bound=0.0, allow_override=True
)
flags.DEFINE_integer("train_steps", 0, "Optimizer steps; 0 uses --epochs.", lower_bound=0, allow_override=True)
flags.DEFINE_integer(
    "max_train_examples",
    0,
    "Train on a seeded random subset of this many examples (0: all).",
    lower_bound=0,
    allow_override=True,
)
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.", lower_bound=0.0, allow_override=True)
flags.DEFINE_float(
    "warmup_proportion",
    0.1,
    "Share of the steps with linear warmup; then linear decay to zero.",
    lower_bound=0.0,
    upper_bound=1.0,
    allow_override=True,
)
flags.DEFINE_float(
    "dropout",
    None,
    "The student's dropout (default: the teacher's config, or --student_model's).",
    lower_bound=0.0,
    upper_bound=1.0,
    allow_override=True,
)
flags.DEFINE_enum(
    "head_initializer",
    None,
    HEAD_INITIALIZERS,
    "A --student_model's new task head's kernel (default: the task's). Students from teacher layers copy the head.",
    allow_override=True,
)
flags.DEFINE_integer(
    "evals_per_epoch", 1, "Evaluations (and checkpoints) per epoch.", lower_bound=1, allow_override=True
)
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
    "Training checkpoints kept (for resuming; the best student is kept apart in --model_dir).",
    lower_bound=1,
    allow_override=True,
)
flags.DEFINE_integer("eval_batch_size", 64, "Batch size of evaluation.", lower_bound=1, allow_override=True)
flags.DEFINE_string("tfds_data_dir", None, "TensorFlow Datasets data directory for tfds: inputs.", allow_override=True)
flags.DEFINE_bool(
    "split_special_tokens",
    None,
    "Read [MASK], [SEP], ... written in the data as text (true) or as their single ids (false); default: as the "
    "--teacher directory's bert_tf.json says.",
    allow_override=True,
)
flags.DEFINE_integer("seed", 0, "Seed for initialization, shuffling and dropout.", allow_override=True)


def _student_layers():
    """`--student_layers` as ints, or None; UsageError naming the flag for a value that is not one."""
    values = FLAGS.student_layers
    if values is None:
        return None
    try:
        return [int(v) for v in values]
    except ValueError:
        raise app.UsageError(
            f"--student_layers must be comma-separated layer indices (e.g. 0,2,4). Received: "
            f"--student_layers={','.join(values)}"
        ) from None


def _config():
    """The run's `DistillConfig`: each flag is the field of the same name (checked both ways)."""
    config = common_flags.config_from_flags(DistillConfig, sys.modules[__name__])
    return dataclasses.replace(config, student_layers=_student_layers())


def _validate():
    for name in ("teacher", "model_dir"):
        if not FLAGS[name].value:
            raise app.UsageError(f"--{name} is required.")
    if bool(FLAGS.train_file) == bool(FLAGS.corpus):
        raise app.UsageError(
            "Give exactly one of --train_file (task distillation of a fine-tuned teacher) and --corpus (general "
            f"distillation of a teacher with its masked-LM head). Received: --train_file={FLAGS.train_file}, "
            f"--corpus={','.join(FLAGS.corpus or [])}"
        )
    for name in ("train_file", "eval_file"):
        value = FLAGS[name].value
        if value and not value.startswith("tfds:") and not os.path.exists(value):
            raise app.UsageError(f"--{name} does not exist. Received: --{name}={value}")
    common_flags.check_checkpoint_dir("teacher")
    try:
        check_config(_config())
    except ValueError as e:  # the config's fields are the flags of the same name
        raise app.UsageError(str(e)) from None
    common_flags.validate_training_flags()
    if FLAGS.corpus and FLAGS.train_steps == 0:
        raise app.UsageError("--corpus runs are sized by --train_steps (> 0), as bert-tf-pretrain's.")
    if FLAGS.epochs == 0 and FLAGS.train_steps == 0:
        raise app.UsageError("Set --epochs > 0 or --train_steps > 0.")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    _validate()
    strategy = common_flags.training_strategy()
    return errors.run_task_training("bert-tf-distill", lambda: distill(_config(), strategy=strategy), FLAGS.model_dir)


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
