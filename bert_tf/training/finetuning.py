"""Fine-tuning: task data + task model + the distributed `TrainingLoop` + task metrics.

One `FinetuneConfig` describes a run; `finetune(config)` does it:

1. looks the task up in `bert_tf.tasks` (`config.task`) and reads its training
   and evaluation data (files or `tfds:` names) with the task's readers
   (errors name file and line);
2. loads the encoder from `init` (any format `load_encoder` reads) and puts the
   task's model on it (`Task.build_model`: e.g. `BertClassifier`);
3. trains with `TrainingLoop` (any strategy, exact resume from
   `model_dir/checkpoints`), evaluating with the task's official metric after
   every epoch;
4. keeps the best evaluation's weights as a model directory in `model_dir`
   (`bert_config.json`, `vocab.txt`, `bert_tf.json` with task and label names,
   `bert_model.ckpt`) with its `eval_results.json` and predictions file.

The built-in tasks cut batches to their longest row (rounded up to a
multiple of 16, `bert_tf.tasks.common.trim_batch`), so short sentences do not
pay for `max_seq_length`.
"""

import dataclasses
import os

from bert_tf import tasks
from bert_tf.checkpoints import (
    ModelDirectory,
    glob_characters_error,
    restore_weights,
)
from bert_tf.models import build_encoder
from bert_tf.options import compose, option
from bert_tf.training.distribute import create_strategy, dtype_policy, is_chief
from bert_tf.training.optimization import run_optimizer
from bert_tf.training.run_options import Optimization, Schedule, TaskData
from bert_tf.training.task_runs import (
    epoch_loop_config,
    epoch_plan,
    finished_run,
    model_dir_settings,
    run_request,
    task_best_model,
)
from bert_tf.training.trainer import TrainingLoop


@dataclasses.dataclass(kw_only=True)
class FinetuneRun(TaskData, Schedule, Optimization):
    """The options of every fine-tuning run; `FinetuneConfig` adds each registered task's `options`."""

    task: str = option(help="The task (one registered in bert_tf.tasks).", enum=tasks.names)
    init: str = option(
        help="Checkpoint to start from: a bert_tf model directory, a Hugging Face BERT directory, an original TF1 "
        "checkpoint or a Hugging Face Hub id (org/name[@revision])."
    )
    model_dir: str = option(help="Checkpoints, logs, the best model, eval_results.json and predictions.")


def config_class(task_list=None):
    """The `FinetuneConfig` class of `task_list` (default: the registered tasks): `FinetuneRun`'s options and each
    task's own (`Task.options`). The same tasks give the same class."""
    task_list = tasks.registered() if task_list is None else task_list
    return compose(
        "FinetuneConfig",
        (FinetuneRun, *(task.options for task in task_list if task.options is not None)),
        module=__name__,
        doc="A fine-tuning run: `FinetuneRun`'s options and those of the registered tasks (one field per "
        "bert-tf-finetune flag, of the same name and default).",
    )


def __getattr__(name):
    # `FinetuneConfig` is composed from the task registry when asked for (not once at import), so a task registered
    # later, with options of its own, gets its fields.
    if name == "FinetuneConfig":
        return config_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# === The run ===


def _load_encoder(config, init=None):
    init = ModelDirectory.read(init or config.init)
    bert_config = init.config
    if config.dropout is not None:
        bert_config = dataclasses.replace(
            bert_config, hidden_dropout_prob=config.dropout, attention_probs_dropout_prob=config.dropout
        )
    encoder = build_encoder(bert_config, dtype=dtype_policy(config.dtype))
    restore_weights(encoder, init)
    return encoder, bert_config


def _tokenizer(config, max_position_embeddings, init=None):
    """The tokenizer of `config.init` (any kind `checkpoints.load_tokenizer` reads) and the settings it was read with."""
    init = ModelDirectory.read(init or config.init)
    settings = {**init.settings, **init.tokenizer_settings}
    if config.split_special_tokens is not None:
        settings["split_special_tokens"] = config.split_special_tokens
    return init.build_tokenizer(settings), settings


def _request(config):
    """The fields of `config` that decide what a run trains, as JSON stores them (in training_settings.json)."""
    return run_request(config, ("init", "train_file", "eval_file", "eval_corpus"))


