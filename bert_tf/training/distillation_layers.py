"""What layer-by-layer distillation reads of an encoder: its states layer by layer, and each layer's attention map.

Hidden-state, cosine and attention losses (`Distiller` with `states` or
`attention`) compare the embedding output and the output of each layer, and
each layer's attention probabilities. The encoders' own forward paths compute
neither as a separate output, so they are recomputed here from the encoders'
layers, without changing those paths:

- `encoder_states`: the encoder's graph run layer by layer (the same
  computation as `encoder(inputs)`), plus the embedding output and, when asked,
  each layer's attention probabilities.
- `attention_probabilities`: a block's attention probabilities recomputed from
  its input and its projections (before attention dropout).

The encoders read are those that declare `layerwise` (`bert_tf.models.Encoder`:
each applied block is `block(x, padding_mask, *block_arguments)` after the
encoder's `embed`): `BertEncoder` (BERT, RoBERTa, DistilBERT, ELECTRA, ALBERT,
XLM-RoBERTa, MPNet: the applied blocks, shared ones repeated, are
`TransformerBlock`s; MPNet's take its relative position bias), `ModernBertEncoder`
(`ModernBertBlock`s: rotary queries and keys, global or sliding-window
attention) and NomicBERT's and GTE's `RotaryBertEncoder` (post-norm
`RotaryTransformerBlock`s: rotary queries and keys, the config's scaling). DeBERTa's disentangled attention has no such recomputation yet:
`distilled_blocks` refuses it by name, and soft-target and hard-label
distillation (which only read the task outputs) work for every family.

Shape legend: B batch, T tokens, H hidden, N heads, D = H / N, L layers.
"""

import math

import tensorflow as tf
from keras import ops

from bert_tf.layers import ModernBertBlock, RotaryTransformerBlock, TransformerBlock, in_window
from bert_tf.layers.bert_self_attention import MASK_BIAS


def distilled_blocks(encoder):
    """The blocks an encoder applies, in order (ALBERT's shared blocks repeated): one per layer whose output and
    attention map distillation compares. ValueError naming the encoder's class and family for an encoder whose
    layers are not read here (DeBERTa: its `layerwise` is false)."""
    if getattr(encoder, "layerwise", False):
        return list(encoder.applied_layers)
    raise ValueError(
        "Hidden-state, attention and cosine distillation read the layers of a BertEncoder (BERT, RoBERTa, "
        "DistilBERT, ELECTRA, ALBERT, XLM-RoBERTa, MPNet), a ModernBertEncoder (ModernBERT) or a RotaryBertEncoder "
        f"(NomicBERT, GTE); soft-target and hard-label losses work for every family. Received: an encoder of class {type(encoder).__name__} (model_type "
        f"{getattr(encoder, 'model_type', '?')!r})"
    )


def encoder_states(encoder, inputs, training=False, attention=False):
    """An encoder's graph run layer by layer: its output dict, plus `attention` probabilities per layer.

    The same computation as `encoder(inputs)` (embeddings, every applied
    block on all positions, the final LayerNorm of pre-LN encoders and of
    ModernBERT, the pooler), plus `embedding_output` (float32 `[B, T, H]`, the
    first block's input); `encoder_outputs` holds each layer's output, the last
    one after the final LayerNorm where the encoder has one (as its own
    `encoder_outputs`). When `attention`, the result also has
    `attention_probabilities`, one float32 `[B, N, T, T]` per layer.

    Raises:
        ValueError: `distilled_blocks`' refusal (an encoder whose layers are not read here).
    """
    blocks = distilled_blocks(encoder)
    padding_mask = inputs["padding_mask"]
    x = encoder.embed(inputs, training=training)  # [B, T, H], the first block's input
    embedding_output = x
    arguments = encoder.block_arguments(x, training=training)  # MPNet: its position bias; none for the others
    states, maps = [], []
    for block in blocks:
        if attention:
            maps.append(attention_probabilities(block, x, padding_mask, *arguments))
        x = block(x, padding_mask, *arguments, training=training)  # [B, T, H]
        states.append(x)
    if encoder.final_layer_norm is not None:
        x = states[-1] = encoder.final_layer_norm(x)
    pooled = encoder.pool(x, padding_mask)  # [B, H]
    encoded = {
        "sequence_output": tf.cast(x, tf.float32),
        "pooled_output": tf.cast(pooled, tf.float32),
        "encoder_outputs": [tf.cast(h, tf.float32) for h in states],
        "embedding_output": tf.cast(embedding_output, tf.float32),
    }
    if attention:
        encoded["attention_probabilities"] = maps
    return encoded


