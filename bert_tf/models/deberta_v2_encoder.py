"""DebertaV2Encoder: the DeBERTa-v2/v3 backbone as a Keras 3 functional model.

Shape legend: B batch, T tokens, H hidden, N heads, P selected positions, S attention span.
"""

import keras
import tensorflow as tf

from bert_tf.config import FAMILIES, BertConfig
from bert_tf.layers.deberta_embeddings import DebertaEmbeddings
from bert_tf.layers.disentangled_transformer_block import DisentangledTransformerBlock
from bert_tf.layers.pooler import Pooler
from bert_tf.layers.relative_embeddings import RelativeEmbeddings
from bert_tf.layers.token_convolution import TokenConvolution
from bert_tf.models.bert_encoder import DENSE_LENGTH_BUCKETS, trim_padding

MODEL_TYPE = "deberta-v2"


@keras.saving.register_keras_serializable(package="bert_tf")
class DebertaV2Encoder(keras.Model):
    """The DeBERTa-v2/v3 encoder: embeddings, disentangled-attention blocks, a context pooler.

    Keeps `BertEncoder`'s contract. Inputs (dict, int32 `[B, T]`):
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
    layer only at the positions a head reads (as `BertEncoder.call_at`);
    `call_unpadded` is the simple, exact form: the whole graph, then zeros at
    padding (it costs what `call` does: no padding savings yet).

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
        _config(
            vocabulary_size,
            num_layers,
            num_heads,
            hidden_dim,
            intermediate_dim,
            hidden_act,
            dropout,
            attention_dropout,
            max_position_embeddings,
            type_vocab_size,
            initializer_range,
            layer_norm_epsilon,
            embedding_size,
            max_relative_positions,
            position_buckets,
            pos_att_type,
            share_att_key,
            norm_rel_ebd,
            position_biased_input,
            conv_kernel_size,
            conv_act,
            conv_groups,
            pooler_activation,
        )
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

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
        embedded = self.embeddings(token_ids, segment_ids, padding_mask)  # [B, T, H]
        rel_embeddings = self.relative_embeddings(embedded)  # [2S, H]
        x = embedded
        encoder_outputs = []
        for i, block in enumerate(self.transformer_layers):
            x = block(x, padding_mask, rel_embeddings)  # [B, T, H]
            if i == 0 and self.convolution is not None:
                x = self.convolution(embedded, x, padding_mask)
            encoder_outputs.append(x)
        pooled = self.pooler(x)  # [B, H]
        as_float32 = keras.layers.Activation("linear", dtype="float32", name="float32_cast")
        super().__init__(
            inputs={"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask},
            outputs={
                "sequence_output": as_float32(x),
                "pooled_output": as_float32(pooled),
                "encoder_outputs": [as_float32(h) for h in encoder_outputs],
            },
            dtype=dtype,
            **kwargs,
        )
        # Functional models keep a float32 policy whatever `dtype` says; report the layers' policy.
        self.dtype_policy = self.embeddings.dtype_policy

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.hidden_act = hidden_act
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.embedding_size = embedding_size
        self.max_relative_positions = max_relative_positions
        self.position_buckets = position_buckets
        self.pos_att_type = pos_att_type
        self.share_att_key = share_att_key
        self.norm_rel_ebd = norm_rel_ebd
        self.position_biased_input = position_biased_input
        self.conv_kernel_size = conv_kernel_size
        self.conv_act = conv_act
        self.conv_groups = conv_groups
        self.pooler_activation = pooler_activation
        # What other code reads of every encoder (BertEncoder's attributes).
        self.model_type = MODEL_TYPE
        self.pre_layer_norm = False
        self.position_offset = 0

    def call_unpadded(self, inputs, training=False):
        """The encoder's outputs with `sequence_output` and `encoder_outputs` 0 at padding.

        Equal to `call` at real tokens. The simple form: the whole graph,
        then the padding rows zeroed (no saving on padding within a row). At
        inference the columns that are padding in every row are cut first
        and the length rounded up to a shape bucket (`trim_padding` with
        `DENSE_LENGTH_BUCKETS`, at most 1/16 more columns, since here they
        cost as much as real tokens: a server sees a few shapes, not one per
        length); training runs the batch as given. A
        TensorFlow-graph method, as `BertEncoder.call_unpadded`.
        """
        inputs = _encoder_inputs(inputs)
        length = tf.shape(inputs["padding_mask"])[1]
        mask = tf.cast(tf.convert_to_tensor(inputs["padding_mask"]), tf.float32)[:, :, None]  # [B, T, 1]
        if not training:
            inputs, _ = trim_padding(inputs, self.max_position_embeddings, DENSE_LENGTH_BUCKETS)
        outputs = self(inputs, training=training)

        def full(h):  # [B, L, H] -> [B, T, H], 0 at padding
            h = h[:, :length]
            return tf.pad(h, [[0, 0], [0, length - tf.shape(h)[1]], [0, 0]]) * mask

        return {
            "sequence_output": full(outputs["sequence_output"]),
            "pooled_output": outputs["pooled_output"],
            "encoder_outputs": [full(h) for h in outputs["encoder_outputs"]],
        }

    def call_at(self, inputs, positions, training=False, pooled=False, unpadded=False):
        """The encoder's final outputs only where a head reads them.

        Every layer but the last runs on all tokens; the last runs its
        queries, relative-position terms, feed-forward network and
        LayerNorms only at `positions` (and the first token when `pooled`),
        see `DisentangledTransformerBlock.call_at`. Equal to `call` at those
        positions (float32 round-off aside). `unpadded` changes nothing (no
        padding savings yet). A one-layer encoder with the convolution runs
        the whole graph, then gathers (the convolution follows the only layer).
        Same arguments and results as `BertEncoder.call_at`: `selected_output`
        float32 `[B, P, H]` and, when `pooled`, `pooled_output` float32 `[B, H]`.
        """
        inputs = _encoder_inputs(inputs)
        token_ids = tf.convert_to_tensor(inputs["token_ids"])
        padding_mask = tf.convert_to_tensor(inputs["padding_mask"])
        batch = tf.shape(token_ids)[0]
        positions = (
            tf.zeros((batch, 0), tf.int32) if positions is None else tf.cast(tf.convert_to_tensor(positions), tf.int32)
        )
        if pooled:
            positions = tf.concat([tf.zeros((batch, 1), tf.int32), positions], axis=1)
        if self.convolution is not None and self.num_layers == 1:
            sequence = self(inputs, training=training)["sequence_output"]
            x = tf.gather(sequence, positions, batch_dims=1)  # [B, P', H]
        else:
            embedded = self.embeddings(token_ids, inputs["segment_ids"], padding_mask, training=training)  # [B, T, H]
            rel_embeddings = self.relative_embeddings(embedded)  # [2S, H]
            x = embedded
            for i, block in enumerate(self.transformer_layers[:-1]):
                x = block(x, padding_mask, rel_embeddings, training=training)
                if i == 0 and self.convolution is not None:
                    x = self.convolution(embedded, x, padding_mask, training=training)
            x = self.transformer_layers[-1].call_at(x, positions, padding_mask, rel_embeddings, training=training)
        if not pooled:
            return {"selected_output": tf.cast(x, tf.float32)}
        return {
            "selected_output": tf.cast(x[:, 1:], tf.float32),
            "pooled_output": tf.cast(self.pooler(x[:, :1]), tf.float32),
        }

    @property
    def token_embedding(self):
        """The word-embedding layer; its `embeddings` `[V, E]` tie the masked-LM output."""
        return self.embeddings.token_embedding

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            **{ours: getattr(self, ours) for ours, _ in _CONFIG_FIELDS},
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    # --- BertConfig interop ---

    @classmethod
    def from_bert_config(cls, bert_config, **kwargs):
        """Builds an encoder from a deberta-v2 `BertConfig`; kwargs (e.g. dtype, name) pass through."""
        if bert_config.model_type != MODEL_TYPE:
            raise ValueError(
                f"DebertaV2Encoder builds model_type {MODEL_TYPE!r} configs. Received: model_type={bert_config.model_type!r}"
            )
        return cls(**{ours: getattr(bert_config, theirs) for ours, theirs in _CONFIG_FIELDS}, **kwargs)

    def bert_config(self):
        """The `BertConfig` of this encoder's architecture."""
        return BertConfig(
            **{theirs: getattr(self, ours) for ours, theirs in _CONFIG_FIELDS},
            model_type=MODEL_TYPE,
            relative_attention=True,
        )


