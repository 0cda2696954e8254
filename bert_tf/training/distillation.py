"""Distillation: a teacher + a smaller student + the distributed `TrainingLoop` + task metrics (or held-out masked LM).

One `DistillConfig` describes a run; `distill(config)` does it:

1. loads the teacher (`tasks.load_model`: a fine-tuned model directory of a
   `distillable` task (classification, regression, NER, QA), or a Hugging
   Face `...ForX` directory) and takes its task, labels and tokenizer;
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

With `precompute_teacher`, the teacher's outputs are computed once over the
training set before step 0 (`distillation_precompute.precompute`, kept in
`model_dir/teacher_outputs`) and ride with the batches, so the step runs the
student only.

General distillation (`corpus`: a pretrained teacher with its masked-LM head, masked LM on raw text) is
`general_distillation.general_distill`, which `distill` runs for a config with `corpus`.
"""

import dataclasses
import os

from bert_tf import tasks
from bert_tf.checkpoints import (
    ModelDirectory,
    glob_characters_error,
)
from bert_tf.config import PRESETS
from bert_tf.data.pretraining import resolve_objectives
from bert_tf.models import build_encoder
from bert_tf.options import compose, option, override
from bert_tf.training.distillation_objective import DistillationObjective, with_distill_weights
from bert_tf.training.distillation_precompute import check_task as check_precompute_task
from bert_tf.training.distillation_precompute import precompute, texts_sha256, with_teacher_outputs
from bert_tf.training.distillation_student import copy_teacher_layers, student_config, student_positions
from bert_tf.training.distiller import Distiller
from bert_tf.training.distribute import create_strategy, dtype_policy, is_chief, resolve_dtype
from bert_tf.training.general_distillation import general_distill
from bert_tf.training.optimization import run_optimizer
from bert_tf.training.run_options import MaskedLMData, Optimization, Schedule, TaskData
from bert_tf.training.task_runs import (
    epoch_loop_config,
    epoch_plan,
    finished_run,
    model_dir_settings,
    run_request,
    task_best_model,
)
from bert_tf.training.trainer import TrainingLoop


def distill_tasks():
    """The names of the tasks whose teachers can be distilled (`Task.distillable`; the embedding task's objective
    ranks texts: no soft targets yet)."""
    return tasks.names(lambda task: task.distillable)