def finetune(config, strategy=None, log=print):
    """Runs `config`; returns the best evaluation's metrics (or the last training metrics without eval data).

    The task (`config.task`, a name registered in `bert_tf.tasks`) gives the
    data, the model, the objective and the metric that picks the best
    checkpoint.
    """
    task = tasks.get(config.task)
    init = config.init if isinstance(config.init, ModelDirectory) else None  # `init`: a path or a ModelDirectory
    if init is not None:
        config = dataclasses.replace(config, init=init.name)  # its path, or the Hub id it was read by
    message = glob_characters_error(config.model_dir)
    if message:
        raise ValueError(f"FinetuneConfig: {message}.")
    if config.split_special_tokens is not None and not isinstance(config.split_special_tokens, bool):
        raise ValueError(
            "FinetuneConfig: `split_special_tokens` must be True, False or None (the init directory's). "
            f"Received: split_special_tokens={config.split_special_tokens!r}"
        )
    if task.check_config is not None:
        task.check_config(config)
    strategy = strategy or create_strategy("one_device")
    finished = finished_run(config.model_dir, _request(config), strategy)
    if finished:
        step, results = finished
        where = (
            f"best evaluation in {os.path.join(config.model_dir, 'eval_results.json')}"
            if results is not None
            else "no evaluation data"
        )
        log(
            f"{config.model_dir}: already complete at step {step} (nothing to do); the model directory is "
            f"{config.model_dir}, {where}. Use a new model_dir to train again."
        )
        return results or {}
    chief = is_chief(strategy)
    init = ModelDirectory.read(init or config.init)  # read once: config, settings, tokenizer
    max_position_embeddings = init.config.max_position_embeddings
    if config.max_seq_length > max_position_embeddings:
        raise ValueError(
            f"max_seq_length ({config.max_seq_length}) exceeds the model's max_position_embeddings "
            f"({max_position_embeddings}) in {config.init}."
        )
    tokenizer, init_settings = _tokenizer(config, max_position_embeddings, init)
    data = task.data(config, tokenizer, max_position_embeddings)
    if data.num_train == 0:
        raise ValueError(f"{config.train_file}: no training examples.")
    steps_per_epoch, train_steps, warning = epoch_plan(config, data.num_train, task.example_unit)
    built_with = {  # the settings the task's model is built with: --init's, or the config's field of that name
        key: init_settings[key] if getattr(config, key, None) is None else getattr(config, key)
        for key in task.model_settings
    }
    with strategy.scope():
        encoder, bert_config = _load_encoder(config, init)
        model = task.build_model(
            encoder,
            data.label_names if task.needs_labels else None,
            head_initializer=config.head_initializer or task.head_initializer,
            **built_with,
        )
        objective = task.objective_for(config, model)  # a bad option for this model: refused before training
        optimizer = run_optimizer(config, train_steps)
    model_settings = model_dir_settings(init_settings, built_with, config, data.label_names, task)

    best = task_best_model(model, data, task, config, chief, steps_per_epoch, model_settings, init)
    has_eval = data.num_eval is not None
    loop_config = epoch_loop_config(config, steps_per_epoch, train_steps)
    settings = {
        "task": config.task,
        "init": os.path.relpath(config.init),
        "labels": data.label_names,
        "max_seq_length": config.max_seq_length,
        **{key: getattr(config, key) for key in task.recorded_settings if hasattr(config, key)},
        "global_batch_size": config.global_batch_size,
        "train_steps": train_steps,
        "seed": config.seed,
    }
    log(
        f"{task.name}: {data.num_train} training {task.example_unit}, "
        f"{steps_per_epoch} steps per epoch, {train_steps} steps, evaluation: "
        f"{data.num_eval if has_eval else 'none'}"
    )
    if warning:
        log(warning)
    loop = TrainingLoop(
        strategy,
        model,
        optimizer,
        lambda context: data.train_dataset(context, config.global_batch_size),
        config.global_batch_size,
        config.model_dir,
        loop_config,
        # Recorded, not compared: how a re-run recognizes this run finished before reading any data.
        settings=dict(settings, request=_request(config), has_eval=has_eval),
        objective=objective,
        incompatible=tuple(settings),
        evaluate_fn=best.evaluate if has_eval else None,
    )
    return best.train(loop, has_eval, log=log)
