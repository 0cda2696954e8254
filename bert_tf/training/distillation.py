"""Task distillation: a fine-tuned teacher + a smaller student + the distributed `TrainingLoop` + task metrics.

One `DistillConfig` describes a run; `distill(config)` does it:

1. loads the teacher (`checkpoints.load_model`: a fine-tuned classification,
   regression, NER or QA model directory, or a Hugging Face `...ForX`
   directory) and takes its task, labels and tokenizer;
2. builds the student: the teacher's embeddings, the layers
   `student_layers` (e.g. `[0, 2, 4]`), pooler and task head (DistilBERT's
   initialisation), or a new model of the architecture `student_model` (a
   preset name or a `bert_config.json`, any width) with the teacher's
   vocabulary;
3. reads the task's data with the task's readers and batching (the
   fine-tuning data fields of `FinetuneConfig`, same names);
4. trains the student with `TrainingLoop` (any strategy, exact resume) on a
   `Distiller` (teacher in inference mode inside the same step, frozen) and a
   `DistillationObjective` (soft targets at `temperature`, hard labels,
   hidden states, attention maps, cosine), evaluating the student with the
   task's official metric after every epoch;
5. keeps the best evaluation's student as a model directory in `model_dir`,
   exactly as fine-tuning does (`bert_config.json`, tokenizer files,
   `bert_tf.json`, `bert_model.ckpt`, `eval_results.json`, predictions), so
   `bert-tf-export` serves it.

General distillation (a pretrained teacher with its masked-LM head, `--corpus`) is not built yet.
"""

import dataclasses
import os

import tensorflow as tf

from bert_tf import tasks
from bert_tf.checkpoints import (
    glob_characters_error,
    load_config,
    load_model,
    load_tokenizer,
    save_model_dir,
    write_tokenizer_files,
)
from bert_tf.checkpoints.tokenizer_files import tokenizer_settings
from bert_tf.config import PRESETS, BertConfig
from bert_tf.models import BertEncoder, build_encoder
from bert_tf.training.distillation_objective import EXAMPLES, TOKENS, DistillationObjective
from bert_tf.training.distiller import Distiller
from bert_tf.training.distribute import create_strategy, dtype_policy, is_chief
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.task_runs import (
    BestModel,
    epoch_loop_config,
    epoch_plan,
    finished_run,
    model_dir_settings,
    run_request,
)
from bert_tf.training.trainer import TrainingLoop

# Tasks whose teachers can be distilled (the embedding task's objective ranks texts: no soft targets yet).
DISTILL_TASKS = ("classification", "regression", "ner", "squad")


@dataclasses.dataclass
class DistillConfig:
    teacher: str  # a fine-tuned task model directory (bert_tf, or Hugging Face ...ForX)
    train_file: str
    model_dir: str
    # The student: teacher layers to copy (0-based, e.g. [0, 2, 4]), or a preset name / bert_config.json path.
    student_layers: list = None
    student_model: str = None
    task: str = None  # None: the teacher's; else it must be the teacher's
    eval_file: str = None
    # Losses (DistilBERT's soft targets at T=2 by default; TinyBERT adds hidden states and attention maps).
    temperature: float = 2.0
    soft_weight: float = 1.0
    hard_weight: float = 0.0
    hidden_weight: float = 0.0
    attention_weight: float = 0.0
    cosine_weight: float = 0.0
    # Task data: the fields of FinetuneConfig with the same names and meanings.
    text_column: object = None
    text_pair_column: object = None
    label_column: object = None
    glue_task: str = None
    label_names: list = None
    file_format: str = None
    tag_column: int = -1
    tag_scheme: str = "auto"
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_diff_threshold: float = 0.0
    eval_every_nth_article: int = 0
    # Training: as FinetuneConfig's.
    max_seq_length: int = 128
    epochs: float = 3.0
    train_steps: int = 0
    max_train_examples: int = 0
    global_batch_size: int = 32
    learning_rate: float = 5e-5
    warmup_proportion: float = 0.1
    weight_decay: float = 0.01
    optimizer: str = "adamw"
    clip_norm: float = 1.0
    dropout: float = None  # the student's; None keeps the teacher's config
    head_initializer: str = None  # a `student_model`'s new head; None: the task's default
    dtype: str = "float32"
    jit_compile: bool = False
    seed: int = 0
    steps_per_loop: int = 50
    evals_per_epoch: int = 1
    checkpoint_steps: int = 0
    keep_checkpoints: int = 1
    eval_batch_size: int = 64
    tfds_data_dir: str = None
    split_special_tokens: bool = None  # None: the teacher directory's


