"""RelativeEmbeddings: DeBERTa's table of relative-position embeddings, shared by every layer."""

import keras
from keras import ops

from bert_tf.layers.configured_layer import ConfiguredLayer
from bert_tf.layers.layer_norm import LayerNorm


class RelativeEmbeddings(ConfiguredLayer):
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

    CONFIG = "num_rows hidden_dim normalize initializer_range layer_norm_epsilon"

    def __init__(self, num_rows, hidden_dim, normalize=True, initializer_range=0.02, layer_norm_epsilon=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.keep_config(locals())
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
