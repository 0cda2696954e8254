"""bert_tf.tasks: every fine-tuning task declared once.

    from bert_tf import tasks
    tasks.names()                  # ("classification", "embedding", "ner", "regression", "squad")
    task = tasks.get("ner")        # its model, objective, metric, data, serving module, checkpoint heads
    model, settings = tasks.load_model("runs/conll")  # whatever a checkpoint holds, task models included

One file per task family declares its tasks (`classification.py`: classification
and regression; `ner.py`; `squad.py`; `embedding.py`; `sparse_embedding.py`; `rerank.py`); `registry.py` holds the
`Task` declaration type and the lookups that fine-tuning, distillation, export
and the apps use; `loading.py` builds whole models from checkpoints
(`load_model`, `convert_checkpoint`). A new task is a `Task` passed to
`register`; a built-in one is also one import line below.

This package sits above `checkpoints`, `embeddings`, `serving`, `objectives`,
`data` and `models`, and below `training` and `export`, which consume its
declarations (docs/ARCHITECTURE.md, checked by tests/architecture_test.py).
"""

from bert_tf.checkpoints.model_heads import ModelHeads, heads_classes, heads_for, register_heads

# The built-in tasks: each module registers its tasks when imported (a new built-in task is one name here).
from bert_tf.tasks import classification, embedding, ner, rerank, sparse_embedding, squad  # noqa: F401
from bert_tf.tasks.loading import convert_checkpoint, load_model
from bert_tf.tasks.registry import (
    Task,
    for_hf_architecture,
    for_module,
    for_settings,
    get,
    names,
    register,
    registered,
    serving_options_class,
    unregister,
)

__all__ = [
    "ModelHeads",
    "ServingOptions",
    "Task",
    "convert_checkpoint",
    "for_hf_architecture",
    "for_module",
    "for_settings",
    "get",
    "heads_classes",
    "heads_for",
    "load_model",
    "names",
    "register",
    "register_heads",
    "registered",
    "serving_options_class",
    "unregister",
]


def __getattr__(name):
    # `ServingOptions`: the serving options of the tasks registered when asked for (`serving_options_class`), as
    # `finetuning.FinetuneConfig` is composed from the registry.
    if name == "ServingOptions":
        return serving_options_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