def check_config(config):
    """Raises ValueError naming the field when `config` cannot work (before any file is read or written)."""
    message = glob_characters_error(config.model_dir)
    if message:
        raise ValueError(f"DistillConfig: {message}.")
    if (config.student_layers is None) == (config.student_model is None):
        raise ValueError(
            "Give the student as exactly one of `student_layers` (teacher layers to copy, e.g. 0,2,4) and "
            f"`student_model` (a preset {PRESETS} or a bert_config.json). Received: "
            f"student_layers={config.student_layers!r}, student_model={config.student_model!r}"
        )
    if config.student_layers is not None:
        layers = list(config.student_layers)
        if not layers or any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in layers):
            raise ValueError(
                f"`student_layers` must be teacher layer indices >= 0. Received: student_layers={config.student_layers!r}"
            )
        if len(set(layers)) != len(layers):
            raise ValueError(f"`student_layers` repeats a layer. Received: student_layers={config.student_layers!r}")
    if config.student_model is not None and config.student_model not in PRESETS:
        if not os.path.isfile(config.student_model):
            raise ValueError(
                f"`student_model` must be a preset {PRESETS} or a bert_config.json file. "
                f"Received: student_model={config.student_model!r}"
            )
    if not config.temperature > 0:
        raise ValueError(f"`temperature` must be > 0. Received: temperature={config.temperature!r}")
    weights = {
        name: getattr(config, name)
        for name in ("soft_weight", "hard_weight", "hidden_weight", "attention_weight", "cosine_weight")
    }
    for name, value in weights.items():
        if not value >= 0:
            raise ValueError(f"`{name}` must be >= 0. Received: {name}={value!r}")
    if not any(weights.values()):
        raise ValueError(f"At least one loss needs a weight > 0. Received: {weights}")
    if config.split_special_tokens is not None and not isinstance(config.split_special_tokens, bool):
        raise ValueError(
            "`split_special_tokens` must be True, False or None (the teacher directory's). "
            f"Received: split_special_tokens={config.split_special_tokens!r}"
        )


def _request(config):
    """The fields of `config` that decide what a run trains, as JSON stores them (in training_settings.json)."""
    return run_request(config, ("teacher", "train_file", "eval_file", "student_model"), kept=PRESETS)


# === The student ===


def student_config(config, teacher_config):
    """The student's `BertConfig`: the teacher's with `len(student_layers)` layers, or `student_model`'s."""
    if config.student_layers is not None:
        student = dataclasses.replace(teacher_config, num_hidden_layers=len(config.student_layers))
    elif config.student_model in PRESETS:
        student = BertConfig.preset(config.student_model, vocab_size=teacher_config.vocab_size)
        if teacher_config.model_type != "bert":
            student = student.for_family(teacher_config.model_type)
    else:
        student = BertConfig.from_json_file(config.student_model)
        if student.vocab_size != teacher_config.vocab_size or student.model_type != teacher_config.model_type:
            raise ValueError(
                f"`student_model` {config.student_model} must share the teacher's vocabulary and family: it has "
                f"vocab_size {student.vocab_size} and model_type {student.model_type!r}, the teacher "
                f"{teacher_config.vocab_size} and {teacher_config.model_type!r}."
            )
    if config.dropout is not None:
        student = dataclasses.replace(
            student, hidden_dropout_prob=config.dropout, attention_probs_dropout_prob=config.dropout
        )
    return student


