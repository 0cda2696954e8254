"""The one name table between our variables, TF1 checkpoints and Hugging Face.

Each `Entry` maps one of our variables, named by its Keras path (e.g.
`transformer_layer_0/attention/query/kernel`), to

- `tf1`: its name in a google-research/bert checkpoint
  (`bert/encoder/layer_0/attention/self/query/kernel`);
- `hf`: its name in a Hugging Face BERT state dict
  (`encoder.layer.0.attention.self.query.weight`), or None where Hugging Face
  has no such tensor (the pre-LN final LayerNorm, our tagger head);

and says whether the stored tensor is the transpose of ours.

Layouts (H hidden, I intermediate, V vocabulary, C classes):

- ours: Dense kernels `[in, out]` (`[H, H]`, `[H, I]`, `[I, H]`), embedding
  tables `[rows, H]`, LayerNorm gamma/beta and biases `[n]`.
- TF1: identical to ours, except the output layers written with
  `tf.matmul(x, w, transpose_b=True)`: `cls/seq_relationship/output_weights`
  `[2, H]`, run_classifier's `output_weights` `[C, H]` and run_squad's
  `cls/squad/output_weights` `[2, H]`.
- Hugging Face: `nn.Linear.weight` is `[out, in]`, the transpose of our
  kernels; embeddings and vectors are identical. Base-model names carry a
  `bert.` prefix inside task models (`BertForPreTraining`) and none in a bare
  `BertModel`; old checkpoints name LayerNorm parameters `gamma`/`beta`
  instead of `weight`/`bias` (accepted on import through `hf_aliases`).

The masked-LM decoder matrix is not in the table: it is tied to the word
embeddings (`bert/embeddings/word_embeddings`), in every format.

Which entries a model has comes from the task registry
(`bert_tf.tasks.registry.ModelHeads`, looked up by model class): this module
registers the encoder's and the pretrainer's; each fine-tuning task declares
its head's table with the task (`bert_tf/tasks/*.py`).
"""

import dataclasses

from bert_tf.models import BertEncoder, BertPretrainer
from bert_tf.tasks import registry

# bert_tf-specific TF1 name for a tensor with no reference name.
FINAL_LAYER_NORM_TF1 = "bert/encoder/bert_tf_final_layer_norm"


@dataclasses.dataclass(frozen=True)
class Entry:
    ours: str  # Keras variable path inside the model.
    tf1: str
    hf: str | None
    tf1_transpose: bool = False
    hf_transpose: bool = False
    # Older Hugging Face names accepted on import (LayerNorm gamma/beta).
    hf_aliases: tuple = ()
    # True for base-model tensors, which carry the `bert.` prefix in task models.
    hf_in_base: bool = True


def _dense(ours, tf1, hf, in_base=True):
    """kernel `[in, out]` (HF weight `[out, in]`) and bias `[out]` of one Dense layer."""
    return [
        Entry(f"{ours}/kernel", f"{tf1}/kernel", hf and f"{hf}.weight", hf_transpose=True, hf_in_base=in_base),
        Entry(f"{ours}/bias", f"{tf1}/bias", hf and f"{hf}.bias", hf_in_base=in_base),
    ]


def _layer_norm(ours, tf1, hf, in_base=True):
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


