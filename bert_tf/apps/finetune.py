"""bert-tf-finetune: fine-tune any BERT for classification, regression, NER, extractive QA or sentence embeddings.

    bert-tf-finetune --task=classification --init=path/to/bert --glue_task=sst2 \\
        --train_file=SST-2/train.tsv --eval_file=SST-2/dev.tsv --model_dir=runs/sst2

`--init` is anything `load_encoder` reads: a bert_tf model directory (e.g. the
output of bert-tf-pretrain), a Hugging Face BERT directory, a Google TF1
checkpoint or a Hugging Face Hub id (`--init=google-bert/bert-base-uncased`,
`org/name@revision`: read from huggingface_hub's cache, fetched first unless
HF_HUB_OFFLINE=1). Data files: TSV/CSV/JSONL (classification, regression), CoNLL
column files (ner), SQuAD v1.1/v2.0 JSON (squad), text pairs in TSV/CSV/JSONL or
SQuAD JSON (embedding), or `tfds:NAME[:SPLIT]`.
After every epoch the evaluation file is scored with the task's official
metric; the best weights, `eval_results.json` and the predictions stay in
`--model_dir`. Re-running the same command continues from the newest checkpoint.
"""

import dataclasses
import sys

from absl import app, flags

from bert_tf import tasks
from bert_tf.apps import common_flags, launch, training_errors, training_flags
from bert_tf.training import finetune, finetuning

FLAGS = flags.FLAGS
training_flags.define_training_flags()
flags.adopt_module_key_flags(training_flags)
# The run config of the registered tasks: a flag for each option of `FinetuneRun` and of every task's `options`.
FinetuneConfig = finetuning.config_class()
training_flags.define_config_flags(FinetuneConfig, sys.modules[__name__])


def _validate():
    """Checks every flag before any side effect; returns `--init`'s `checkpoints.ModelDirectory` (a directory, a
    TF1 checkpoint prefix or a Hugging Face Hub id, read once: `common_flags.check_checkpoint_dir`)."""
    training_flags.require_flags("task", "init", "train_file", "model_dir")
    training_flags.check_input_files("train_file", "eval_file", "eval_corpus")
    check = tasks.get(FLAGS.task).check_config
    if check is not None:
        try:
            check(_config())
        except ValueError as e:  # the config's fields are the flags of the same name
            raise app.UsageError(str(e)) from None
    training_flags.validate_training_flags()
    if FLAGS.epochs == 0 and FLAGS.train_steps == 0:
        raise app.UsageError("Set --epochs > 0 or --train_steps > 0.")
    return common_flags.check_checkpoint_dir("init")  # last: the flags alone are checked before anything is read


def _config():
    """The run's `FinetuneConfig`: each flag is the field of the same name (checked both ways)."""
    return training_flags.config_from_flags(FinetuneConfig, sys.modules[__name__])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    init = _validate()
    strategy = training_flags.training_strategy()
    config = dataclasses.replace(_config(), init=init)  # --init as read once (an id's snapshot included)
    return training_errors.run_task_training(
        "bert-tf-finetune", lambda: finetune(config, strategy=strategy), FLAGS.model_dir
    )


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
