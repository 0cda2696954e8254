"""bert_tf.tasks: every fine-tuning task declared once.

    from bert_tf import tasks
    tasks.names()                  # ("classification", "embedding", "ner", "regression", "squad")
    task = tasks.get("ner")        # its model, objective, metric, data, serving module, checkpoint heads
    model, settings = tasks.load_model("runs/conll")  # whatever a checkpoint holds, task models included

One file per task family declares its tasks (`classification.py`: classification
and regression; `ner.py`; `squad.py`; `embedding.py`); `registry.py` holds the
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
from bert_tf.tasks import classification, embedding, ner, squad  # noqa: F401
from bert_tf.tasks.loading import convert_checkpoint, load_model
from bert_tf.tasks.registry import (
    ServingOptions,
    Task,
    for_hf_architecture,
    for_module,
    get,
    names,
    register,
    registered,
    unregister,
)

__all__ = [
    "ModelHeads",
    "ServingOptions",
    "Task",
    "convert_checkpoint",
    "for_hf_architecture",
    "for_module",
    "get",
    "heads_classes",
    "heads_for",
    "load_model",
    "names",
    "register",
    "register_heads",
    "registered",
    "unregister",
]
