"""DebertaV2Encoder: the DeBERTa-v2/v3 backbone as a Keras 3 functional model.

Shape legend: B batch, T tokens, H hidden, N heads, P selected positions, S attention span.
"""

import keras

from bert_tf.config import FAMILIES
from bert_tf.layers.deberta_embeddings import DebertaEmbeddings
from bert_tf.layers.disentangled_transformer_block import DisentangledTransformerBlock
from bert_tf.layers.pooler import Pooler
from bert_tf.layers.relative_embeddings import RelativeEmbeddings
from bert_tf.layers.token_convolution import TokenConvolution
from bert_tf.models.encoder import Encoder

MODEL_TYPE = "deberta-v2"


@keras.saving.register_keras_serializable(package="bert_tf")
class DebertaV2Encoder(Encoder):
    """The DeBERTa-v2/v3 encoder: embeddings, disentangled-attention blocks, a context pooler (an `Encoder`).

    Keeps the `Encoder` contract. Inputs (dict, int32 `[B, T]`):
    `token_ids`, `segment_ids` (ignored when `type_vocab_size` is 0),
    `padding_mask`. Outputs (dict, float32): `sequence_output` `[B, T, H]`,
    `pooled_output` `[B, H]` (`Pooler`, HF's `ContextPooler`: dense + `pooler_activation`
    on the first token), `encoder_outputs` (one `[B, T, H]` per layer; the
    first after the optional convolution).

    Relative positions: every layer's attention reads one shared table of 2S
    relative embeddings (S = `position_buckets`, or `max_relative_positions`
    without buckets), LayerNorm-ed when `norm_rel_ebd` is "layer_norm".
    Sequences may be longer than `position_buckets` and than
    `max_position_embeddings` when `position_biased_input` is false.

    Forward paths: `call` is the functional graph; `call_at` runs the last
    layer only at the positions a head reads (`Encoder.call_at`: every block
    takes the relative table, `block_arguments`; the convolution follows the
    first block, `after_block`); `call_unpadded` is `Encoder`'s simple, exact
    form: the whole graph, then zeros at padding (it costs what `call` does:
    no padding savings yet). Its blocks take more than `(x, padding_mask)`,
    so layer-by-layer distillation does not read them (`layerwise` false).

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, hidden_act, dropout,
        attention_dropout, max_position_embeddings, type_vocab_size, initializer_range,
        layer_norm_epsilon, embedding_size: as `BertEncoder` (`type_vocab_size` 0: no segments).
        max_relative_positions: the largest relative distance; -1: `max_position_embeddings`.
        position_buckets: log buckets of relative positions; -1: plain distances.
        pos_att_type: position terms of the attention, among "c2p" and "p2c".
        share_att_key: the position terms reuse the query/key projections.
        norm_rel_ebd: "layer_norm" or "none" (the relative table's LayerNorm).
        position_biased_input: add learned absolute positions to the embeddings.
        conv_kernel_size: > 0 adds `TokenConvolution` after the first layer (odd size).
        conv_act, conv_groups: its activation and channel groups.
        pooler_activation: the context pooler's activation (HF `pooler_hidden_act`).
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        hidden_act="gelu",
        dropout=0.1,
        attention_dropout=0.1,
        max_position_embeddings=512,
        type_vocab_size=0,
        initializer_range=0.02,
        layer_norm_epsilon=1e-7,
        embedding_size=None,
        max_relative_positions=-1,
        position_buckets=256,
        pos_att_type=("p2c", "c2p"),
        share_att_key=True,
        norm_rel_ebd="layer_norm",
        position_biased_input=False,
        conv_kernel_size=0,
        conv_act="tanh",
        conv_groups=1,
        pooler_activation=None,
        dtype=None,
        **kwargs,
    ):
        pos_att_type = tuple(pos_att_type)
        pooler_activation = pooler_activation or FAMILIES[MODEL_TYPE].pooler_activation
        # Checks the values (and their combination) with BertConfig's messages before building anything.
        self.checked_config(locals())
        relative_span = max_relative_positions if max_relative_positions > 0 else max_position_embeddings
        table_rows = 2 * (position_buckets if position_buckets > 0 else relative_span)  # 2S

        # === Layers ===
        self.embeddings = DebertaEmbeddings(
            vocabulary_size,
            hidden_dim,
            max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size,
            position_biased_input=position_biased_input,
            embedding_size=embedding_size,
            dropout=dropout,
            initializer_range=initializer_range,
            layer_norm_epsilon=layer_norm_epsilon,
            dtype=dtype,
            name="embeddings",
        )
        self.relative_embeddings = RelativeEmbeddings(
            table_rows,
            hidden_dim,
            normalize=norm_rel_ebd == "layer_norm",
            initializer_range=initializer_range,
            layer_norm_epsilon=layer_norm_epsilon,
            dtype=dtype,
            name="relative_embeddings",
        )
        self.transformer_layers = [
            DisentangledTransformerBlock(
                num_heads,
                hidden_dim,
                intermediate_dim,
                hidden_act=hidden_act,
                dropout=dropout,
                attention_dropout=attention_dropout,
                initializer_range=initializer_range,
                layer_norm_epsilon=layer_norm_epsilon,
                pos_att_type=pos_att_type,
                share_att_key=share_att_key,
                position_buckets=position_buckets,
                max_relative_positions=relative_span,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        self.convolution = (
            TokenConvolution(
                hidden_dim,
                kernel_size=conv_kernel_size,
                groups=conv_groups,
                activation=conv_act,
                dropout=dropout,
                initializer_range=initializer_range,
                layer_norm_epsilon=layer_norm_epsilon,
                dtype=dtype,
                name="convolution",
            )
            if conv_kernel_size
            else None
        )
        self.pooler = Pooler(
            hidden_dim, activation=pooler_activation, initializer_range=initializer_range, dtype=dtype, name="pooler"
        )

        super().__init__(locals(), dtype=dtype, **kwargs)  # the graph; the arguments as attributes

    model_type = MODEL_TYPE
    CONFIG_FIELDS = Encoder.CONFIG_FIELDS + (  # and the family's options
        ("type_vocab_size", "type_vocab_size"),
        ("embedding_size", "embedding_size"),
        ("max_relative_positions", "max_relative_positions"),
        ("position_buckets", "position_buckets"),
        ("pos_att_type", "pos_att_type"),
        ("share_att_key", "share_att_key"),
        ("norm_rel_ebd", "norm_rel_ebd"),
        ("position_biased_input", "position_biased_input"),
        ("conv_kernel_size", "conv_kernel_size"),
        ("conv_act", "conv_act"),
        ("conv_groups", "conv_groups"),
        ("pooler_activation", "pooler_hidden_act"),
    )
    CONFIG_FIXED = {"model_type": MODEL_TYPE, "relative_attention": True}
    layerwise = False  # each block takes the relative table, and the convolution follows the first

    def embed(self, inputs, training=None):
        token_ids, segment_ids, padding_mask = inputs["token_ids"], inputs["segment_ids"], inputs["padding_mask"]
        return self.embeddings(token_ids, segment_ids, padding_mask, training=training)  # [B, T, H]

    def block_arguments(self, embedded, training=None):
        return (self.relative_embeddings(embedded),)  # [2S, H]

    def after_block(self, index, x, embedded, padding_mask, training=None):
        if index == 0 and self.convolution is not None:
            return self.convolution(embedded, x, padding_mask, training=training)
        return x

    @property
    def at_positions(self):
        """False for a one-layer encoder with the convolution (it follows the only layer): `call_at` runs the
        whole graph, then gathers."""
        return self.convolution is None or self.num_layers > 1

    def _call_at_graph(self, inputs, positions, training, pooled, unpadded):
        return super()._call_at_graph(inputs, positions, training, pooled, unpadded=False)  # no padding cut here
