"""bert_tf.tasks: every fine-tuning task declared once.

    from bert_tf import tasks
    tasks.names()                  # ("classification", "embedding", "ner", "regression", "squad")
    task = tasks.get("ner")        # its model, objective, metric, data, serving module, checkpoint heads

One file per task family declares its tasks (`classification.py`: classification
and regression; `ner.py`; `squad.py`; `embedding.py`); `registry.py` holds the `Task` and
`ModelHeads` declaration types and the lookups that fine-tuning, export,
checkpoints and the apps use. A new task is a `Task` passed to `register`.
"""

from bert_tf.tasks.registry import (
    ModelHeads,
    ServingOptions,
    Task,
    for_hf_architecture,
    for_module,
    get,
    heads_for,
    names,
    register,
    register_heads,
    registered,
    unregister,
)

__all__ = [
    "ModelHeads",
    "ServingOptions",
    "Task",
    "for_hf_architecture",
    "for_module",
    "get",
    "heads_for",
    "names",
    "register",
    "register_heads",
    "registered",
    "unregister",
]
