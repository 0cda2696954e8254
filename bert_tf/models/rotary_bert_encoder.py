"""NomicBertEncoder and GteEncoder: BERT's post-norm encoder with rotary positions and a gated MLP.

Shape legend: B batch, T tokens, H hidden, N heads, P selected positions.
"""

import keras

from bert_tf.layers.layer_norm import LayerNorm
from bert_tf.layers.pooler import Pooler
from bert_tf.layers.rotary_transformer_block import RotaryTransformerBlock
from bert_tf.models.encoder import Encoder


class RotaryBertEncoder(Encoder):
    """The encoder NomicBERT and GTE share: embeddings without positions, post-norm rotary blocks, BERT's pooler.

    Keeps the `Encoder` contract. Inputs (dict, int32 `[B, T]`): `token_ids`,
    `segment_ids` (read only where `type_vocab_size` > 0: NomicBERT's two
    segments, gte-multilingual-base's one; gte-base-en-v1.5 has none),
    `padding_mask`. Outputs (dict, float32): `sequence_output` `[B, T, H]`
    (Hugging Face's `last_hidden_state`), `pooled_output` `[B, H]` (BERT's
    pooler: tanh of a dense on the first token, what the
    `...ForSequenceClassification` classes feed their `classifier`),
    `encoder_outputs` (one `[B, T, H]` per layer).

    Embeddings are the token table, the segment table where there is one,
    and a LayerNorm: no position table. Positions rotate each layer's queries
    and keys (`RotarySelfAttention`, transformers' rotate-half layout) with
    the config's `rope_theta`, scaled for long contexts as `rope_type` says
    ("linear": frequencies divided by `rope_factor`; "dynamic": past
    `max_position_embeddings` tokens the base grows with the length:
    `RotaryEmbedding`). Each `RotaryTransformerBlock` is post-norm, as BERT's,
    with a gated MLP (`GatedFeedForward`). What differs between the two
    families is fixed by the subclass, not the config (transformers' configs
    of these models have no such options): the biases of the attention and
    the MLP and whether the MLP's two input projections are one fused tensor.

    Forward paths: `call` is the functional graph; `call_at` and
    `call_unpadded` are `Encoder`'s simple, exact forms (the whole graph,
    then the positions gathered or the padding zeroed). With "dynamic"
    scaling past `max_position_embeddings` the frequencies depend on the
    padded length (as in transformers), so a row's outputs there depend on
    its batch's padding.

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, hidden_act, dropout,
        attention_dropout, max_position_embeddings, initializer_range, layer_norm_epsilon: as `BertEncoder`
            (`intermediate_dim` is the gated MLP's width after the gate; `hidden_act` its gate's activation).
        type_vocab_size: the segment table's rows; 0: none.
        rope_theta: the rotary frequencies' base.
        rope_type: "default", "linear" or "dynamic" (`bert_tf.layers.rotary_embedding.ROPE_TYPES`).
        rope_factor: the scaling factor of "linear" and "dynamic"; None for "default".
        rope_max_positions: where "dynamic" scaling starts; None: `max_position_embeddings`.
        pad_token_id: the padding piece's id (kept for the Hugging Face config).
    """

    # What the family fixes (the subclasses set these).
    attention_bias = True
    fused_mlp = True
    mlp_up_bias = False
    mlp_down_bias = True

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        hidden_act="gelu",
        dropout=0.1,
        attention_dropout=0.0,
        max_position_embeddings=2048,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        type_vocab_size=2,
        rope_theta=10000.0,
        rope_type="default",
        rope_factor=None,
        rope_max_positions=None,
        pad_token_id=0,
        dtype=None,
        **kwargs,
    ):
        # Checks the values (and their combination) with BertConfig's messages before building anything.
        self.checked_config(locals())
        rope_theta = float(rope_theta)
        rope_factor = None if rope_factor is None else float(rope_factor)

        # === Layers ===
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.token_embedding_layer = keras.layers.Embedding(
            vocabulary_size, hidden_dim, embeddings_initializer=initializer, dtype=dtype, name="token_embedding"
        )
        self.segment_embedding = (
            keras.layers.Embedding(
                type_vocab_size, hidden_dim, embeddings_initializer=initializer, dtype=dtype, name="segment_embedding"
            )
            if type_vocab_size
            else None
        )
        self.embeddings_layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon, dtype="float32", name="embeddings_layer_norm"
        )
        self.embeddings_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="embeddings_dropout")
        scaling = None
        if rope_type != "default":
            limit = rope_max_positions or max_position_embeddings
            scaling = {"rope_type": rope_type, "factor": rope_factor, "max_positions": limit}
        self.transformer_layers = [
            RotaryTransformerBlock(
                num_heads,
                hidden_dim,
                intermediate_dim,
                hidden_act=hidden_act,
                dropout=dropout,
                attention_dropout=attention_dropout,
                initializer_range=initializer_range,
                layer_norm_epsilon=layer_norm_epsilon,
                rope_theta=rope_theta,
                rope_scaling=scaling,
                attention_bias=self.attention_bias,
                fused_mlp=self.fused_mlp,
                mlp_up_bias=self.mlp_up_bias,
                mlp_down_bias=self.mlp_down_bias,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        self.pooler = Pooler(hidden_dim, "tanh", initializer_range=initializer_range, dtype=dtype, name="pooler")

        super().__init__(locals(), dtype=dtype, **kwargs)  # the graph; the arguments as attributes

    CONFIG_FIELDS = Encoder.CONFIG_FIELDS + (  # and the families' options
        ("type_vocab_size", "type_vocab_size"),
        ("rope_theta", "rope_theta"),
        ("rope_type", "rope_type"),
        ("rope_factor", "rope_factor"),
        ("rope_max_positions", "rope_max_positions"),
        ("pad_token_id", "pad_token_id"),
    )
    at_positions = False  # `call_at`: the whole graph, then a gather
    rotary_positions = True

    def embed(self, inputs, training=None):
        x = self.token_embedding_layer(inputs["token_ids"])  # [B, T, H]
        if self.segment_embedding is not None:
            x = x + self.segment_embedding(inputs["segment_ids"])
        x = keras.ops.cast(self.embeddings_layer_norm(x), x.dtype)  # the LayerNorm runs in float32
        return self.embeddings_dropout(x, training=training)

    @property
    def token_embedding(self):
        """The word-embedding layer; its `embeddings` `[V, H]` tie the masked-LM output."""
        return self.token_embedding_layer


@keras.saving.register_keras_serializable(package="bert_tf")
class NomicBertEncoder(RotaryBertEncoder):
    """NomicBERT (`model_type` "nomic_bert", nomic-embed-text): `RotaryBertEncoder` with two segments by default,
    no biases in the attention's `Wqkv` and `out_proj` nor in the SwiGLU's `fc11`, `fc12` (two kernels: up and
    gate) and `fc2`; the masked-LM transform's activation is `hidden_act` (BERT's head)."""

    model_type = "nomic_bert"
    CONFIG_FIXED = {"model_type": "nomic_bert"}
    attention_bias = False
    fused_mlp = False
    mlp_up_bias = False
    mlp_down_bias = False


@keras.saving.register_keras_serializable(package="bert_tf")
class GteEncoder(RotaryBertEncoder):
    """GTE (`model_type` "gte", gte-base-en-v1.5, gte-multilingual-base): `RotaryBertEncoder` with biases in the
    attention's `qkv_proj` and `o_proj`, a gated GELU whose `up_gate_proj` `[2I, H]` (up, then gate) has no bias
    and whose `down_proj` has one; the masked-LM transform's activation is GELU whatever `hidden_act`."""

    model_type = "gte"
    CONFIG_FIXED = {"model_type": "gte"}
    attention_bias = True
    fused_mlp = True
    mlp_up_bias = False
    mlp_down_bias = True
