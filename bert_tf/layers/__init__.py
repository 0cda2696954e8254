"""Keras layers of the BERT encoder and its heads, and the kernels they run on.

Layers: `BertEmbeddings` (word + position + segment, LayerNorm, dropout),
`BertSelfAttention`, `TransformerBlock` (post-LN or pre-LN), `LayerNorm`,
`Pooler` (the family's dense on the first token, every encoder's),
`MaskedLMHead` (tied to the word embeddings), `DenseHead` (NSP and task
logits), `SentencePooling` (sentence embeddings, as sentence-transformers pools) and `SpladePooling` (sparse
vocabulary vectors from masked-LM logits, sentence-transformers' SPLADE pooling).
DeBERTa-v2/v3's: `DebertaEmbeddings`, `RelativeEmbeddings` (the shared relative-position
table), `DisentangledSelfAttention`, `DisentangledTransformerBlock`, `TokenConvolution`
(the optional convolution); `log_bucket_position` and `relative_position_index`
(its relative positions).
MPNet's: `RelativePositionBias` (its relative position bias, added to every layer's attention scores) and
`relative_position_bucket` (the distances' buckets).
ModernBERT's: `RotaryEmbedding` (rotary positions, rotate-half layout; `rotate_half`,
`inverse_frequencies`), `RotarySelfAttention` (fused query/key/value, global or
sliding-window), `GeGLUFeedForward`, `ModernBertBlock` (pre-norm), `PoolingHead`
(cls or mean pooling, dense, LayerNorm), `PredictionHead` (the same dense, activation and
LayerNorm on every token, before token and span logits); `in_window`, `sliding_window_context` and
`global_context` (the sliding window's keys, its attention in blocks, global attention in query chunks:
`bert_tf.layers.local_attention`).
NomicBERT's and GTE's: `RotaryTransformerBlock` (post-norm, `RotarySelfAttention` with the config's RoPE
scaling) and `GatedFeedForward` (SwiGLU / gated GELU, the activation on the gate).

Functions: `get_activation` (`hidden_act` name -> function) with the GELUs
`gelu_erf` and `gelu_tanh`; the fused element-wise kernels `layer_norm`,
`dropout` and `dropped_softmax` (softmax + dropout of the attention), and the
loss `sparse_softmax_cross_entropy` (loss and gradient one kernel each way); the
token-matrix helpers `dense_tokens` and `scatter_tokens` (see
`bert_tf.layers.token_matrix`); the execution path this CPU runs fastest
(`choose_path`, `cpu_info`, `resolve_jit_compile`, `ExecutionPath`: see
`bert_tf.layers.execution_path`).
"""

from bert_tf.layers.activations import gelu_erf, gelu_tanh, get_activation
from bert_tf.layers.bert_embeddings import BertEmbeddings
from bert_tf.layers.bert_self_attention import BertSelfAttention, dropped_softmax
from bert_tf.layers.cross_entropy import sparse_softmax_cross_entropy
from bert_tf.layers.deberta_embeddings import DebertaEmbeddings
from bert_tf.layers.dense_head import HEAD_INITIALIZERS, DenseHead
from bert_tf.layers.disentangled_attention import DisentangledSelfAttention
from bert_tf.layers.disentangled_transformer_block import DisentangledTransformerBlock
from bert_tf.layers.dropout import dropout
from bert_tf.layers.execution_path import ExecutionPath, choose_path, cpu_info, resolve_jit_compile
from bert_tf.layers.gated_feed_forward import GatedFeedForward
from bert_tf.layers.geglu_feed_forward import GeGLUFeedForward
from bert_tf.layers.layer_norm import LayerNorm, layer_norm
from bert_tf.layers.local_attention import global_context, in_window, sliding_window_context
from bert_tf.layers.masked_lm_head import MaskedLMHead
from bert_tf.layers.modernbert_block import ModernBertBlock
from bert_tf.layers.pooler import Pooler
from bert_tf.layers.pooling_head import PoolingHead
from bert_tf.layers.prediction_head import PredictionHead
from bert_tf.layers.relative_embeddings import RelativeEmbeddings
from bert_tf.layers.relative_position import log_bucket_position, relative_position_index
from bert_tf.layers.relative_position_bias import RelativePositionBias, relative_position_bucket
from bert_tf.layers.replaced_token_head import ReplacedTokenHead
from bert_tf.layers.rotary_embedding import RotaryEmbedding, inverse_frequencies, rotate_half
from bert_tf.layers.rotary_self_attention import RotarySelfAttention
from bert_tf.layers.rotary_transformer_block import RotaryTransformerBlock
from bert_tf.layers.sentence_pooling import POOLING_MODES, SentencePooling, check_pooling
from bert_tf.layers.splade_pooling import SPLADE_ACTIVATIONS, SPLADE_POOLING, SpladePooling, check_splade
from bert_tf.layers.token_convolution import TokenConvolution
from bert_tf.layers.token_matrix import dense_tokens, scatter_tokens
from bert_tf.layers.transformer_block import TransformerBlock

__all__ = [
    "BertEmbeddings",
    "BertSelfAttention",
    "DebertaEmbeddings",
    "DisentangledSelfAttention",
    "DisentangledTransformerBlock",
    "RelativeEmbeddings",
    "ReplacedTokenHead",
    "TokenConvolution",
    "log_bucket_position",
    "relative_position_index",
    "RelativePositionBias",
    "relative_position_bucket",
    "GeGLUFeedForward",
    "ModernBertBlock",
    "PoolingHead",
    "PredictionHead",
    "RotaryEmbedding",
    "RotarySelfAttention",
    "GatedFeedForward",
    "RotaryTransformerBlock",
    "global_context",
    "in_window",
    "inverse_frequencies",
    "rotate_half",
    "sliding_window_context",
    "DenseHead",
    "ExecutionPath",
    "HEAD_INITIALIZERS",
    "LayerNorm",
    "MaskedLMHead",
    "Pooler",
    "POOLING_MODES",
    "SentencePooling",
    "SPLADE_ACTIVATIONS",
    "SPLADE_POOLING",
    "SpladePooling",
    "check_splade",
    "TransformerBlock",
    "check_pooling",
    "choose_path",
    "cpu_info",
    "dense_tokens",
    "dropout",
    "dropped_softmax",
    "gelu_erf",
    "gelu_tanh",
    "get_activation",
    "layer_norm",
    "resolve_jit_compile",
    "scatter_tokens",
    "sparse_softmax_cross_entropy",
]
