"""PredictionHead: ModernBERT's per-token transform (dense, activation, LayerNorm) before token and span logits."""

import keras
from keras import ops

from bert_tf.layers.activations import get_activation
from bert_tf.layers.configured_layer import ConfiguredLayer
from bert_tf.layers.layer_norm import LayerNorm


class PredictionHead(ConfiguredLayer):
    """`LN(act(dense(h)))` on every token: `[B, T, H] -> [B, T, H]`.

    Hugging Face's `ModernBertForTokenClassification` and
    `ModernBertForQuestionAnswering` apply their `head`
    (`ModernBertPredictionHead`: a dense with a bias only when
    `classifier_bias`, `classifier_activation`, a LayerNorm with a bias only
    when `norm_bias`) to every final hidden state, then dropout and their
    `classifier`. `BertTokenClassifier` and `BertSpanLabeler` run this layer
    before their `DenseHead` (which is the dropout and the logits) when their
    encoder asks for it (`ModernBertEncoder.token_head`); no other family has
    one. The same computation as `PoolingHead` without the pooling. Its
    variables are `dense/*` and `norm/*`.

    Args:
        hidden_dim: H.
        activation: a `hidden_act` name.
        use_bias: the dense's bias; norm_bias: the LayerNorm's.
    Call args:
        sequence_output: `[B, T, H]`.
    Returns:
        `[B, T, H]`.
    """

    CONFIG = "hidden_dim activation use_bias norm_bias initializer_range layer_norm_epsilon"

    def __init__(
        self,
        hidden_dim,
        activation="gelu",
        use_bias=False,
        norm_bias=False,
        initializer_range=0.02,
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.keep_config(locals())
        self._activation = get_activation(activation)

        # === Layers ===
        self.dense = keras.layers.Dense(
            hidden_dim,
            use_bias=use_bias,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )
        self.norm = LayerNorm(epsilon=layer_norm_epsilon, center=norm_bias, dtype="float32", name="norm")

    def build(self, sequence_output_shape):
        self.dense.build((None, sequence_output_shape[-1]))
        self.norm.build((None, self.hidden_dim))
        self.built = True

    def call(self, sequence_output):
        return ops.cast(self.norm(self._activation(self.dense(sequence_output))), self.compute_dtype)  # [B, T, H]

    def compute_output_shape(self, sequence_output_shape):
        return tuple(sequence_output_shape[:-1]) + (self.hidden_dim,)
