"""RelativeEmbeddings: DeBERTa's table of relative-position embeddings, shared by every layer."""

import keras
from keras import ops

from bert_tf.layers.layer_norm import LayerNorm


class RelativeEmbeddings(keras.layers.Layer):
    """The `[2S, H]` relative-position table, LayerNorm-ed when `normalize` (`norm_rel_ebd="layer_norm"`).

    Every `DisentangledSelfAttention` of the encoder projects this one table
    into its position keys and queries. Row `r` is the relative position
    `r - S` (bucketed, see `bert_tf.layers.relative_position`).

    Args:
        num_rows: 2S.
        hidden_dim: H.
        normalize: apply a LayerNorm (its own gamma/beta) to the table.
    Call args:
        x: any tensor of the model (the table does not depend on it; it only places the layer in the graph).
    Returns:
        `[2S, H]` in the compute dtype.
    """

    def __init__(self, num_rows, hidden_dim, normalize=True, initializer_range=0.02, layer_norm_epsilon=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.num_rows = num_rows
        self.hidden_dim = hidden_dim
        self.normalize = normalize
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.layer_norm = (
            LayerNorm(epsilon=layer_norm_epsilon, dtype="float32", name="layer_norm") if normalize else None
        )

    def build(self, x_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.num_rows, self.hidden_dim),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
            dtype="float32",
        )
        if self.layer_norm is not None:
            self.layer_norm.build((self.num_rows, self.hidden_dim))
        self.built = True

    def call(self, x=None):
        table = ops.convert_to_tensor(self.embeddings)  # float32 [2S, H]
        if self.layer_norm is not None:
            table = self.layer_norm(table)
        return ops.cast(table, self.compute_dtype)

    def compute_output_shape(self, x_shape=None):
        return (self.num_rows, self.hidden_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_rows": self.num_rows,
                "hidden_dim": self.hidden_dim,
                "normalize": self.normalize,
                "initializer_range": self.initializer_range,
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        return config