@dataclasses.dataclass(kw_only=True)
class DistillRun(TaskData, Schedule, Optimization, MaskedLMData):
    """The options of every distillation run; `DistillConfig` adds the options of each distillable task.

    Task distillation reads `TaskData` (the fields of `FinetuneConfig` with the same names and meanings), general
    distillation (`corpus`: DistilBERT's, TinyBERT's general stage) `MaskedLMData`, bert-tf-pretrain's masked-LM
    data with the same names and meanings (no sentence objective); a general run is sized by `train_steps`
    (required), as pretraining's, and every `eval_interval` steps the student's masked-LM accuracy on
    `eval_steps` held-out batches (every 20th group of documents) picks the best student.
    """

    # Task distillation: a fine-tuned task model directory (bert_tf, or Hugging Face ...ForX). General distillation
    # (`corpus`): a pretrained encoder with its masked-LM head (any directory `checkpoints.load_pretrainer` reads).
    teacher: str = option(
        help="The teacher. With --train_file: a fine-tuned bert_tf model directory of a task (bert-tf-finetune's "
        "output) or a Hugging Face ...ForSequenceClassification / ForTokenClassification / ForQuestionAnswering "
        "directory. With --corpus: a pretrained encoder with its masked-LM head (bert-tf-pretrain's output, a "
        "Hugging Face ...ForMaskedLM / ...ForPreTraining directory, a TF1 checkpoint with cls/predictions). Either "
        "may be a Hugging Face Hub id (org/name[@revision])."
    )
    # task distillation's training data; exactly one of `train_file` and `corpus`
    train_file: str = override(
        TaskData,
        "train_file",
        default=None,
        help="Task distillation: training data file, or tfds:NAME[:SPLIT]. Exclusive with --corpus.",
    )
    model_dir: str = option(  # required
        None, "Checkpoints, logs, the best student, eval_results.json and predictions."
    )
    # The student: teacher layers to copy (0-based, e.g. [0, 2, 4]), or a preset name / bert_config.json path.
    student_layers: list = option(
        None,
        "The student from teacher layers: 0-based indices of the layers to copy (e.g. 0,2,4), with the teacher's "
        "embeddings and task head (--corpus: masked-LM head). Exclusive with --student_model.",
    )
    student_model: str = option(
        None,
        f"The student as a new model: a preset ({', '.join(PRESETS)}) or a bert_config.json (any width; the "
        "teacher's vocabulary). Exclusive with --student_layers.",
    )
    task: str = option(  # None: the teacher's; else it must be the teacher's
        None, "The task; default: the teacher's (another value is refused).", enum=distill_tasks
    )
    # Losses (DistilBERT's soft targets at T=2 by default; TinyBERT adds hidden states and attention maps).
    temperature: float = option(
        2.0, "Softmax temperature of the soft targets (their loss is scaled by its square); > 0."
    )
    soft_weight: float = option(1.0, "Weight of the soft-target loss (KL to the teacher's outputs).", lower_bound=0.0)
    hard_weight: float = option(
        0.0,
        "Weight of the hard-label cross-entropy (the task's own loss; --corpus: the masked-LM cross-entropy).",
        lower_bound=0.0,
    )
    hidden_weight: float = option(
        0.0,
        "Weight of the hidden-state MSE over mapped layers (through a learned projection when the widths differ).",
        lower_bound=0.0,
    )
    attention_weight: float = option(
        0.0,
        "Weight of the attention-probability MSE over mapped layers (the student needs the teacher's head count).",
        lower_bound=0.0,
    )
    cosine_weight: float = option(
        0.0, "Weight of the cosine loss on the last hidden states (DistilBERT).", lower_bound=0.0
    )
    # Task distillation: the teacher's outputs computed once over the training set (model_dir/teacher_outputs) and
    # read with the batches, so the step runs no teacher (soft and hard losses only).
    precompute_teacher: bool = option(
        False,
        "Task distillation: compute the teacher's outputs once over the training set (kept in "
        "--model_dir/teacher_outputs, reused on resume) and train without running the teacher in the step. Soft "
        "and hard losses only.",
    )
    # As fine-tuning's, of the student.
    dropout: float = override(  # the student's; None keeps the teacher's config
        TaskData, "dropout", help="The student's dropout (default: the teacher's config, or --student_model's)."
    )
    head_initializer: str = override(  # a `student_model`'s new head; None: the task's default
        TaskData,
        "head_initializer",
        help="A --student_model's new task head's kernel (default: the task's). Students from teacher layers copy "
        "the head.",
    )
    keep_checkpoints: int = override(
        Schedule,
        "keep_checkpoints",
        help="Training checkpoints kept (for resuming; the best student is kept apart in --model_dir).",
    )
    split_special_tokens: bool = override(  # None: the teacher directory's
        TaskData,
        "split_special_tokens",
        help="Read [MASK], [SEP], ... written in the data as text (true) or as their single ids (false); default: "
        "as the --teacher directory's bert_tf.json says.",
    )
    # General distillation: bert-tf-pretrain's masked-LM data, read for `corpus` only.
    corpus: list = override(  # text files or globs
        MaskedLMData,
        "corpus",
        default=None,
        help="General distillation: text files or globs (comma-separated) for masked LM, with a --teacher that has "
        "its masked-LM head (bert-tf-pretrain's output, a Hugging Face ...ForMaskedLM/...ForPreTraining directory, "
        "a TF1 checkpoint with cls/predictions). Exclusive with --train_file; sized by --train_steps.",
    )
    corpus_format: str = override(
        MaskedLMData,
        "corpus_format",
        help="--corpus: lines (one sentence per line, blank line between documents) or paragraphs (one document "
        "per line).",
    )
    group_size: int = override(
        MaskedLMData,
        "group_size",
        help="--corpus: documents per group; every 20th group is held out for evaluation.",
        lower_bound=1,
    )
    shuffle_buffer: int = override(
        MaskedLMData, "shuffle_buffer", help="--corpus: examples shuffled together (1: none)."
    )
    packing: str = override(
        MaskedLMData,
        "packing",
        default="full_sentences",
        help="--corpus: how sentences fill an example (as bert-tf-pretrain's).",
    )
    masking: str = override(
        MaskedLMData, "masking", default="token", help="--corpus: token, whole_word or span masking."
    )
    masking_rate: float = override(
        MaskedLMData, "masking_rate", help="--corpus: share of tokens masked.", lower_bound=0.0
    )
    max_predictions_per_seq: int = override(  # None: default_max_predictions(masking_rate, max_seq_length)
        MaskedLMData,
        "max_predictions_per_seq",
        help="--corpus: masked-LM slots per example (default: ceil(masking_rate * max_seq_length)).",
    )
    span_geometric_p: float = override(
        MaskedLMData, "span_geometric_p", help="--corpus, --masking=span: span lengths ~ Geometric(p)."
    )
    max_span_length: int = override(
        MaskedLMData, "max_span_length", help="--corpus, --masking=span: longest span in words."
    )
    eval_steps: int = override(
        MaskedLMData,
        "eval_steps",
        help="--corpus: held-out batches (of --eval_batch_size) per evaluation (0: none).",
    )
    eval_interval: int = override(
        MaskedLMData,
        "eval_interval",
        help="--corpus: steps between held-out evaluations (each keeps the student if its masked-LM accuracy is "
        "the best).",
    )