# Constructor argument <-> BertConfig field (original bert_config.json names).
_CONFIG_FIELDS = (
    ("vocabulary_size", "vocab_size"),
    ("num_layers", "num_hidden_layers"),
    ("num_heads", "num_attention_heads"),
    ("hidden_dim", "hidden_size"),
    ("intermediate_dim", "intermediate_size"),
    ("hidden_act", "hidden_act"),
    ("dropout", "hidden_dropout_prob"),
    ("attention_dropout", "attention_probs_dropout_prob"),
    ("max_position_embeddings", "max_position_embeddings"),
    ("type_vocab_size", "type_vocab_size"),
    ("initializer_range", "initializer_range"),
    ("layer_norm_epsilon", "layer_norm_eps"),
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


def _encoder_inputs(inputs):
    """The encoder's three inputs of a task model's features (which may add `mask_positions`, ...)."""
    return {name: inputs[name] for name in ("token_ids", "segment_ids", "padding_mask")}


def _config(*values):
    """The `BertConfig` of constructor `values` (in `_CONFIG_FIELDS` order); ConfigError names a bad one."""
    return BertConfig(
        **{theirs: value for (_, theirs), value in zip(_CONFIG_FIELDS, values)},
        model_type=MODEL_TYPE,
        relative_attention=True,
    )
