"""The name table of `DebertaV2Encoder`: our variables, the bert_tf model directory's names, Hugging Face's.

The model directory stores every family under TF1-style names; DeBERTa's own
tensors get bert_tf names in the same scheme (`bert/encoder/rel_embeddings`,
`bert/encoder/layer_i/attention/self/pos_key`, `bert/encoder/conv/...`).
Hugging Face names (`DebertaV2Model`; `deberta.` in task models):

- `embeddings.word_embeddings`, `embeddings.position_embeddings` (only when
  `position_biased_input`), `embeddings.token_type_embeddings` (only when
  `type_vocab_size` > 0), `embeddings.embed_proj` (no bias; only when
  `embedding_size` differs from `hidden_size`), `embeddings.LayerNorm`;
- `encoder.rel_embeddings` `[2S, H]` and its LayerNorm `encoder.LayerNorm`
  (when `norm_rel_ebd` is "layer_norm");
- `encoder.layer.i.attention.self.{query,key,value}_proj` (and
  `pos_key_proj` / `pos_query_proj` without `share_att_key`), then BERT's
  `attention.output.dense`, `attention.output.LayerNorm`, `intermediate.dense`,
  `output.dense`, `output.LayerNorm`;
- `encoder.conv.conv` (Conv1d weight `[H, H / groups, k]`, the reverse of our
  `[k, H / groups, H]` kernel) and `encoder.conv.LayerNorm`.

`name_table.py` registers this table for `DebertaV2Encoder` (it imports this
module; this one imports only `entries.py`, the primitives both use).

The base model has no pooler: `pooler.dense` lives in
`DebertaV2ForSequenceClassification` (`HF_HEADS["deberta-v2"].sequence_pooler`).
"""

from bert_tf.checkpoints.entries import Entry, pooler_entries


def _dense(ours, tf1, hf, bias=True):
    """kernel `[in, out]` (HF weight `[out, in]`) and bias `[out]`."""
    entries = [Entry(f"{ours}/kernel", f"{tf1}/kernel", f"{hf}.weight", hf_transpose=True)]
    if bias:
        entries.append(Entry(f"{ours}/bias", f"{tf1}/bias", f"{hf}.bias"))
    return entries


def _layer_norm(ours, tf1, hf):
    """gamma and beta `[H]`."""
    return [Entry(f"{ours}/gamma", f"{tf1}/gamma", f"{hf}.weight"), Entry(f"{ours}/beta", f"{tf1}/beta", f"{hf}.bias")]


def deberta_layer(i):
    """Hugging Face module names of DeBERTa-v2 layer `i` (the `HfHeads.encoder_layer` of the family)."""
    hf = f"encoder.layer.{i}"
    return {
        "query": f"{hf}.attention.self.query_proj",
        "key": f"{hf}.attention.self.key_proj",
        "value": f"{hf}.attention.self.value_proj",
        "pos_key": f"{hf}.attention.self.pos_key_proj",
        "pos_query": f"{hf}.attention.self.pos_query_proj",
        "attention_output": f"{hf}.attention.output.dense",
        "attention_layer_norm": f"{hf}.attention.output.LayerNorm",
        "intermediate": f"{hf}.intermediate.dense",
        "output": f"{hf}.output.dense",
        "output_layer_norm": f"{hf}.output.LayerNorm",
    }


def deberta_encoder_table(encoder):
    """Entries for every variable of a `DebertaV2Encoder`, in checkpoint order."""
    entries = [
        Entry(
            "embeddings/token_embedding/embeddings",
            "bert/embeddings/word_embeddings",
            "embeddings.word_embeddings.weight",
        )
    ]  # [V, E]
    if encoder.position_biased_input:
        entries.append(
            Entry(
                "embeddings/position_embedding/embeddings",
                "bert/embeddings/position_embeddings",
                "embeddings.position_embeddings.weight",
            )
        )  # [S, E]
    if encoder.type_vocab_size:
        entries.append(
            Entry(
                "embeddings/segment_embedding/embeddings",
                "bert/embeddings/token_type_embeddings",
                "embeddings.token_type_embeddings.weight",
            )
        )  # [G, E]
    if encoder.embeddings.projection is not None:
        entries += _dense("embeddings/projection", "bert/embeddings/embed_proj", "embeddings.embed_proj", bias=False)
    entries += _layer_norm("embeddings/layer_norm", "bert/embeddings/LayerNorm", "embeddings.LayerNorm")
    entries.append(
        Entry("relative_embeddings/embeddings", "bert/encoder/rel_embeddings", "encoder.rel_embeddings.weight")
    )  # [2S, H]
    if encoder.norm_rel_ebd == "layer_norm":
        entries += _layer_norm(
            "relative_embeddings/layer_norm", "bert/encoder/rel_embeddings/LayerNorm", "encoder.LayerNorm"
        )
    for i, block in enumerate(encoder.transformer_layers):
        ours, tf1, hf = f"transformer_layer_{i}", f"bert/encoder/layer_{i}", deberta_layer(i)
        parts = ["query", "key", "value"]
        parts += [part for part in ("pos_key", "pos_query") if getattr(block.attention, f"{part}_dense") is not None]
        for part in parts:
            entries += _dense(f"{ours}/attention/{part}", f"{tf1}/attention/self/{part}", hf[part])  # [H, H]
        entries += _dense(f"{ours}/attention/attention_output", f"{tf1}/attention/output/dense", hf["attention_output"])
        entries += _layer_norm(
            f"{ours}/attention_layer_norm", f"{tf1}/attention/output/LayerNorm", hf["attention_layer_norm"]
        )
        entries += _dense(f"{ours}/intermediate", f"{tf1}/intermediate/dense", hf["intermediate"])  # [H, I]
        entries += _dense(f"{ours}/output", f"{tf1}/output/dense", hf["output"])  # [I, H]
        entries += _layer_norm(f"{ours}/output_layer_norm", f"{tf1}/output/LayerNorm", hf["output_layer_norm"])
    if encoder.convolution is not None:
        # ours [k, H / groups, H]; HF Conv1d [H, H / groups, k]: the full transpose (`.T`) of ours.
        entries += _dense("convolution/conv", "bert/encoder/conv", "encoder.conv.conv")
        entries += _layer_norm("convolution/layer_norm", "bert/encoder/conv/LayerNorm", "encoder.conv.LayerNorm")
    entries += pooler_entries(None)  # [H, H]; in HF only in ...ForSequenceClassification
    return entries
