"""DisentangledSelfAttention: DeBERTa's attention over content and relative positions.

Shapes: B batch, T tokens, H hidden, N heads, D = H / N head size, S the
attention span (2S rows in the relative-embedding table).
"""

import math

import keras
import tensorflow as tf
from keras import ops

from bert_tf.layers.bert_self_attention import head_dim, masked_probabilities, padding_bias, projection
from bert_tf.layers.configured_layer import ConfiguredLayer
from bert_tf.layers.dropout import draw_seed, dropout
from bert_tf.layers.relative_position import relative_position_index

POSITION_TERMS = ("c2p", "p2c")


class DisentangledSelfAttention(ConfiguredLayer):
    """Self-attention whose scores add content-to-position and position-to-content terms.

    For query i and key j with relative-table row r = idx(i, j) (the bucketed
    distance i - j shifted by S, `relative_position_index`):

        score(i, j) = (q_i . k_j + [c2p] q_i . pk_r + [p2c] k_j . pq_r) / sqrt(D * (1 + len(pos_att_type)))

    where pk = the table projected by the key projection (`share_att_key`)
    or by its own `pos_key` dense, pq likewise by the query projection or
    `pos_query`. Softmax runs in float32 under mixed precision; padding keys
    get no weight.

    Args:
        num_heads: N.
        hidden_dim: H.
        pos_att_type: the position terms, a subset of ("c2p", "p2c").
        share_att_key: the position terms use the query/key projections.
        position_buckets: log buckets of the relative positions (<= 0: plain distances).
        max_relative_positions: the largest distance (> 0; the encoder resolves -1).
        dropout: dropout on the attention probabilities.
        position_dropout: dropout on the relative-embedding table (HF: `hidden_dropout_prob`).
    Call args:
        x: `[B, T, H]`.
        padding_mask: int `[B, T]`, 1 for real tokens.
        rel_embeddings: `[2S, H]`, the `RelativeEmbeddings` output.
    Returns:
        `[B, T, H]`.
    """

    CONFIG = (
        "num_heads hidden_dim pos_att_type share_att_key position_buckets max_relative_positions dropout "
        "position_dropout initializer_range"
    )

    def __init__(
        self,
        num_heads,
        hidden_dim,
        pos_att_type=("p2c", "c2p"),
        share_att_key=True,
        position_buckets=256,
        max_relative_positions=512,
        dropout=0.1,
        position_dropout=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.head_dim = head_dim(num_heads, hidden_dim)
        pos_att_type = tuple(pos_att_type)
        if any(kind not in POSITION_TERMS for kind in pos_att_type):
            raise ValueError(
                f"`pos_att_type` must list terms of {POSITION_TERMS}. Received: pos_att_type={pos_att_type!r}"
            )
        if max_relative_positions < 1:
            raise ValueError(
                f"`max_relative_positions` must be positive (resolve -1 to max_position_embeddings first). "
                f"Received: max_relative_positions={max_relative_positions}"
            )
        self.keep_config(locals())
        self.span = position_buckets if position_buckets > 0 else max_relative_positions  # S
        # Every term is divided by sqrt(D * (1 + number of position terms)).
        self.scale = 1.0 / math.sqrt(self.head_dim * (1 + len(pos_att_type)))

        # === Layers ===
        self.query_dense = projection(self, "query")
        self.key_dense = projection(self, "key")
        self.value_dense = projection(self, "value")
        self.pos_key_dense = projection(self, "pos_key") if "c2p" in pos_att_type and not share_att_key else None
        self.pos_query_dense = projection(self, "pos_query") if "p2c" in pos_att_type and not share_att_key else None
        self.output_dense = projection(self, "attention_output")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="attention_dropout")
        self.position_dropout_layer = keras.layers.Dropout(
            position_dropout, dtype=self.dtype_policy, name="position_dropout"
        )

    def build(self, x_shape, padding_mask_shape=None, rel_embeddings_shape=None):
        for layer in (
            self.query_dense,
            self.key_dense,
            self.value_dense,
            self.pos_key_dense,
            self.pos_query_dense,
            self.output_dense,
        ):
            if layer is not None:
                layer.build((None, self.hidden_dim))
        self.built = True

    def _heads(self, x):
        """`[B, T, H]` -> `[B, N, T, D]`."""
        batch, length = tf.shape(x)[0], tf.shape(x)[1]
        return tf.transpose(tf.reshape(x, (batch, length, self.num_heads, self.head_dim)), (0, 2, 1, 3))

    def _table_heads(self, layer, table):
        """The relative table projected by `layer`: `[2S, H]` -> `[N, 2S, D]`."""
        projected = layer(table)  # [2S, H]
        return tf.transpose(tf.reshape(projected, (-1, self.num_heads, self.head_dim)), (1, 0, 2))

    def call(self, x, padding_mask, rel_embeddings, training=None):
        length = tf.shape(x)[1]
        query, key, value, scores = self._content(x, x)  # scores [B, N, T, T]
        if self.pos_att_type:
            index = relative_position_index(
                tf.range(length), length, self.position_buckets, self.max_relative_positions
            )  # [T, T] rows of the table
            pos_key, pos_query = self._position_heads(rel_embeddings, training)
            if pos_key is not None:
                c2p = tf.einsum("bnqd,nrd->qrbn", query, pos_key)  # [T, 2S, B, N]
                c2p = tf.gather(c2p, index, axis=1, batch_dims=1)  # [Tq, Tk, B, N]
                scores += tf.cast(tf.transpose(c2p, (2, 3, 0, 1)), tf.float32)
            if pos_query is not None:
                p2c = tf.einsum("bnkd,nrd->krbn", key, pos_query)  # [T, 2S, B, N]
                p2c = tf.gather(p2c, tf.transpose(index), axis=1, batch_dims=1)  # [Tk, Tq, B, N]
                scores += tf.cast(tf.transpose(p2c, (2, 3, 1, 0)), tf.float32)
        return self._output(scores, value, padding_mask, training)

    def call_at(self, queries, positions, x, padding_mask, rel_embeddings, training=None):
        """Attention outputs only for the queries at `positions`: `[B, P, H]` -> `[B, P, H]`.

        `queries` are the inputs at `positions` (int `[B, P]`); keys and values
        come from all of `x` `[B, T, H]`. Equal to `call` at those positions
        for the cost of the K/V projections plus P/T of the rest.
        """
        batch, count = tf.shape(queries)[0], tf.shape(queries)[1]
        length = tf.shape(x)[1]
        query, key, value, scores = self._content(queries, x)  # scores [B, N, P, T]
        if self.pos_att_type:
            index = relative_position_index(
                tf.cast(positions, tf.int32), length, self.position_buckets, self.max_relative_positions
            )  # [B, P, T]
            index = tf.broadcast_to(index[:, None], (batch, self.num_heads, count, length))  # [B, N, P, T]
            pos_key, pos_query = self._position_heads(rel_embeddings, training)
            if pos_key is not None:
                c2p = tf.einsum("bnpd,nrd->bnpr", query, pos_key)  # [B, N, P, 2S]
                scores += tf.cast(tf.gather(c2p, index, batch_dims=3), tf.float32)  # [B, N, P, T]
            if pos_query is not None:
                p2c = tf.einsum("bnkd,nrd->bnkr", key, pos_query)  # [B, N, T, 2S]
                p2c = tf.gather(p2c, tf.transpose(index, (0, 1, 3, 2)), batch_dims=3)  # [B, N, T, P]
                scores += tf.cast(tf.transpose(p2c, (0, 1, 3, 2)), tf.float32)
        return self._output(scores, value, padding_mask, training)

    def _content(self, queries, x):
        """Scaled queries `[B, N, Q, D]` of `queries` `[B, Q, H]`, keys and values `[B, N, T, D]` of `x` `[B, T, H]`,
        and the content-to-content scores, float32 `[B, N, Q, T]`."""
        query = self._heads(self.query_dense(queries)) * ops.cast(self.scale, self.compute_dtype)
        key = self._heads(self.key_dense(x))
        value = self._heads(self.value_dense(x))
        return query, key, value, tf.cast(tf.matmul(query, key, transpose_b=True), tf.float32)

    def _position_heads(self, rel_embeddings, training):
        """The table's position keys (c2p) and scaled position queries (p2c), each `[N, 2S, D]` or None where
        `pos_att_type` leaves its term out; the table gets its dropout in training."""
        table = ops.cast(rel_embeddings, self.compute_dtype)
        if training and self.position_dropout:
            table = dropout(table, draw_seed(self.position_dropout_layer), self.position_dropout)
        table = table[: 2 * self.span]
        pos_key = pos_query = None
        if "c2p" in self.pos_att_type:
            pos_key = self._table_heads(self.key_dense if self.share_att_key else self.pos_key_dense, table)
        if "p2c" in self.pos_att_type:
            pos_query = self._table_heads(self.query_dense if self.share_att_key else self.pos_query_dense, table)
            pos_query = pos_query * ops.cast(self.scale, self.compute_dtype)
        return pos_key, pos_query

    def _output(self, scores, value, padding_mask, training):
        """The heads' outputs of float32 scores `[B, N, Q, T]` over `value` `[B, N, T, D]`, projected: `[B, Q, H]`."""
        probs = masked_probabilities(self, scores, padding_bias(padding_mask), training)
        context = tf.matmul(ops.cast(probs, self.compute_dtype), value)  # [B, N, Q, D]
        batch, count = tf.shape(context)[0], tf.shape(context)[2]
        context = tf.reshape(tf.transpose(context, (0, 2, 1, 3)), (batch, count, self.hidden_dim))
        return self.output_dense(context)

    def compute_output_shape(self, x_shape, padding_mask_shape=None, rel_embeddings_shape=None):
        return x_shape