# The task options whose help says less for distillation (no embedding task, the short form).
TASK_OPTION_HELP = {
    "label_column": {"help": "Label column (name or index)."},
    "label_names": {"help": "Classification labels in id order, as the files hold them."},
    "eval_every_nth_article": {
        "help": "QA on SQuAD files, without --eval_file: hold out every n-th article of --train_file for evaluation."
    },
}


def config_class(task_list=None):
    """The `DistillConfig` class of `task_list` (default: the registered tasks): `DistillRun`'s options and those
    of each distillable task (`Task.options`). The same tasks give the same class."""
    task_list = tasks.registered() if task_list is None else task_list
    return compose(
        "DistillConfig",
        (DistillRun, *(task.options for task in task_list if task.distillable and task.options is not None)),
        overrides=TASK_OPTION_HELP,
        module=__name__,
        doc="A distillation run: `DistillRun`'s options and those of the distillable tasks (one field per "
        "bert-tf-distill flag, of the same name and default).",
    )


def __getattr__(name):
    # `DistillConfig` is composed from the task registry when first asked for (see `finetuning.FinetuneConfig`).
    if name == "DistillConfig":
        return config_class()
    if name == "TASK_FIELDS":  # of the tasks registered now (`task_fields`)
        return task_fields()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The `TaskData` options general distillation reads too (the rest are task distillation's).
GENERAL_READS = ("train_file", "max_seq_length", "epochs", "dropout", "eval_batch_size", "split_special_tokens")
# Options only general distillation reads (refused beside `train_file` when not at their default): `MaskedLMData`'s
# but `corpus`, which decides the kind.
CORPUS_FIELDS = tuple(field.name for field in dataclasses.fields(MaskedLMData) if field.name != "corpus")


def task_fields(task_list=None):
    """The options only task distillation reads (refused beside `corpus` when not at their default): `task`,
    `TaskData`'s but `GENERAL_READS`, the own options of the distillable tasks of `task_list` (default: the
    registered tasks; `Task.options`) and `precompute_teacher`."""
    task_list = tasks.registered() if task_list is None else task_list
    own = [
        field.name
        for task in task_list
        if task.distillable and task.options is not None
        for field in dataclasses.fields(task.options)
    ]
    data = [field.name for field in dataclasses.fields(TaskData) if field.name not in GENERAL_READS]
    return tuple(dict.fromkeys(("task", *data, *own, "precompute_teacher")))


def check_config(config):
    """Raises ValueError naming the field when `config` cannot work (before any file is read or written)."""
    if not config.model_dir:
        raise ValueError(f"`model_dir` is required. Received: model_dir={config.model_dir!r}")
    message = glob_characters_error(config.model_dir)
    if message:
        raise ValueError(f"DistillConfig: {message}.")
    if bool(config.train_file) == bool(config.corpus):
        raise ValueError(
            "Give the data as exactly one of `train_file` (task distillation: a fine-tuned teacher's task data) and "
            "`corpus` (general distillation: text for masked LM, a teacher with its masked-LM head). Received: "
            f"train_file={config.train_file!r}, corpus={config.corpus!r}"
        )
    if config.corpus and config.precompute_teacher:
        raise ValueError(
            "`precompute_teacher` stores the teacher's outputs per training example once; general distillation "
            "(`corpus`) masks every example anew each epoch (dynamic masking), so there is nothing fixed to store. "
            f"Received: precompute_teacher=True, corpus={config.corpus!r}"
        )
    defaults = {f.name: f.default for f in dataclasses.fields(config)}
    others = task_fields() if config.corpus else CORPUS_FIELDS
    changed = [name for name in others if name in defaults and getattr(config, name) != defaults[name]]
    if changed:
        given = ", ".join(f"{name}={getattr(config, name)!r}" for name in changed)
        raise ValueError(
            f"{', '.join(f'`{name}`' for name in changed)}: "
            + (
                "task distillation's (`train_file`), not read by general distillation (`corpus`)"
                if config.corpus
                else "general distillation's (`corpus`), not read by task distillation (`train_file`)"
            )
            + f". Received: {given}"
        )
    if config.corpus and not config.train_steps:
        raise ValueError(
            "General distillation (`corpus`) is sized by `train_steps`, as pretraining is (a corpus has no counted "
            f"epochs). Received: train_steps={config.train_steps!r}, corpus={config.corpus!r}"
        )
    if config.corpus:
        resolve_objectives("none", config.packing, config.masking, masking_rate=config.masking_rate)
        for name in ("group_size", "shuffle_buffer", "max_span_length", "eval_interval"):
            if not getattr(config, name) >= 1:
                raise ValueError(f"`{name}` must be >= 1. Received: {name}={getattr(config, name)!r}")
        if config.max_predictions_per_seq is not None and not config.max_predictions_per_seq >= 1:
            raise ValueError(
                f"`max_predictions_per_seq` must be >= 1. Received: max_predictions_per_seq={config.max_predictions_per_seq!r}"
            )
    if config.precompute_teacher and getattr(config, "long_text", "truncate") == "windows":
        raise ValueError(
            "`precompute_teacher` stores one teacher output per training text; `long_text='windows'` trains on each "
            "window of a text as an example of its own, so the stored outputs would not line up with the batches. "
            "Distil with the teacher live (precompute_teacher=False) or truncate. Received: precompute_teacher=True, "
            "long_text='windows'"
        )
    if config.precompute_teacher and (config.hidden_weight or config.attention_weight or config.cosine_weight):
        raise ValueError(
            "`precompute_teacher` stores the teacher's task outputs only; the hidden-state, attention and cosine "
            "losses need its layers in the step. Received: precompute_teacher=True, "
            f"hidden_weight={config.hidden_weight}, attention_weight={config.attention_weight}, "
            f"cosine_weight={config.cosine_weight}"
        )
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
    request = run_request(config, ("teacher", "train_file", "eval_file", "student_model"), kept=PRESETS)
    if config.corpus:
        patterns = config.corpus.split(",") if isinstance(config.corpus, str) else config.corpus
        request["corpus"] = [os.path.relpath(p) for p in patterns if p]
    return request


# === The run ===


def distill(config, strategy=None, log=print):
    """Runs `config`; returns the best evaluation's metrics (or the last training metrics without eval data)."""
    teacher_dir = config.teacher if isinstance(config.teacher, ModelDirectory) else None  # a path or a ModelDirectory
    if teacher_dir is not None:  # records and messages name what was given: its path, or the Hub id it was read by
        config = dataclasses.replace(config, teacher=teacher_dir.name)
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
    if config.corpus:
        return general_distill(config, request, strategy, log=log, teacher=teacher_dir)
    chief = is_chief(strategy)
    teacher_dir = ModelDirectory.read(teacher_dir or config.teacher)  # read once: config, settings, task, tokenizer
    teacher_config = teacher_dir.config
    with strategy.scope():
        teacher, teacher_settings = tasks.load_model(teacher_dir, dtype=dtype_policy(config.dtype))
    name = teacher_settings.get("task")
    if name is None:
        raise ValueError(
            f"--teacher {config.teacher} holds no fine-tuned task model (its bert_tf.json names no task). "
            "Task distillation (--train_file) needs a fine-tuned teacher; a pretrained teacher with its masked-LM head "
            "is distilled on raw text with --corpus (general distillation)."
        )
    if not tasks.get(name).distillable:
        raise ValueError(
            f"Distillation supports the tasks {distill_tasks()}; the teacher {config.teacher} is {name!r}."
        )
    if config.task is not None and config.task != name:
        raise ValueError(
            f"`task` must be the teacher's ({name!r} in {config.teacher}) or unset. Received: task={config.task!r}"
        )
    if config.precompute_teacher:
        check_precompute_task(name)
    task = tasks.get(name)
    config = dataclasses.replace(config, task=name)
    if task.check_config is not None:
        task.check_config(config)
    student_bert_config, max_position_embeddings = student_positions(config, teacher_config)
    settings = {**teacher_settings, **teacher_dir.tokenizer_settings}
    if config.split_special_tokens is not None:
        settings["split_special_tokens"] = config.split_special_tokens
    tokenizer = teacher_dir.build_tokenizer(settings)
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
        distiller = Distiller(
            student,
            None if config.precompute_teacher else teacher,
            states=states,
            attention=bool(config.attention_weight),
            precomputed=config.precompute_teacher,
        )
        optimizer = run_optimizer(config, train_steps)
    objective = DistillationObjective.from_config(task.objective, config)
    model_settings = model_dir_settings(settings, built_with, config, labels, task)

    best = task_best_model(student, data, task, config, chief, steps_per_epoch, model_settings, teacher_dir)
    has_eval = data.num_eval is not None
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
        "precompute_teacher": config.precompute_teacher,
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
    if config.precompute_teacher:
        record = {
            "teacher": os.path.relpath(config.teacher),
            "task": task.name,
            "train_file": request["train_file"],
            "num_train": data.num_train,
            "texts_sha256": texts_sha256(data.train),
            "max_seq_length": config.max_seq_length,
            "split_special_tokens": settings.get("split_special_tokens", False),
            "dtype": resolve_dtype(config.dtype),
        }
        stored = precompute(teacher, data.train_inputs(config.eval_batch_size), config.model_dir, record, chief, log)

        def train_batches(context):
            batches = data.train_dataset(context, config.global_batch_size, with_index=True)
            return with_distill_weights(with_teacher_outputs(batches, stored))

    else:

        def train_batches(context):
            return with_distill_weights(data.train_dataset(context, config.global_batch_size))

    loop = TrainingLoop(
        strategy,
        distiller,
        optimizer,
        train_batches,
        config.global_batch_size,
        config.model_dir,
        loop_config,
        settings=dict(recorded, request=request, has_eval=has_eval),
        objective=objective,
        incompatible=tuple(recorded),
        evaluate_fn=best.evaluate if has_eval else None,
        upgrade_settings=lambda saved: {"precompute_teacher": False, **saved},  # runs from before the setting
    )
    return best.train(loop, has_eval, log=log)


__all__ = [
    "DistillRun",
    "check_config",
    "config_class",
    "copy_teacher_layers",
    "distill",
    "distill_tasks",
    "student_config",
]
