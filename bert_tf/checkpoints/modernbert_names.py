"""The name table of `ModernBertEncoder`: our variables, the bert_tf model directory's names, Hugging Face's.

The model directory stores every family under TF1-style names; ModernBERT's
tensors get bert_tf names in the same scheme (`bert/encoder/layer_i/attention/self/qkv`,
`bert/encoder/layer_i/mlp/Wi`, `bert/encoder/final_norm`, ...). Hugging Face
names (`ModernBertModel`; `model.` in task models):

- `embeddings.tok_embeddings` `[V, H]` and `embeddings.norm`;
- `layers.i.attn_norm` (not in layer 0: transformers uses an identity there),
  `layers.i.attn.Wqkv` `[3H, H]` (rows: queries, keys, values, each head by
  head), `layers.i.attn.Wo`, `layers.i.mlp_norm`, `layers.i.mlp.Wi`
  `[2I, H]` (rows: the GeGLU's input, then its gate), `layers.i.mlp.Wo`;
- `final_norm`.

Biases exist only where the config says (`norm_bias` for every LayerNorm,
`attention_bias`, `mlp_bias`, `classifier_bias` for the heads' dense), so
the entries follow the encoder's options. The base model has no pooler:
`ModernBertForSequenceClassification` keeps the pooled output's dense and
LayerNorm as `head.dense` and `head.norm` (`modernbert_pooler_entries`), and
`ModernBertForMaskedLM` has a `head` of the same form that is the masked-LM
transform (`HF_HEADS["modernbert"].mlm` in `name_table.py`).
`ModernBertForTokenClassification` and `ModernBertForQuestionAnswering` run
a `head` of that form on every token before their `classifier` (both call
their logits layer `classifier`): our task models' `PredictionHead`
(`prediction_head_entries`).

`name_table.py` registers this table for `ModernBertEncoder` (it imports this
module; this one imports only `entries.py`, the primitives both use).
"""

import dataclasses

from bert_tf.checkpoints.entries import Entry


def _dense(ours, tf1, hf, bias, in_base=True):
    """kernel `[in, out]` (HF weight `[out, in]`) and, with `bias`, bias `[out]`."""
    entries = [Entry(f"{ours}/kernel", f"{tf1}/kernel", hf and f"{hf}.weight", hf_transpose=True, hf_in_base=in_base)]
    if bias:
        entries.append(Entry(f"{ours}/bias", f"{tf1}/bias", hf and f"{hf}.bias", hf_in_base=in_base))
    return entries


def _layer_norm(ours, tf1, hf, bias, in_base=True):
    """gamma `[H]` and, with `bias`, beta `[H]`."""
    entries = [Entry(f"{ours}/gamma", f"{tf1}/gamma", hf and f"{hf}.weight", hf_in_base=in_base)]
    if bias:
        entries.append(Entry(f"{ours}/beta", f"{tf1}/beta", hf and f"{hf}.bias", hf_in_base=in_base))
    return entries


def modernbert_layer(i):
    """Hugging Face module names of ModernBERT layer `i`."""
    hf = f"layers.{i}"
    return {
        "attention_layer_norm": f"{hf}.attn_norm",
        "qkv": f"{hf}.attn.Wqkv",
        "attention_output": f"{hf}.attn.Wo",
        "mlp_layer_norm": f"{hf}.mlp_norm",
        "intermediate": f"{hf}.mlp.Wi",
        "output": f"{hf}.mlp.Wo",
    }


def prediction_head_entries(head, ours, tf1, hf):
    """A `PredictionHead` layer `head` (`ours`: its Keras path) <-> `tf1` and the task head module `hf` (outside
    the base model; `head` in ModernBERT's token-classification and QA classes): dense kernel `[H, H]` and, as
    the layer has them, bias; LayerNorm gamma and beta."""
    entries = _dense(f"{ours}/dense", f"{tf1}/dense", hf and f"{hf}.dense", head.use_bias, in_base=False)
    entries += _layer_norm(f"{ours}/norm", f"{tf1}/LayerNorm", hf and f"{hf}.norm", head.norm_bias, in_base=False)
    return entries


def modernbert_pooler_entries(encoder, hf=None, in_base=True):
    """The pooled output's dense and LayerNorm (`PoolingHead`), named `hf` in Hugging Face (`head` in
    `ModernBertForSequenceClassification`; None: the model has none); optional on import, as every pooler."""
    entries = _dense("pooler/dense", "bert/pooler/dense", hf and f"{hf}.dense", encoder.classifier_bias, in_base)
    entries += _layer_norm("pooler/norm", "bert/pooler/LayerNorm", hf and f"{hf}.norm", encoder.norm_bias, in_base)
    return [dataclasses.replace(entry, optional=True) for entry in entries]


def modernbert_encoder_table(encoder):
    """Entries for every variable of a `ModernBertEncoder`, in checkpoint order."""
    norm_bias = encoder.norm_bias
    entries = [
        Entry("token_embedding/embeddings", "bert/embeddings/word_embeddings", "embeddings.tok_embeddings.weight")
    ]  # [V, H]
    entries += _layer_norm("embeddings_layer_norm", "bert/embeddings/LayerNorm", "embeddings.norm", norm_bias)
    for i, block in enumerate(encoder.transformer_layers):
        ours, tf1, hf = f"transformer_layer_{i}", f"bert/encoder/layer_{i}", modernbert_layer(i)
        if block.attention_layer_norm is not None:
            entries += _layer_norm(
                f"{ours}/attention_layer_norm", f"{tf1}/attention/LayerNorm", hf["attention_layer_norm"], norm_bias
            )
        entries += _dense(
            f"{ours}/attention/qkv", f"{tf1}/attention/self/qkv", hf["qkv"], encoder.attention_bias
        )  # [H, 3H]
        entries += _dense(
            f"{ours}/attention/attention_output",
            f"{tf1}/attention/output/dense",
            hf["attention_output"],
            encoder.attention_bias,
        )  # [H, H]
        entries += _layer_norm(f"{ours}/mlp_layer_norm", f"{tf1}/mlp/LayerNorm", hf["mlp_layer_norm"], norm_bias)
        entries += _dense(f"{ours}/mlp/intermediate", f"{tf1}/mlp/Wi", hf["intermediate"], encoder.mlp_bias)  # [H, 2I]
        entries += _dense(f"{ours}/mlp/output", f"{tf1}/mlp/Wo", hf["output"], encoder.mlp_bias)  # [I, H]
    entries += _layer_norm("final_layer_norm", "bert/encoder/final_norm", "final_norm", norm_bias)
    entries += modernbert_pooler_entries(encoder)  # [H, H]; in HF only in ...ForSequenceClassification
    return entries
