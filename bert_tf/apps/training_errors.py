"""The training apps' one-line errors: the known failures of a training run, and what a run that could not write
its disk keeps.

The training apps (bert-tf-pretrain, -finetune, -distill) run their library
call through `run_training`, which prints a storage error as `errors.py` does
(with the checkpoints kept) and turns the training loop's own errors into one
line too. Only the training apps import it: the read-only apps load nothing of
`bert_tf.training`.
"""

import json
import os
import sys

from bert_tf.apps.errors import STORAGE_ERRORS, storage_error
from bert_tf.training.trainer import (
    NonFiniteLossError,
    ResumeError,
    TrainingInterrupted,
    WorkerLostError,
    checkpoints_in,
)


def kept_checkpoints(model_dir):
    """What a training run in `model_dir` keeps: its checkpoints (the newest resumes), or that there is none."""
    directory = os.path.join(model_dir, "checkpoints")
    prefixes = checkpoints_in(directory)
    if not prefixes:
        return f"no checkpoint was saved in {directory}"
    return (
        f"kept: {len(prefixes)} checkpoint{'s' if len(prefixes) > 1 else ''} in {directory}, "
        f"newest {os.path.basename(prefixes[-1])}; "
        "the same command resumes from it"
    )


def run_training(program, train, model_dir, plain_errors=()):
    """Runs `train()` (a training library call) and prints its known failures as one line on stderr.

    Args:
        program: the command's name, first on the line.
        model_dir: the run's directory (a storage error says which checkpoints it keeps).
        plain_errors: more exception types printed as their message (e.g. `FileNotFoundError` of an input
            file, which would otherwise read as a storage error).
    Returns:
        `(exit code, train()'s result or None)`: 0 on success; the signal's code (143, 130) when a signal stopped
        the run (saved at the current step); 1 for a refused resume, a non-finite loss, a lost worker, a bad
        setting (ValueError) or a disk that cannot be written.
    """
    try:
        return 0, train()
    except TrainingInterrupted as e:  # SIGTERM/SIGINT: saved at the current step
        print(f"{program}: error: {e}", file=sys.stderr)
        return e.exit_code, None
    except (ResumeError, NonFiniteLossError, WorkerLostError, ValueError, *plain_errors) as e:
        print(f"{program}: error: {e}", file=sys.stderr)
        return 1, None
    except STORAGE_ERRORS as e:  # a read-only, full or missing disk
        print(storage_error(program, e, kept_checkpoints(model_dir)), file=sys.stderr)
        return 1, None


def run_task_training(program, train, model_dir):
    """`run_training` for a run that keeps its best evaluation in `model_dir` (fine-tuning, distillation): prints
    the best evaluation (or that there was no evaluation data) and the model directory; returns the exit code."""
    code, results = run_training(program, train, model_dir, plain_errors=(FileNotFoundError,))
    if code:
        return code
    print("Best evaluation: " + json.dumps(results, sort_keys=True) if results else "Done (no evaluation data).")
    print(f"Model directory: {model_dir}")
    return 0
