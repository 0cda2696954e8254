"""DebertaEmbeddings: DeBERTa-v2/v3's input embeddings (word, optional position and segment), masked at padding."""

import keras
from keras import ops

from bert_tf.layers.configured_layer import ConfiguredLayer
from bert_tf.layers.dropout import draw_seed, dropout
from bert_tf.layers.layer_norm import LayerNorm


class DebertaEmbeddings(ConfiguredLayer):
    """`mask * LN(proj(word + position + segment))`, then dropout: `[B, T]` ids -> `[B, T, H]`.

    Unlike `BertEmbeddings`, DeBERTa-v3 has no absolute positions
    (`position_biased_input=False`: the attention sees positions only
    relatively) and usually no segments (`type_vocab_size=0`); the
    projection to H (when `embedding_size` is set) has no bias and comes
    before the LayerNorm; padding rows are zeroed after it.

    Args:
        vocabulary_size: V.
        hidden_dim: H.
        max_position_embeddings: rows of the absolute position table (when `position_biased_input`).
        type_vocab_size: segments; 0 for none.
        position_biased_input: add learned absolute positions.
        embedding_size: E, the tables' width when not H (projected to H without bias); None: H.
        dropout: dropout rate on the output.
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_epsilon: LayerNorm epsilon (1e-7 in DeBERTa).
    Call args:
        token_ids, segment_ids, padding_mask: int `[B, T]`.
    Returns:
        `[B, T, H]` in the compute dtype, 0 at padding.
    """

    CONFIG = (
        "vocabulary_size hidden_dim max_position_embeddings type_vocab_size position_biased_input embedding_size "
        "dropout initializer_range layer_norm_epsilon"
    )

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_position_embeddings=512,
        type_vocab_size=0,
        position_biased_input=False,
        embedding_size=None,
        dropout=0.1,
        initializer_range=0.02,
        layer_norm_epsilon=1e-7,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.keep_config(locals())
        width = embedding_size or hidden_dim  # E

        # === Layers ===
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)

        def table(rows, name):
            return keras.layers.Embedding(rows, width, embeddings_initializer=initializer, dtype="float32", name=name)

        self.token_embedding = table(vocabulary_size, "token_embedding")
        self.position_embedding = (
            table(max_position_embeddings, "position_embedding") if position_biased_input else None
        )
        self.segment_embedding = table(type_vocab_size, "segment_embedding") if type_vocab_size else None
        self.projection = (
            keras.layers.Dense(
                hidden_dim, use_bias=False, kernel_initializer=initializer, dtype=self.dtype_policy, name="projection"
            )
            if embedding_size and embedding_size != hidden_dim
            else None
        )
        self.layer_norm = LayerNorm(epsilon=layer_norm_epsilon, dtype="float32", name="layer_norm")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, token_ids_shape, segment_ids_shape=None, padding_mask_shape=None):
        self.token_embedding.build(token_ids_shape)
        for layer in (self.position_embedding, self.segment_embedding):
            if layer is not None:
                layer.build(token_ids_shape)
        width = self.embedding_size or self.hidden_dim
        if self.projection is not None:
            self.projection.build((None, None, width))
        self.layer_norm.build((None, None, self.hidden_dim))
        self.built = True

    def call(self, token_ids, segment_ids, padding_mask, training=None):
        x = self.token_embedding(token_ids)  # float32 [B, T, E]
        if self.position_embedding is not None:
            positions = ops.arange(ops.shape(token_ids)[1], dtype="int32")
            x = x + self.position_embedding(positions)[None]
        if self.segment_embedding is not None:
            x = x + self.segment_embedding(segment_ids)
        if self.projection is not None:
            x = self.projection(ops.cast(x, self.compute_dtype))  # [B, T, H]
        x = ops.cast(self.layer_norm(x), self.compute_dtype)
        # (expand_dims, not `[:, :, None]`: LiteRT's converter has no builtin for a strided slice adding an axis.)
        x = x * ops.expand_dims(ops.cast(padding_mask, self.compute_dtype), -1)
        if training and self.dropout:
            x = dropout(x, draw_seed(self.dropout_layer), self.dropout)
        return x

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None, padding_mask_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)
