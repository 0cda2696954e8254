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
import sys

from absl import app, flags

from bert_tf.apps import common_flags, launch, training_errors, training_flags
from bert_tf.training import distill, distillation
from bert_tf.training.distillation import check_config

FLAGS = flags.FLAGS
training_flags.define_training_flags()
flags.adopt_module_key_flags(training_flags)
# The run config of the registered tasks: a flag for each option of `DistillRun` and of every distillable task's
# `options`.
DistillConfig = distillation.config_class()
training_flags.define_config_flags(DistillConfig, sys.modules[__name__])


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
    config = training_flags.config_from_flags(DistillConfig, sys.modules[__name__])
    return dataclasses.replace(config, student_layers=_student_layers())


def _validate():
    """Checks every flag before any side effect; returns `--teacher`'s `checkpoints.ModelDirectory` (a directory, a
    TF1 checkpoint prefix or a Hugging Face Hub id, read once: `common_flags.check_checkpoint_dir`)."""
    training_flags.require_flags("teacher", "model_dir")
    if bool(FLAGS.train_file) == bool(FLAGS.corpus):
        raise app.UsageError(
            "Give exactly one of --train_file (task distillation of a fine-tuned teacher) and --corpus (general "
            f"distillation of a teacher with its masked-LM head). Received: --train_file={FLAGS.train_file}, "
            f"--corpus={','.join(FLAGS.corpus or [])}"
        )
    training_flags.check_input_files("train_file", "eval_file")
    teacher = common_flags.check_checkpoint_dir("teacher")
    try:
        check_config(_config())
    except ValueError as e:  # the config's fields are the flags of the same name
        raise app.UsageError(str(e)) from None
    training_flags.validate_training_flags()
    if FLAGS.corpus and FLAGS.train_steps == 0:
        raise app.UsageError("--corpus runs are sized by --train_steps (> 0), as bert-tf-pretrain's.")
    if FLAGS.epochs == 0 and FLAGS.train_steps == 0:
        raise app.UsageError("Set --epochs > 0 or --train_steps > 0.")
    return teacher


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    teacher = _validate()
    strategy = training_flags.training_strategy()
    config = dataclasses.replace(_config(), teacher=teacher)  # --teacher as read once (an id's snapshot included)
    return training_errors.run_task_training(
        "bert-tf-distill", lambda: distill(config, strategy=strategy), FLAGS.model_dir
    )


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