def encoder_table(num_layers, pre_layer_norm=False):
    """Entries for every variable of a `BertEncoder`, in checkpoint order."""
    entries = [
        Entry(
            "embeddings/token_embedding/embeddings",
            "bert/embeddings/word_embeddings",
            "embeddings.word_embeddings.weight",
        ),  # [V, H]
        Entry(
            "embeddings/segment_embedding/embeddings",
            "bert/embeddings/token_type_embeddings",
            "embeddings.token_type_embeddings.weight",
        ),  # [G, H]
        Entry(
            "embeddings/position_embedding",
            "bert/embeddings/position_embeddings",
            "embeddings.position_embeddings.weight",
        ),  # [S, H]
        *_layer_norm("embeddings/layer_norm", "bert/embeddings/LayerNorm", "embeddings.LayerNorm"),
    ]
    for i in range(num_layers):
        ours, tf1, hf = f"transformer_layer_{i}", f"bert/encoder/layer_{i}", f"encoder.layer.{i}"
        for part in ("query", "key", "value"):
            entries += _dense(
                f"{ours}/attention/{part}", f"{tf1}/attention/self/{part}", f"{hf}.attention.self.{part}"
            )  # [H, H]
        entries += _dense(
            f"{ours}/attention/attention_output", f"{tf1}/attention/output/dense", f"{hf}.attention.output.dense"
        )  # [H, H]
        entries += _layer_norm(
            f"{ours}/attention_layer_norm", f"{tf1}/attention/output/LayerNorm", f"{hf}.attention.output.LayerNorm"
        )
        entries += _dense(f"{ours}/intermediate", f"{tf1}/intermediate/dense", f"{hf}.intermediate.dense")  # [H, I]
        entries += _dense(f"{ours}/output", f"{tf1}/output/dense", f"{hf}.output.dense")  # [I, H]
        entries += _layer_norm(f"{ours}/output_layer_norm", f"{tf1}/output/LayerNorm", f"{hf}.output.LayerNorm")
    if pre_layer_norm:
        entries += _layer_norm("final_layer_norm", FINAL_LAYER_NORM_TF1, None)
    entries += _dense("pooler/dense", "bert/pooler/dense", "pooler.dense")  # [H, H]
    return entries


def mlm_head_table():
    """`BertPretrainer.mlm_head` <-> `cls/predictions/*` (decoder tied to word embeddings)."""
    return [
        *_dense(
            "mlm_head/transform_dense",
            "cls/predictions/transform/dense",
            "cls.predictions.transform.dense",
            in_base=False,
        ),  # [H, H]
        *_layer_norm(
            "mlm_head/transform_layer_norm",
            "cls/predictions/transform/LayerNorm",
            "cls.predictions.transform.LayerNorm",
            in_base=False,
        ),
        Entry(
            "mlm_head/output_bias",
            "cls/predictions/output_bias",
            "cls.predictions.bias",
            hf_aliases=("cls.predictions.decoder.bias",),
            hf_in_base=False,
        ),  # [V]
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


def nsp_head_table():
    """`BertPretrainer.nsp_head` <-> `cls/seq_relationship/*`."""
    return output_layer("nsp_head/logits", "cls/seq_relationship/", "cls.seq_relationship")


def model_table(model):
    """Entries for every variable of `model`: an encoder or a model on one with registered heads.

    The model's class (or its nearest registered base class) names its head
    variables (`bert_tf.tasks.registry.heads_for`); a task model's encoder
    (`model.encoder`) names the rest.

    Returns:
        (encoder, entries): the model's encoder and the list of `Entry`.
    """
    heads = registry.heads_for(model)
    if heads is None:
        known = ", ".join(sorted(cls.__name__ for cls in registry.heads_classes()))
        raise ValueError(
            f"No checkpoint name table for {type(model).__name__}: expected an encoder or a task model on one "
            f"({known}), or a model class registered with `bert_tf.tasks.register`. Received: model={model!r}"
        )
    if heads.is_encoder:
        return model, heads.entries(model)
    encoder = getattr(model, "encoder", None)
    encoder_heads = registry.heads_for(encoder)
    if encoder_heads is None or not encoder_heads.is_encoder:
        raise ValueError(
            f"{type(model).__name__} has no encoder with a checkpoint name table at `model.encoder`. "
            f"Received: model={model!r}"
        )
    return encoder, encoder_heads.entries(encoder) + heads.entries(model)


# === The encoder and the pretrainer (not fine-tuning tasks) ===


def _encoder_entries(encoder):
    return encoder_table(encoder.num_layers, encoder.pre_layer_norm)


def _pretrainer_entries(pretrainer):
    return mlm_head_table() + (nsp_head_table() if pretrainer.nsp else [])


def _pretrainer_architecture(pretrainer):
    return "BertForPreTraining" if pretrainer.nsp else "BertForMaskedLM"


registry.register_heads(
    registry.ModelHeads(BertEncoder, _encoder_entries, hf_architecture=lambda encoder: "BertModel", is_encoder=True)
)
registry.register_heads(
    registry.ModelHeads(BertPretrainer, _pretrainer_entries, hf_architecture=_pretrainer_architecture)
)
