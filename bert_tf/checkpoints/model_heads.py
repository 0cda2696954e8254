"""Which checkpoint names each model class has: `ModelHeads`, registered and looked up by model class.

`name_table.py` registers the heads of every model class of `bert_tf.models`
(the encoders, the pretrainer and the task models); a task with a model class
of its own registers that class's heads with the task (`bert_tf.tasks.register`).
`name_table.model_table(model)` asks `heads_for(model)`. This module imports
nothing from bert_tf.
"""

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class ModelHeads:
    """How checkpoints name the head variables of one model class.

    Attributes:
        model_class: the Keras model class (subclasses are found through it).
        entries: `model -> list[entries.Entry]` for the head variables alone
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
        pooler_entries: for an encoder whose pooler is not one dense
            (ModernBERT's dense and LayerNorm): `(encoder, module, in base
            model) -> entries` of its pooler where a task model's `hf_pooler`
            places it (module None: nowhere); None: `entries.pooler_entries`.
    """

    model_class: type
    entries: Callable
    hf_architecture: Callable
    hf_num_labels: Callable | None = None
    is_encoder: bool = False
    hf_pooler: Callable | None = None
    hf_suffixes: tuple = ()
    pooler_entries: Callable | None = None


_HEADS = {}  # model class -> ModelHeads


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


def unregister_heads(heads):
    """Removes `heads` (when it is the declaration registered for its class)."""
    if _HEADS.get(heads.model_class) is heads:
        del _HEADS[heads.model_class]


def registered_heads(model_class):
    """The `ModelHeads` registered for exactly `model_class`, or None."""
    return _HEADS.get(model_class)


def heads_for(model):
    """The `ModelHeads` of `model`'s class or its nearest registered base class, or None."""
    return next((_HEADS[base] for base in type(model).__mro__ if base in _HEADS), None)


def heads_classes():
    """Every model class with registered checkpoint heads."""
    return tuple(_HEADS)
