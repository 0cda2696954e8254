"""The primitives of every name table: `Entry` (one variable's names in each format) and the entries of
the layer kinds all families share (a Dense, a LayerNorm, a TF1-style logits layer, the pooler).

`name_table.py` (the BERT family) and `deberta_names.py` (DeBERTa-v2) build
their tables from these; so does a task's head (`output_layer`).
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Entry:
    ours: str  # Keras variable path inside the model.
    tf1: str
    hf: str | None
    tf1_transpose: bool = False
    hf_transpose: bool = False
    # Older Hugging Face names accepted on import (LayerNorm gamma/beta).
    hf_aliases: tuple = ()
    # True for base-model tensors, which carry the base-model prefix (`bert.`, `roberta.`, ...) in task models.
    hf_in_base: bool = True
    # May be missing from a checkpoint (the pooler, which MLM-only checkpoints lack): loaded when present, else
    # left freshly initialised with a warning (an error when loading strictly).
    optional: bool = False


def dense(ours, tf1, hf, in_base=True):
    """kernel `[in, out]` (HF weight `[out, in]`) and bias `[out]` of one Dense layer."""
    return [
        Entry(f"{ours}/kernel", f"{tf1}/kernel", hf and f"{hf}.weight", hf_transpose=True, hf_in_base=in_base),
        Entry(f"{ours}/bias", f"{tf1}/bias", hf and f"{hf}.bias", hf_in_base=in_base),
    ]


def layer_norm(ours, tf1, hf, in_base=True):
    """gamma and beta `[H]` of one LayerNorm."""
    return [
        Entry(
            f"{ours}/gamma",
            f"{tf1}/gamma",
            hf and f"{hf}.weight",
            hf_aliases=hf and (f"{hf}.gamma",),
            hf_in_base=in_base,
        ),
        Entry(
            f"{ours}/beta", f"{tf1}/beta", hf and f"{hf}.bias", hf_aliases=hf and (f"{hf}.beta",), hf_in_base=in_base
        ),
    ]


def pooler_entries(hf, in_base=True):
    """The pooler's dense, named `hf` in Hugging Face (None: the architecture has none); optional on import."""
    return [
        dataclasses.replace(entry, optional=True)
        for entry in dense("pooler/dense", "bert/pooler/dense", hf, in_base=in_base)
    ]


def output_layer(ours, tf1, hf):
    """A logits layer stored TF1-style as `output_weights` `[C, H]` and `output_bias` `[C]`.

    Args:
        ours: the Keras path of the Dense layer (e.g. "classifier_head/logits").
        tf1: the TF1 name prefix, "" or ending in "/" (e.g. "cls/squad/").
        hf: the Hugging Face module name (e.g. "classifier"), or None.
    """
    return [
        Entry(
            f"{ours}/kernel",
            f"{tf1}output_weights",
            hf and f"{hf}.weight",
            tf1_transpose=True,
            hf_transpose=True,
            hf_in_base=False,
        ),  # ours [H, C]
        Entry(f"{ours}/bias", f"{tf1}output_bias", hf and f"{hf}.bias", hf_in_base=False),  # [C]
    ]
