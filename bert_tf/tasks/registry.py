"""The task registry: every fine-tuning task declared once, looked up by name, model or serving module.

A `Task` says everything fine-tuning, export and checkpoints need to know
about one task; a `ModelHeads` says how checkpoints name the head variables
of one model class. Fine-tuning (`finetune`), export (`load_task_model`,
`serving_module`, the `kind` of the export metadata), checkpoints
(`model_table`, `save_hf`) and the `--task` flag of `bert-tf-finetune` ask
this module; none of them lists tasks or switches on model classes.

This module imports nothing from bert_tf, so every package can import it
without a cycle. The built-in declarations (`bert_tf/tasks/classification.py`,
`ner.py`, `squad.py`) compose models, data, metrics, training and export, so
they are imported on the first query (`get`, `names`, `registered`, `for_module`,
or a `heads_for` that misses), not when this module is imported. A user task
is a `Task` passed to `register`, from any module.
"""

import dataclasses
import importlib
from collections.abc import Callable

# The modules that declare the built-in tasks (each registers its tasks when imported).
BUILTIN_MODULES = (
    "bert_tf.tasks.classification",
    "bert_tf.tasks.ner",
    "bert_tf.tasks.squad",
    "bert_tf.tasks.embedding",
)


@dataclasses.dataclass(frozen=True)
class ModelHeads:
    """How checkpoints name the head variables of one model class.

    Attributes:
        model_class: the Keras model class (subclasses are found through it).
        entries: `model -> list[name_table.Entry]` for the head variables alone
            (the encoder's come from the encoder's own `ModelHeads`).
        hf_architecture: `model -> str`, the Hugging Face `architectures` name
            `save_hf` writes (e.g. "BertForSequenceClassification").
        hf_num_labels: `model -> int`, the number of `id2label` entries of a
            Hugging Face `config.json`; None for models without labels.
        is_encoder: the class is an encoder (its table is the whole model's);
            a task model finds its encoder at `model.encoder`.
        hf_pooler: `model -> (module, in base model) or None`: where this
            Hugging Face architecture keeps the dense our encoder calls the
            pooler (`("pooler.dense", True)` in `BertForSequenceClassification`,
            `("classifier.dense", False)` in RoBERTa's), None where it has none
            (`...ForTokenClassification`); unset: the base model's.
        hf_suffixes: the Hugging Face class-name endings this model reads
            (`("ForSequenceClassification",)`), after the family prefix; a
            checkpoint of such a class converts to this model.
    """

    model_class: type
    entries: Callable
    hf_architecture: Callable
    hf_num_labels: Callable | None = None
    is_encoder: bool = False
    hf_pooler: Callable | None = None
    hf_suffixes: tuple = ()


@dataclasses.dataclass(frozen=True)
class ServingOptions:
    """The export options a task's serving module may use (see `export_saved_model`)."""

    text_pair: bool = False
    max_input_bytes: int | None = None
    doc_stride: int = 128
    max_query_length: int = 64
    max_answer_length: int = 30


@dataclasses.dataclass(frozen=True)
class Task:
    """One fine-tuning task, declared once.

    Attributes:
        name: the `--task` value, the `task` of `bert_tf.json` and the `kind`
            of the export metadata.
        build_model: `(encoder, label_names, head_initializer=...) -> keras.Model`;
            `label_names` is None when `needs_labels` is False; `head_initializer`
            (one of `layers.dense_head.HEAD_INITIALIZERS`) is the new head's kernel
            initializer (fine-tuning passes it; a loaded model's weights replace it).
        head_initializer: the task's default for it (`FinetuneConfig.head_initializer`
            None): "glorot_uniform" unless a task declares otherwise.
        heads: the checkpoint names of the model's head (`ModelHeads`).
        objective: the `bert_tf.training.trainer.Objective` the model trains with.
        best_metric: the evaluation metric (higher is better) that picks the
            checkpoint kept in the model directory.
        needs_labels: the model needs label names (read from the training
            data, saved as `labels` in `bert_tf.json`).
        data: `(config, tokenizer, max_position_embeddings) -> task data`, see
            "Task data" below.
        serving_class: the serving module class (a `bert_tf.export.ServingModule`).
        serving_module: `(model, tokenizer, max_seq_length, label_names,
            ServingOptions) -> serving module`.
        serves: `module -> bool`, whether a module of `serving_class` serves
            this task (to tell apart tasks sharing a serving class); None: all do.
        example_unit: what `num_train` counts, for the log ("examples", "windows").
        check_config: `FinetuneConfig -> None`, raising ValueError that names
            the field when the settings cannot work for this task (checked
            before any file is read or written); None: nothing to check.
        hf_accepts: `num_labels -> bool`, whether a Hugging Face checkpoint of
            one of `heads.hf_suffixes` with that many labels is this task
            (classification and regression share the class); None: all are.
        model_settings: names of `bert_tf.json` settings the model is built
            with (the embedding's `pooling` and `normalize`): `build_model` takes
            them as keyword arguments. Fine-tuning takes each from `--init`'s
            settings (a `FinetuneConfig` field of the same name, when set,
            replaces it) and records it in the model directory;
            `checkpoints.load_model` passes the directory's.
        options: the task's own options, a `kw_only` dataclass of
            `bert_tf.options.option` fields (e.g. `SquadOptions`), or None.
            `FinetuneConfig` (and `DistillConfig`, for a distillable task)
            inherits its fields, so `task.data(config, ...)` reads them as
            `config.NAME`, and bert-tf-finetune has a flag for each. Tasks may
            share an options class; an option several classes declare must be
            the same declaration (a common base class).

    Task data (what `data(...)` returns) has:
        `label_names`: list of str or None;
        `num_train`: examples in one epoch;
        `num_eval`: evaluation examples, or None without evaluation data;
        `train_dataset(input_context, global_batch_size)`: a repeated
            `tf.data.Dataset` of `(features, labels, sample_weights)` with
            labels and weights keyed by the objective heads' outputs;
        `evaluate(model)`: `(metrics dict, write)` where `write(directory)`
            writes the predictions file;
        optionally `best_metric`: the metric that picks the kept checkpoint
            when it depends on the data (else the task's `best_metric`).
    """

    name: str
    build_model: Callable
    heads: ModelHeads
    objective: object
    best_metric: str
    needs_labels: bool
    data: Callable
    serving_class: type
    serving_module: Callable
    serves: Callable | None = None
    example_unit: str = "examples"
    check_config: Callable | None = None
    # Task heads start from Keras' Glorot initialisation: with the reference's truncated normal 0.02, short
    # fine-tunes of all-MiniLM-L6-v2 lag far behind (STS-B dev Pearson 0.718 vs 0.810, mean of 3 seeds; CoNLL
    # entity F1 0.495 vs 0.737 after 93 steps), the small head's outputs start too flat to be learned in time
    # (README "Fine-tuning quality", tools/finetune_quality.py).
    head_initializer: str = "glorot_uniform"
    hf_accepts: Callable | None = None
    model_settings: tuple = ()
    options: type | None = None


