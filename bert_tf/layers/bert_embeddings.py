"""BertEmbeddings: token + segment + learned position embeddings."""

import keras
from keras import ops

from bert_tf.layers.configured_layer import ConfiguredLayer
from bert_tf.layers.layer_norm import LayerNorm


class _Untracked:
    """Holds a layer without Keras tracking it as a sublayer."""

    def __init__(self, value):
        self.value = value


class BertEmbeddings(ConfiguredLayer):
    """Sums word, segment and absolute position embeddings, then LayerNorm and dropout.

    The family's variants: `type_vocab_size=0` has no segment table (DistilBERT) and 1 ignores
    `segment_ids` (RoBERTa: every token is segment 0); `position_offset` skips that many learned
    positions (RoBERTa's first token is at `pad_token_id + 1`); `embedding_size` (E) smaller or larger
    than H makes the tables E wide, with a dense projecting the normalized sum to H (ELECTRA's
    `embeddings_project`).

    `shared_tables` (another `BertEmbeddings`) makes this layer use that one's word, segment and position
    tables and its LayerNorm, keeping only its own dropout and projection: ELECTRA's generator embeds with
    the discriminator's tables (Clark et al. 2020, section 3.2) and projects them to its own, smaller width.

    Call args:
        token_ids: int `[B, T]`.
        segment_ids: int `[B, T]`.
    Returns:
        float `[B, T, H]` in the compute dtype. The sum and LayerNorm run in
        float32 under mixed precision; the tables are float32 variables.
    """

    CONFIG = (
        "vocabulary_size hidden_dim max_position_embeddings type_vocab_size dropout initializer_range "
        "layer_norm_epsilon embedding_size position_offset"
    )

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_position_embeddings=512,
        type_vocab_size=2,
        dropout=0.1,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        embedding_size=None,
        position_offset=0,
        shared_tables=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (
            ("vocabulary_size", vocabulary_size),
            ("hidden_dim", hidden_dim),
            ("max_position_embeddings", max_position_embeddings),
            ("embedding_size", embedding_size or hidden_dim),
        ):
            if value <= 0:
                raise ValueError(f"`{name}` must be positive. Received: {name}={value}")
        for name, value in (("type_vocab_size", type_vocab_size), ("position_offset", position_offset)):
            if value < 0:
                raise ValueError(f"`{name}` must be >= 0. Received: {name}={value}")
        self.keep_config(locals())
        width = embedding_size or hidden_dim  # E
        self._shared = _Untracked(shared_tables)  # its variables are reached through the shared sublayers
        if shared_tables is not None:
            theirs = shared_tables
            mine = (vocabulary_size, width, max_position_embeddings, type_vocab_size, position_offset)
            other = (
                theirs.vocabulary_size,
                theirs.embedding_size or theirs.hidden_dim,
                theirs.max_position_embeddings,
                theirs.type_vocab_size,
                theirs.position_offset,
            )
            if mine != other:
                raise ValueError(
                    "`shared_tables` must have this layer's (vocabulary_size, embedding width, "
                    "max_position_embeddings, type_vocab_size, position_offset). "
                    f"Received: {other} for {mine}"
                )

        # === Layers ===
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        if shared_tables is not None:
            self.token_embedding = shared_tables.token_embedding
            self.segment_embedding = shared_tables.segment_embedding
            self.layer_norm = shared_tables.layer_norm
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")
        self.projection = (
            keras.layers.Dense(hidden_dim, kernel_initializer=initializer, dtype=self.dtype_policy, name="projection")
            if embedding_size
            else None
        )
        if shared_tables is not None:
            return
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, width, embeddings_initializer=initializer, dtype="float32", name="token_embedding"
        )
        self.segment_embedding = (
            keras.layers.Embedding(
                type_vocab_size, width, embeddings_initializer=initializer, dtype="float32", name="segment_embedding"
            )
            if type_vocab_size
            else None
        )
        self.layer_norm = LayerNorm(epsilon=layer_norm_epsilon, dtype="float32", name="layer_norm")

    def build(self, token_ids_shape, segment_ids_shape=None):
        width = self.embedding_size or self.hidden_dim
        shared = self._shared.value
        if shared is not None:
            if not shared.built:
                shared.build(token_ids_shape, segment_ids_shape)
            self.position_embedding = shared.position_embedding
            if self.projection is not None:
                self.projection.build(tuple(token_ids_shape) + (width,))
            self.built = True
            return
        self.token_embedding.build(token_ids_shape)
        if self.segment_embedding is not None:
            self.segment_embedding.build(token_ids_shape)
        self.position_embedding = self.add_weight(
            name="position_embedding",
            shape=(self.max_position_embeddings + self.position_offset, width),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
        )
        self.layer_norm.build(tuple(token_ids_shape) + (width,))
        if self.projection is not None:
            self.projection.build(tuple(token_ids_shape) + (width,))
        self.built = True

    def call(self, token_ids, segment_ids, training=None):
        length = ops.shape(token_ids)[1]
        x = self.token_embedding(token_ids)  # [B, T, E]
        if self.type_vocab_size == 1:  # one segment: every token gets its row, whatever segment_ids say
            x = x + self.segment_embedding.embeddings[0]
        elif self.segment_embedding is not None:
            x = x + self.segment_embedding(segment_ids)
        offset = self.position_offset
        x = x + ops.cast(self.position_embedding[offset : offset + length], "float32")[None, :, :]
        x = self.layer_norm(x)
        x = ops.cast(x, self.compute_dtype)
        x = self.dropout_layer(x, training=training)
        return x if self.projection is None else self.projection(x)  # [B, T, H]

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)
