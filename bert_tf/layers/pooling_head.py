"""PoolingHead: ModernBERT's sentence pooler: the first token or the mean of the real tokens, then dense,
activation and LayerNorm."""

from keras import ops

from bert_tf.config import CLASSIFIER_POOLINGS
from bert_tf.layers.prediction_head import PredictionHead


class PoolingHead(PredictionHead):
    """`LN(act(dense(pool(h))))`: `[B, T, H] -> [B, H]`, what the encoder gives as `pooled_output`.

    Hugging Face's `ModernBertForSequenceClassification` pools the final
    hidden states by `classifier_pooling` ("cls": the first token; "mean": the
    mean over real tokens, padding excluded) and applies its `head`
    (`ModernBertPredictionHead`: a dense with a bias only when
    `classifier_bias`, `classifier_activation`, a LayerNorm with a bias only
    when `norm_bias`) before the logits layer; this layer is that pooling and
    head, so `BertClassifier`'s logits dense sits on it as on every family's
    pooler. It is `PredictionHead` on the pooled vector; its variables are `dense/*` and `norm/*`.

    Args:
        hidden_dim: H.
        pooling: "cls" or "mean".
        activation: a `hidden_act` name.
        use_bias: the dense's bias; norm_bias: the LayerNorm's.
    Call args:
        sequence_output: `[B, T, H]`.
        padding_mask: int `[B, T]`, 1 for real tokens (read by "mean").
    Returns:
        `[B, H]`.
    """

    def __init__(self, hidden_dim, pooling="cls", **kwargs):
        if pooling not in CLASSIFIER_POOLINGS:
            raise ValueError(f"`pooling` must be one of {CLASSIFIER_POOLINGS}. Received: pooling={pooling!r}")
        super().__init__(hidden_dim, **kwargs)
        self.pooling = pooling

    def build(self, sequence_output_shape, padding_mask_shape=None):
        super().build(sequence_output_shape)

    def call(self, sequence_output, padding_mask):
        if self.pooling == "cls":
            pooled = sequence_output[:, 0, :]  # [B, H]
        else:
            mask = ops.cast(padding_mask, sequence_output.dtype)[:, :, None]  # [B, T, 1]
            count = ops.maximum(ops.sum(mask, axis=1), 1.0)  # an all-padding row pools to 0, not NaN
            pooled = ops.sum(sequence_output * mask, axis=1) / count  # [B, H]
        return super().call(pooled)  # [B, H]

    def compute_output_shape(self, sequence_output_shape, padding_mask_shape=None):
        return (sequence_output_shape[0], self.hidden_dim)

    def get_config(self):
        return {**super().get_config(), "pooling": self.pooling}
