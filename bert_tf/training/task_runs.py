"""What fine-tuning and distillation share: a task run's request record, its finished check, its epoch plan and
the evaluation that keeps the best model directory.

A task run (`finetuning.finetune`, `distillation.distill`) trains a task model
with `TrainingLoop`, evaluates it with the task's official metric every
`evals_per_epoch`-th of an epoch, and saves the best evaluation's weights as a
model directory with its `eval_results.json`. Its config fields that decide
what it trains are recorded as the "request" in training_settings.json, so a
re-run of a finished run answers at once, before any data is read.
"""

import dataclasses
import json
import math
import os

import numpy as np

from bert_tf.checkpoints import save_model_dir
from bert_tf.training.distribute import resolve_dtype
from bert_tf.training.trainer import LoopConfig, newest_step, read_training_settings

# Fewer optimizer steps than this get a warning: a classifier then often learns only the most frequent label.
MIN_TRAIN_STEPS = 100
RESULTS_FILE = "eval_results.json"
# Config fields (fine-tuning's and distillation's) that do not change what a run trains: left out of the request
# a finished run is matched on.
NOT_RECORDED = ("model_dir", "steps_per_loop", "eval_batch_size", "jit_compile", "checkpoint_steps", "keep_checkpoints")


def read_results(path):
    """The JSON of a results file; a clear error naming it when it is not valid JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON ({e}); delete it to restart the best-model selection.") from None


def run_request(config, path_fields, kept=(), not_recorded=NOT_RECORDED):
    """The fields of `config` that decide what a run trains, as JSON stores them (in training_settings.json).

    Args:
        path_fields: fields holding files or directories, written relative to the working directory (the project,
            as the loop's settings record them; any spelling of the same file gives the same path, and no machine
            path is stored) unless empty, a `tfds:` name or one of `kept` (e.g. preset names).
        not_recorded: field names left out (they do not change what is trained).

    A `dtype` of "auto" is recorded as the dtype it resolves to on this machine, so a resume on hardware that
    resolves it otherwise is refused as a changed setting, and "auto" matches the dtype it stands for.
    """
    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in not_recorded}
    if "dtype" in fields:
        fields["dtype"] = resolve_dtype(fields["dtype"])
    for name in path_fields:
        value = fields[name]
        if value and not value.startswith("tfds:") and value not in kept:
            fields[name] = os.path.relpath(value)
    return json.loads(json.dumps(fields))


def finished_run(model_dir, request, strategy):
    """(step, best metrics or None) when `model_dir` holds this very run (`request`), finished; else None.

    Decided from training_settings.json and the checkpoint-state file alone, before any data is read or model
    built. Under several workers it answers None (every worker must take the same path; the loop then says so).
    """
    if strategy.num_replicas_in_sync > len(strategy.extended.worker_devices):
        return None
    saved = read_training_settings(model_dir)
    if not saved or saved.get("request") != request or "train_steps" not in saved:
        return None
    step = newest_step(model_dir)
    if step is None or step < saved["train_steps"]:
        return None
    results_file = os.path.join(model_dir, RESULTS_FILE)
    if saved.get("has_eval", True):
        return (step, read_results(results_file)) if os.path.isfile(results_file) else None
    return (step, None) if os.path.isfile(os.path.join(model_dir, "bert_model.ckpt.index")) else None


def train_steps_warning(num_train, global_batch_size, epochs, train_steps, unit="examples"):
    """A warning (a str) when `train_steps` is below `MIN_TRAIN_STEPS`, else None."""
    if train_steps >= MIN_TRAIN_STEPS:
        return None
    return (
        f"Warning: only {train_steps} training steps ({num_train} training {unit}, batch {global_batch_size}, "
        f"{epochs:g} epoch{'' if epochs == 1 else 's'}); fine-tuning usually needs at least {MIN_TRAIN_STEPS} and "
        "may otherwise learn to predict the most frequent label only. Use more --epochs, a smaller "
        "--global_batch_size or more training data (or set --train_steps)."
    )


def epoch_plan(config, num_train, unit="examples"):
    """`(steps_per_epoch, train_steps, warning or None)` of a run over `num_train` training examples.

    `config.train_steps` when set, else `config.epochs` of them (at least one step).
    """
    steps_per_epoch = max(num_train // config.global_batch_size, 1)
    train_steps = config.train_steps or max(int(math.ceil(config.epochs * steps_per_epoch)), 1)
    warning = train_steps_warning(num_train, config.global_batch_size, train_steps / steps_per_epoch, train_steps, unit)
    return steps_per_epoch, train_steps, warning


def model_dir_settings(tokenizer_settings, built_with, config, labels, task):
    """The `bert_tf.json` settings of a task model directory: how its tokenizer reads text and how its model is
    built, its sequence length, label names and task, and the run's `task.recorded_settings` (how it read its
    texts, which the export defaults to), as `config` (a fine-tuning or distillation config) has them."""
    kept = ("lowercase", "strip_accents", "add_prefix_space", "split_special_tokens", "pair_truncation")
    return {
        **{key: tokenizer_settings[key] for key in kept if key in tokenizer_settings},
        **built_with,
        "max_seq_length": config.max_seq_length,
        "labels": labels,
        "task": task.name,
        **{key: getattr(config, key) for key in task.recorded_settings if hasattr(config, key)},
    }


def epoch_loop_config(config, steps_per_epoch, train_steps):
    """The `LoopConfig` of a task run: an evaluation (and a checkpoint, unless `config.checkpoint_steps`) every
    `1 / evals_per_epoch` of an epoch; the initial weights are the run's (--init's, the teacher's), not saved."""
    return interval_loop_config(
        config, train_steps, max(math.ceil(steps_per_epoch / max(config.evals_per_epoch, 1)), 1)
    )