def attention_probabilities(block, x, padding_mask, position_bias=None):
    """The attention probabilities a block computes on its input: `[B, T, H]` -> float32 `[B, N, T, T]`.

    Recomputed from the block's projections (before attention dropout); the
    block's own forward path is not touched. A `TransformerBlock`'s from its
    query and key projections (plus `position_bias`, float32 `[1, N, T, T]`,
    where the encoder has one: MPNet's); a `ModernBertBlock`'s from its fused
    query/key/value projection, the rotation of its layer kind and, on a
    sliding-window layer, the window (`rotary_attention_probabilities`); a
    `RotaryTransformerBlock`'s (NomicBERT, GTE) likewise, on its input (post-norm).
    """
    if isinstance(block, ModernBertBlock):
        if block.attention_layer_norm is not None:
            x = block.attention_layer_norm(x)
        return rotary_attention_probabilities(block.attention, x, padding_mask)
    if isinstance(block, RotaryTransformerBlock):  # post-norm: the attention reads the block's input as it is
        return rotary_attention_probabilities(block.attention, x, padding_mask)
    if not isinstance(block, TransformerBlock):
        raise ValueError(
            "Attention probabilities are recomputed for TransformerBlock, ModernBertBlock and RotaryTransformerBlock "
            f"layers. Received: a {type(block).__name__}"
        )
    attention = block.attention
    if block.pre_layer_norm:
        x = block.attention_layer_norm(x)
    x = ops.cast(x, attention.compute_dtype)
    query = tf.cast(_heads(attention.query_dense(x), attention.num_heads), tf.float32)  # [B, N, T, D]
    key = tf.cast(_heads(attention.key_dense(x), attention.num_heads), tf.float32)
    scores = tf.matmul(query, key, transpose_b=True) / math.sqrt(attention.head_dim)  # [B, N, T, T]
    if position_bias is not None:
        scores += position_bias
    return tf.nn.softmax(scores + _padding_bias(padding_mask)[:, None, None, :], axis=-1)


def rotary_attention_probabilities(attention, x, padding_mask):
    """The probabilities a `RotarySelfAttention` computes on its (normalized) input: float32 `[B, N, T, T]`.

    Queries and keys come from the fused `[H, 3H]` projection (laid out
    `[3, N, D]`), each rotated by its column index with the layer's
    `rope_theta`; scores are scaled by `1 / sqrt(D)`; padding keys are masked
    and, on a sliding-window layer (`local_attention` not None), so are the
    keys more than `local_attention // 2` positions from the query
    (`bert_tf.layers.in_window`, the rule the layer attends by): their
    probability is 0. Computed here in float32 on the whole `[T, T]` matrix
    (a distillation target, not the layer's memory-bounded path).
    """
    x = ops.cast(x, attention.compute_dtype)
    batch, length = tf.shape(x)[0], tf.shape(x)[1]
    qkv = tf.reshape(attention.qkv_dense(x), (batch, length, 3, attention.num_heads, attention.head_dim))
    query, key, _ = tf.unstack(tf.transpose(qkv, (2, 0, 3, 1, 4)), num=3)  # each [B, N, T, D]
    positions = tf.range(length)
    query = tf.cast(attention.rotary(query, positions), tf.float32)
    key = tf.cast(attention.rotary(key, positions), tf.float32)
    scores = tf.matmul(query, key, transpose_b=True) / math.sqrt(attention.head_dim)  # [B, N, T, T]
    if attention.local_attention is not None:
        window = in_window(positions, positions, attention.local_attention)  # [T, T]
        scores += tf.where(window, 0.0, MASK_BIAS)[None, None]
    return tf.nn.softmax(scores + _padding_bias(padding_mask)[:, None, None, :], axis=-1)


def _heads(t, num_heads):
    """`[B, T, H]` -> `[B, N, T, D]`."""
    batch, length = tf.shape(t)[0], tf.shape(t)[1]
    return tf.transpose(tf.reshape(t, (batch, length, num_heads, -1)), (0, 2, 1, 3))


def _padding_bias(padding_mask):
    """float32 `[B, T]`: 0 at real keys, `MASK_BIAS` at padding."""
    return (1.0 - tf.cast(padding_mask, tf.float32)) * MASK_BIAS


__all__ = [
    "attention_probabilities",
    "distilled_blocks",
    "encoder_states",
    "rotary_attention_probabilities",
]