def copy_teacher_layers(student, teacher, layers):
    """Copies into `student` the teacher's embeddings, `layers` (student block j <- teacher block `layers[j]`),
    pooler, final LayerNorm and task head (DistilBERT's initialisation). Both are task models of one task on
    `BertEncoder`s without shared layers; ValueError otherwise, naming `student_layers`."""
    source, target = teacher.encoder, student.encoder
    if not isinstance(source, BertEncoder) or source.num_hidden_groups != 1 or source.inner_group_num != 1:
        raise ValueError(
            "`student_layers` copies distinct layers of a BertEncoder; this teacher's encoder "
            f"({type(source).__name__}, {getattr(source, 'model_type', '?')}) has none to copy: use `student_model`."
        )
    if max(layers) >= source.num_layers:
        raise ValueError(
            f"`student_layers` names layer {max(layers)} but the teacher has {source.num_layers} layers (0 to "
            f"{source.num_layers - 1}). Received: student_layers={list(layers)!r}"
        )
    pairs = [(target.embeddings, source.embeddings), (target.pooler, source.pooler)]
    pairs += [(target.transformer_layers[j], source.transformer_layers[i]) for j, i in enumerate(layers)]
    if source.final_layer_norm is not None:
        pairs.append((target.final_layer_norm, source.final_layer_norm))
    for to, frm in pairs:
        to.set_weights(frm.get_weights())
    head_target = student.weights[len(target.weights) :]  # a task model lists its encoder's variables first
    head_source = teacher.weights[len(source.weights) :]
    if [v.shape for v in head_target] != [v.shape for v in head_source]:
        raise ValueError("The student's task head does not match the teacher's (another task or label count).")
    for to, frm in zip(head_target, head_source):
        to.assign(frm)


# === The run ===


def _with_distill_weights(dataset):
    """The task's `(features, labels, sample_weights)` batches plus the padding mask (`TOKENS`) and per-example
    (`EXAMPLES`) weights that the distillation losses are normalised by."""

    def add(features, labels, weights):
        mask = tf.cast(features["padding_mask"], tf.float32)  # [B, T]
        return features, labels, {**weights, TOKENS: mask, EXAMPLES: tf.ones_like(mask[:, 0])}

    return dataset.map(add)