def interval_loop_config(config, train_steps, interval):
    """The `LoopConfig` of a run that evaluates (and checkpoints, unless `config.checkpoint_steps`) every
    `interval` steps, from `config`'s loop fields; the initial weights are not saved."""
    return LoopConfig(
        train_steps=train_steps,
        steps_per_loop=min(config.steps_per_loop, interval),
        checkpoint_steps=config.checkpoint_steps or interval,
        keep_checkpoints=config.keep_checkpoints,
        initial_checkpoint=False,
        eval_interval=interval,
        clip_norm=config.clip_norm,
        jit_compile=config.jit_compile,
    )


def task_best_model(model, data, task, config, chief, steps_per_epoch, model_settings, tokenizer_source):
    """A task run's `BestModel`: the data's best metric (else the task's), saving `model` with `model_settings` and
    the tokenizer files of `tokenizer_source` (the `ModelDirectory` of --init or of the teacher) in
    `config.model_dir`."""

    def save():
        save_model_dir(model, config.model_dir, settings=model_settings)
        tokenizer_source.write_tokenizer_files(config.model_dir)

    metric_name = getattr(data, "best_metric", None) or task.best_metric
    return BestModel(model, data, metric_name, config.model_dir, chief, steps_per_epoch, save)


class BestModel:
    """Evaluates a task model with its data's metric and keeps the best evaluation as the model directory.

    `evaluate(loop)` is the loop's `evaluate_fn`: on the chief, an evaluation
    better than the best so far (`metric_name`, higher is better) calls
    `save()`, writes the data's predictions file and `eval_results.json`
    (with the step and epoch). A resumed run starts from the best recorded.
    """

    def __init__(self, model, data, metric_name, model_dir, chief, steps_per_epoch, save):
        self.model = model
        self.data = data
        self.metric_name = metric_name
        self.model_dir = model_dir
        self.chief = chief
        self.steps_per_epoch = steps_per_epoch
        self.save = save
        self.results_file = os.path.join(model_dir, RESULTS_FILE)
        resuming = os.path.isdir(os.path.join(model_dir, "checkpoints")) and os.path.isfile(self.results_file)
        self.metrics = read_results(self.results_file) if resuming else None

    def evaluate(self, loop):
        results, write = self.data.evaluate(self.model)
        results = {k: float(v) for k, v in results.items() if isinstance(v, (int, float, np.floating, np.integer))}
        previous = self.metrics
        if self.chief and (previous is None or results[self.metric_name] > previous[self.metric_name]):
            self.metrics = dict(results, step=loop.step, epoch=loop.step / self.steps_per_epoch)
            self.save()
            write(self.model_dir)
            with open(self.results_file, "w", encoding="utf-8") as f:
                json.dump(self.metrics, f, indent=2, sort_keys=True)
        return results

    def train(self, loop, has_eval, log=print):
        """Runs `loop`; returns the best evaluation's metrics, or without evaluation data saves the final model
        and returns the last training metrics."""
        metrics = loop.train(log=log)
        if not has_eval:
            if self.chief:
                self.save()
            return metrics
        return self.metrics