_TASKS = {}  # name -> Task
_HEADS = {}  # model class -> ModelHeads
_builtins_loaded = False


def _load_builtins():
    # The declarations import training, export and checkpoints, which import this module: they are
    # imported here, on the first query, not at module level (that would be an import cycle).
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True  # Before the imports: a declaration module that registers queries again.
    try:
        for module in BUILTIN_MODULES:
            importlib.import_module(module)
    except BaseException:
        _builtins_loaded = False
        raise


def register_heads(heads, replace=False):
    """Registers the checkpoint names of `heads.model_class`; returns `heads`.

    Registering the same declaration twice is a no-op; another one for a class
    already known raises ValueError unless `replace`.
    """
    known = _HEADS.get(heads.model_class)
    if known is not None and known is not heads and not replace:
        raise ValueError(
            f"Checkpoint heads for {heads.model_class.__name__} are already registered. "
            f"Received: model_class={heads.model_class!r}"
        )
    _HEADS[heads.model_class] = heads
    return heads


def register(task, replace=False):
    """Registers `task` (and its model heads); returns it.

    A name already registered raises ValueError unless `replace`.
    """
    _load_builtins()
    if task.name in _TASKS and _TASKS[task.name] is not task and not replace:
        raise ValueError(f"A task named {task.name!r} is already registered. Received: task={task.name!r}")
    register_heads(task.heads, replace=replace)
    _TASKS[task.name] = task
    return task


def unregister(name):
    """Removes the task `name` (its model heads stay registered while another task uses them)."""
    task = _TASKS.pop(name, None)
    if task is not None and all(other.heads is not task.heads for other in _TASKS.values()):
        if _HEADS.get(task.heads.model_class) is task.heads:
            del _HEADS[task.heads.model_class]


def names():
    """The registered task names, sorted (registration order depends on which module was imported first)."""
    _load_builtins()
    return tuple(sorted(_TASKS))


def registered():
    """The registered `Task`s, sorted by name."""
    return tuple(_TASKS[name] for name in names())


def get(name):
    """The `Task` named `name`; ValueError listing the known names when there is none."""
    _load_builtins()
    task = _TASKS.get(name)
    if task is None:
        raise ValueError(f"Unknown task. `task` must be one of {names()}. Received: task={name!r}")
    return task


def _nearest_heads(cls):
    return next((_HEADS[base] for base in cls.__mro__ if base in _HEADS), None)


def heads_for(model):
    """The `ModelHeads` of `model`'s class or its nearest registered base class, or None."""
    heads = _nearest_heads(type(model))
    if heads is None and not _builtins_loaded:  # The encoder and pretrainer need no task declarations.
        _load_builtins()
        heads = _nearest_heads(type(model))
    return heads


def heads_classes():
    """Every model class with registered checkpoint heads."""
    _load_builtins()
    return tuple(_HEADS)


def for_hf_architecture(architecture, num_labels=None):
    """The `Task` a Hugging Face checkpoint of class `architecture` (e.g. "RobertaForTokenClassification") with
    `num_labels` labels converts to, or None (a base model, a masked-LM or pretraining model, an unknown head)."""
    for task in registered():
        if any(architecture.endswith(suffix) for suffix in task.heads.hf_suffixes) and (
            task.hf_accepts is None or task.hf_accepts(num_labels)
        ):
            return task
    return None


def for_module(module):
    """The `Task` served by a serving module, or None (an encoder's module, or an unregistered class).

    The task whose `serving_class` is nearest in the module's class hierarchy
    and whose `serves(module)` holds.
    """
    for cls in type(module).__mro__:
        for task in registered():
            if task.serving_class is cls and (task.serves is None or task.serves(module)):
                return task
    return None