def distill(config, strategy=None, log=print):
    """Runs `config`; returns the best evaluation's metrics (or the last training metrics without eval data)."""
    check_config(config)
    request = _request(config)  # as asked (`task` may be None: the teacher's)
    strategy = strategy or create_strategy("one_device")
    finished = finished_run(config.model_dir, request, strategy)
    if finished:
        step, results = finished
        log(
            f"{config.model_dir}: already complete at step {step} (nothing to do); the student is "
            f"{config.model_dir}. Use a new model_dir to train again."
        )
        return results or {}
    chief = is_chief(strategy)
    teacher_config = load_config(config.teacher)
    with strategy.scope():
        teacher, teacher_settings = load_model(config.teacher, dtype=dtype_policy(config.dtype))
    name = teacher_settings.get("task")
    if name is None:
        raise ValueError(
            f"--teacher {config.teacher} holds no fine-tuned task model (its bert_tf.json names no task). "
            "Task distillation needs a fine-tuned teacher; general distillation (--corpus) is not built yet."
        )
    if name not in DISTILL_TASKS:
        raise ValueError(f"Distillation supports the tasks {DISTILL_TASKS}; the teacher {config.teacher} is {name!r}.")
    if config.task is not None and config.task != name:
        raise ValueError(
            f"`task` must be the teacher's ({name!r} in {config.teacher}) or unset. Received: task={config.task!r}"
        )
    task = tasks.get(name)
    config = dataclasses.replace(config, task=name)
    if task.check_config is not None:
        task.check_config(config)
    student_bert_config = student_config(config, teacher_config)
    max_position_embeddings = min(teacher_config.max_position_embeddings, student_bert_config.max_position_embeddings)
    if config.max_seq_length > max_position_embeddings:
        raise ValueError(
            f"max_seq_length ({config.max_seq_length}) exceeds the teacher's or the student's max_position_embeddings "
            f"({max_position_embeddings})."
        )
    settings = {**teacher_settings, **tokenizer_settings(config.teacher)}
    if config.split_special_tokens is not None:
        settings["split_special_tokens"] = config.split_special_tokens
    tokenizer = load_tokenizer(config.teacher, settings)
    data = task.data(config, tokenizer, max_position_embeddings)
    if data.num_train == 0:
        raise ValueError(f"{config.train_file}: no training examples.")
    labels = teacher_settings.get("labels") if task.needs_labels else None
    if task.needs_labels and list(data.label_names) != list(labels):
        raise ValueError(
            f"The training data's labels {list(data.label_names)} are not the teacher's {list(labels)} (in "
            f"{config.teacher}): train on data with the teacher's labels, in its order (classification: --label_names or "
            "--glue_task)."
        )
    steps_per_epoch, train_steps, warning = epoch_plan(config, data.num_train, task.example_unit)
    built_with = {key: teacher_settings[key] for key in task.model_settings}
    states = bool(config.hidden_weight or config.cosine_weight)
    with strategy.scope():
        encoder = build_encoder(student_bert_config, dtype=dtype_policy(config.dtype))
        student = task.build_model(
            encoder, labels, head_initializer=config.head_initializer or task.head_initializer, **built_with
        )
        if config.student_layers is not None:
            copy_teacher_layers(student, teacher, list(config.student_layers))
        distiller = Distiller(student, teacher, states=states, attention=bool(config.attention_weight))
        optimizer = create_optimizer(
            config.optimizer,
            config.learning_rate,
            train_steps,
            int(config.warmup_proportion * train_steps),
            config.weight_decay,
            clip_norm=0,
            loss_scale=config.dtype == "float16",
        )
    objective = DistillationObjective(
        task.objective,
        temperature=config.temperature,
        soft_weight=config.soft_weight,
        hard_weight=config.hard_weight,
        hidden_weight=config.hidden_weight,
        attention_weight=config.attention_weight,
        cosine_weight=config.cosine_weight,
    )
    model_settings = model_dir_settings(settings, built_with, config.max_seq_length, labels, task.name)

    def save():
        save_model_dir(student, config.model_dir, settings=model_settings)
        write_tokenizer_files(config.teacher, config.model_dir)

    metric_name = getattr(data, "best_metric", None) or task.best_metric
    has_eval = data.num_eval is not None
    best = BestModel(student, data, metric_name, config.model_dir, chief, steps_per_epoch, save)
    loop_config = epoch_loop_config(config, steps_per_epoch, train_steps)
    recorded = {
        "task": task.name,
        "teacher": os.path.relpath(config.teacher),
        "student": list(config.student_layers) if config.student_layers is not None else config.student_model,
        "labels": labels,
        "max_seq_length": config.max_seq_length,
        "global_batch_size": config.global_batch_size,
        "train_steps": train_steps,
        "seed": config.seed,
        "losses": {
            name: getattr(config, f"{name}_weight") for name in ("soft", "hard", "hidden", "attention", "cosine")
        },
        "temperature": config.temperature,
    }
    student_size = f"{student_bert_config.num_hidden_layers} layers, hidden {student_bert_config.hidden_size}"
    log(
        f"{task.name}: distilling {config.teacher} ({teacher_config.num_hidden_layers} layers, hidden "
        f"{teacher_config.hidden_size}) into a student of {student_size}; {data.num_train} training "
        f"{task.example_unit}, {steps_per_epoch} steps per epoch, {train_steps} steps, evaluation: "
        f"{data.num_eval if has_eval else 'none'}"
    )
    if warning:
        log(warning)
    loop = TrainingLoop(
        strategy,
        distiller,
        optimizer,
        lambda context: _with_distill_weights(data.train_dataset(context, config.global_batch_size)),
        config.global_batch_size,
        config.model_dir,
        loop_config,
        settings=dict(recorded, request=request, has_eval=has_eval),
        objective=objective,
        incompatible=tuple(recorded),
        evaluate_fn=best.evaluate if has_eval else None,
    )
    return best.train(loop, has_eval, log=log)


__all__ = ["DISTILL_TASKS", "DistillConfig", "check_config", "copy_teacher_layers", "distill", "student_config"]
