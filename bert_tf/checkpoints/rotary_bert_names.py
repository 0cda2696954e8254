"""The name table of `NomicBertEncoder` and `GteEncoder`: our variables, the bert_tf model directory's names,
Hugging Face's.

The model directory stores them under TF1-style names in BERT's scheme
(`bert/embeddings/word_embeddings`, `bert/encoder/layer_i/attention/self/qkv`,
`bert/encoder/layer_i/mlp/up`, ...). Hugging Face names (base model; `nomic_bert.`
and `gte.` in task models), which transformers 5 saves as the original
remote code named them:

- NomicBERT: `embeddings.word_embeddings` `[V, H]`,
  `embeddings.token_type_embeddings`, `emb_ln`; layer i under
  `encoder.layers.i`: `attn.Wqkv` `[3H, H]` (rows: queries, keys, values,
  each head by head; no bias), `attn.out_proj`, `norm1`, `mlp.fc11` (up) and
  `mlp.fc12` (gate) `[I, H]`, `mlp.fc2` (no biases), `norm2`.
- GTE: `embeddings.word_embeddings`, `embeddings.token_type_embeddings`
  (where `type_vocab_size` > 0), `embeddings.LayerNorm`; layer i under
  `encoder.layer.i`: `attention.qkv_proj` `[3H, H]` and `attention.o_proj`
  (with biases), `attn_ln`, `mlp.up_gate_proj` `[2I, H]` (rows: up, then
  gate; no bias), `mlp.down_proj`, `mlp_ln`.

Neither base model has a pooler in Hugging Face (`NomicBertModel` and
`GteModel` are saved without one); the `...ForSequenceClassification`
classes keep BERT's as `pooler.dense` in the base model
(`HF_HEADS[...].sequence_pooler` in `name_table.py`, which registers this
table; this module imports only `entries.py`).
"""

from bert_tf.checkpoints.entries import Entry, layer_norm, pooler_entries


def _dense(ours, tf1, hf, bias):
    """kernel `[in, out]` (HF weight `[out, in]`) and, with `bias`, bias `[out]`."""
    entries = [Entry(f"{ours}/kernel", f"{tf1}/kernel", f"{hf}.weight", hf_transpose=True)]
    if bias:
        entries.append(Entry(f"{ours}/bias", f"{tf1}/bias", f"{hf}.bias"))
    return entries


# Hugging Face module names of each family: the embeddings' LayerNorm, then layer i's parts.
_EMBEDDINGS_NORM = {"nomic_bert": "emb_ln", "gte": "embeddings.LayerNorm"}


def rotary_layer(model_type, i):
    """Hugging Face module names of layer `i` of a `model_type` ("nomic_bert" or "gte") encoder."""
    if model_type == "nomic_bert":
        hf = f"encoder.layers.{i}"
        return {
            "qkv": f"{hf}.attn.Wqkv",
            "attention_output": f"{hf}.attn.out_proj",
            "attention_layer_norm": f"{hf}.norm1",
            "up": f"{hf}.mlp.fc11",
            "gate": f"{hf}.mlp.fc12",
            "down": f"{hf}.mlp.fc2",
            "mlp_layer_norm": f"{hf}.norm2",
        }
    hf = f"encoder.layer.{i}"
    return {
        "qkv": f"{hf}.attention.qkv_proj",
        "attention_output": f"{hf}.attention.o_proj",
        "attention_layer_norm": f"{hf}.attn_ln",
        "up_gate": f"{hf}.mlp.up_gate_proj",
        "down": f"{hf}.mlp.down_proj",
        "mlp_layer_norm": f"{hf}.mlp_ln",
    }


def rotary_encoder_table(encoder):
    """Entries for every variable of a `NomicBertEncoder` or `GteEncoder`, in checkpoint order."""
    model_type = encoder.model_type
    entries = [
        Entry("token_embedding/embeddings", "bert/embeddings/word_embeddings", "embeddings.word_embeddings.weight")
    ]  # [V, H]
    if encoder.segment_embedding is not None:
        entries.append(
            Entry(
                "segment_embedding/embeddings",
                "bert/embeddings/token_type_embeddings",
                "embeddings.token_type_embeddings.weight",
            )
        )  # [G, H]
    entries += layer_norm("embeddings_layer_norm", "bert/embeddings/LayerNorm", _EMBEDDINGS_NORM[model_type])
    for i, block in enumerate(encoder.transformer_layers):
        ours, tf1, hf = f"transformer_layer_{i}", f"bert/encoder/layer_{i}", rotary_layer(model_type, i)
        bias = block.attention_bias
        entries += _dense(f"{ours}/attention/qkv", f"{tf1}/attention/self/qkv", hf["qkv"], bias)  # [H, 3H]
        entries += _dense(
            f"{ours}/attention/attention_output", f"{tf1}/attention/output/dense", hf["attention_output"], bias
        )  # [H, H]
        entries += layer_norm(
            f"{ours}/attention_layer_norm", f"{tf1}/attention/output/LayerNorm", hf["attention_layer_norm"]
        )
        parts = ("up_gate",) if block.fused_mlp else ("up", "gate")  # [H, 2I] or 2 x [H, I]
        for part in parts:
            entries += _dense(f"{ours}/mlp/{part}", f"{tf1}/mlp/{part}", hf[part], block.mlp_up_bias)
        entries += _dense(f"{ours}/mlp/down", f"{tf1}/mlp/down", hf["down"], block.mlp_down_bias)  # [I, H]
        entries += layer_norm(f"{ours}/mlp_layer_norm", f"{tf1}/output/LayerNorm", hf["mlp_layer_norm"])
    entries += pooler_entries(None)  # [H, H]; in HF only in ...ForSequenceClassification (and multiple choice)
    return entries
