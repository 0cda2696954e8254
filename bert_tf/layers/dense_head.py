"""DenseHead: dropout and a float32 dense projection, for NSP and task logits."""

import keras

from bert_tf.layers.configured_layer import ConfiguredLayer

# Initializers of a task head's kernel: "bert" is the reference's truncated normal with the encoder's
# `initializer_range` (0.02); "glorot_uniform" is Keras' default. Each task chooses its default
# (`bert_tf.tasks.Task.head_initializer`: glorot_uniform for the built-in tasks, measured).
HEAD_INITIALIZERS = ("glorot_uniform", "bert")


class DenseHead(ConfiguredLayer):
    """`[..., H] -> [..., units]` float32 logits, with dropout before the projection.

    Used for NSP (`units=2` on the pooled output), sentence classification or
    regression (pooled output), token tagging and span start/end (sequence output).
    `kernel_initializer` is one of HEAD_INITIALIZERS (default "bert").
    """

    CONFIG = "units dropout initializer_range kernel_initializer"

    def __init__(self, units, dropout=0.0, initializer_range=0.02, kernel_initializer="bert", **kwargs):
        super().__init__(**kwargs)
        if units <= 0:
            raise ValueError(f"`units` must be positive. Received: units={units}")
        if kernel_initializer not in HEAD_INITIALIZERS:
            raise ValueError(
                f"`kernel_initializer` must be one of {HEAD_INITIALIZERS}. Received: kernel_initializer={kernel_initializer!r}"
            )
        self.keep_config(locals())

        # === Layers ===
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")
        self.dense = keras.layers.Dense(
            units,
            kernel_initializer=(
                keras.initializers.TruncatedNormal(stddev=initializer_range)
                if kernel_initializer == "bert"
                else kernel_initializer
            ),
            dtype="float32",
            name="logits",
        )

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.built = True

    def call(self, x, training=None):
        return self.dense(self.dropout_layer(x, training=training))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)
