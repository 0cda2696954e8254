"""The task registry: every fine-tuning task declared once, looked up by name, Hugging Face class or serving module.

A `Task` says everything fine-tuning, distillation, export and checkpoint
loading need to know about one task. Fine-tuning (`finetune`), distillation
(`distill`: `distillable`, `data_with_index`), export (`load_task_model`,
`serving_module`, the `kind` of the export metadata), `bert_tf.tasks.load_model`
and the `--task` flags ask this module; none of them lists tasks or switches
on model classes.

How checkpoints name a model's variables is a `ModelHeads`, registered by
model class in `bert_tf.checkpoints.model_heads` (below this package, so
checkpoints never import tasks): `name_table.py` registers those of the model
classes of `bert_tf.models`; `register` registers a task's own. The
built-in declarations (`classification.py`, `ner.py`, `squad.py`,
`embedding.py`) are imported by `bert_tf/tasks/__init__.py`, so importing
`bert_tf.tasks` (or any of its modules) registers them.
"""

import dataclasses
from collections.abc import Callable

from bert_tf.checkpoints.model_heads import ModelHeads, register_heads, registered_heads, unregister_heads
from bert_tf.options import compose, default_of, find_field
from bert_tf.serving.options import ServingOptions


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
        heads: the checkpoint names of the model's head (a `ModelHeads`: for
            the model classes of `bert_tf.models`, the one `name_table.py`
            registers, e.g. `name_table.CLASSIFIER_HEADS`; `register` registers
            a task's own).
        objective: the `bert_tf.objectives.Objective` the model trains with.
        objective_of: `(config, model) -> Objective`, the objective of a run
            whose options change it (the embedding task's
            `matryoshka_dims`), called by fine-tuning once the model is
            built; ValueError naming the option when it does not fit the
            model. None: `objective`.
        best_metric: the evaluation metric (higher is better) that picks the
            checkpoint kept in the model directory.
        needs_labels: the model needs label names (read from the training
            data, saved as `labels` in `bert_tf.json`).
        data: `(config, tokenizer, max_position_embeddings) -> task data`, see
            "Task data" below.
        serving_class: the serving module class (a `bert_tf.serving.ServingModule`).
        serving_module: `(model, tokenizer, max_seq_length, label_names,
            options) -> serving module`; `options` is a `serving_options_class()`
            instance (`bert_tf.serving.options.ServingOptions`' fields and every
            task's `serving_options`), this task's resolved (`served_with`).
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
            `bert_tf.tasks.load_model` passes the directory's.
        recorded_settings: names of `FinetuneConfig` fields recorded in the
            model directory's `bert_tf.json` as they were set (how the model was
            trained, that the export and `SentenceEmbedder` default to: the
            sentence tasks' `long_text` and `window_stride`, squad's
            `doc_stride`, `max_query_length` and `max_answer_length`).
        distillable: `distill` accepts a teacher of this task (its objective's
            outputs are logits the student can match); False: refused by name.
        data_with_index: the task data has `train_inputs(batch_size)` (the
            training examples' encoder inputs in file order) and
            `train_dataset(..., with_index=True)` (batches carrying each row's
            `example_index`), so a teacher's outputs can be precomputed
            (`distill(precompute_teacher=True)`).
        options: the task's own options, a `kw_only` dataclass of
            `bert_tf.options.option` fields (e.g. `SquadOptions`), or None.
            `FinetuneConfig` (and `DistillConfig`, for a distillable task)
            inherits its fields, so `task.data(config, ...)` reads them as
            `config.NAME`, and bert-tf-finetune has a flag for each. Tasks may
            share an options class; an option several classes declare must be
            the same declaration (a common base class).
        settings_mark: a `bert_tf.json` setting whose presence makes a
            directory without `task` this task's model (the sparse encoder's
            `sparse_pooling`, which a sentence-transformers SparseEncoder
            folder gives); None: only `task` (or a Hugging Face head) does.
        serving_options: the options the task's serving module reads besides
            `bert_tf.serving.options.ServingOptions`' (a `kw_only` dataclass of
            option fields, e.g. squad's windows and answer length), or None.
            bert-tf-export has a flag for each. An option left None is the
            model directory's recorded setting of that name (`recorded_settings`),
            else the default of the task's training option of that name
            (`options`), else None (`served_with`).

    Task data (what `data(...)` returns; the built-in tasks' classes derive from `common.TaskData`) has:
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
    # (docs/results/2026-11-26-fine-tuning-quality-vs-keras-hub.md, tools/finetune_quality.py).
    head_initializer: str = "glorot_uniform"
    hf_accepts: Callable | None = None
    model_settings: tuple = ()
    recorded_settings: tuple = ()
    distillable: bool = False
    data_with_index: bool = False
    options: type | None = None
    serving_options: type | None = None
    objective_of: Callable | None = None
    settings_mark: str | None = None

    def objective_for(self, config, model):
        """The objective fine-tuning trains `model` with under `config` (`objective_of`, else `objective`)."""
        return self.objective if self.objective_of is None else self.objective_of(config, model)

    def served_with(self, options, settings):
        """`options` (a `serving_options_class()` instance) with each of this task's `serving_options` left None
        set as the model directory says (`settings`, its bert_tf.json: how fine-tuning read the data), else to the
        default of the task's training option of the same name."""
        if self.serving_options is None:
            return options
        resolved = {}
        for field in dataclasses.fields(self.serving_options):
            if getattr(options, field.name) is not None:
                continue
            if field.name in self.recorded_settings and settings.get(field.name) is not None:
                resolved[field.name] = settings[field.name]
            elif self.options is not None and field.name in {f.name for f in dataclasses.fields(self.options)}:
                resolved[field.name] = default_of(find_field(self.options, field.name))
        return dataclasses.replace(options, **resolved)


_TASKS = {}  # name -> Task
_OWN_HEADS = set()  # model classes whose heads a task registered (not `name_table.py`)


def register(task, replace=False):
    """Registers `task` (and its model heads); returns it.

    A name already registered raises ValueError unless `replace`.
    """
    if task.name in _TASKS and _TASKS[task.name] is not task and not replace:
        raise ValueError(f"A task named {task.name!r} is already registered. Received: task={task.name!r}")
    if registered_heads(task.heads.model_class) is not task.heads:
        register_heads(task.heads, replace=replace)
        _OWN_HEADS.add(task.heads.model_class)
    _TASKS[task.name] = task
    return task


def unregister(name):
    """Removes the task `name` (the model heads it registered stay while another task uses them; those of the
    model classes of `bert_tf.models` always stay)."""
    task = _TASKS.pop(name, None)
    if task is None or task.heads.model_class not in _OWN_HEADS:
        return
    if all(other.heads is not task.heads for other in _TASKS.values()):
        unregister_heads(task.heads)
        _OWN_HEADS.discard(task.heads.model_class)


def names(where=None):
    """The registered task names, sorted (registration order depends on which module was imported first).

    `where`: a `Task -> bool` filter, e.g. `names(lambda task: task.distillable)`.
    """
    return tuple(sorted(name for name, task in _TASKS.items() if where is None or where(task)))


def registered():
    """The registered `Task`s, sorted by name."""
    return tuple(_TASKS[name] for name in names())


def get(name):
    """The `Task` named `name`; ValueError listing the known names when there is none."""
    task = _TASKS.get(name)
    if task is None:
        raise ValueError(f"Unknown task. `task` must be one of {names()}. Received: task={name!r}")
    return task


def for_hf_architecture(architecture, num_labels=None):
    """The `Task` a Hugging Face checkpoint of class `architecture` (e.g. "RobertaForTokenClassification") with
    `num_labels` labels converts to, or None (a base model, a masked-LM or pretraining model, an unknown head)."""
    for task in registered():
        if any(architecture.endswith(suffix) for suffix in task.heads.hf_suffixes) and (
            task.hf_accepts is None or task.hf_accepts(num_labels)
        ):
            return task
    return None


def for_settings(settings):
    """The `Task` whose `settings_mark` is in `settings` (a directory's settings without `task`), or None."""
    for task in registered():
        if task.settings_mark is not None and task.settings_mark in settings:
            return task
    return None


def serving_options_class(task_list=None):
    """The serving options of `task_list` (default: the registered tasks): `bert_tf.serving.options.ServingOptions`
    and each task's `serving_options`, the options `bert_tf.export.serving_module` takes. The same tasks give the
    same class."""
    task_list = registered() if task_list is None else task_list
    return compose(
        "TaskServingOptions",
        (ServingOptions, *(task.serving_options for task in task_list if task.serving_options is not None)),
        module=__name__,
        doc="The options of a served model: `ServingOptions`' and those of the registered tasks' serving modules.",
    )


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
