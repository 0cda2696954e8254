"""BertSpanLabeler: extractive QA start/end logits on the sequence output."""

import keras
from keras import ops

from bert_tf.models.task import EncoderTask, logits_head, token_head

# Logit given to padding positions so no span starts or ends there.
_PADDING_LOGIT = -1e4


class _SplitSpanLogits(keras.layers.Layer):
    """`[B, T, 2]` logits and `[B, T]` padding mask -> masked start and end logits `[B, T]`."""

    def call(self, logits, padding_mask):
        penalty = (1.0 - ops.cast(padding_mask, "float32")) * _PADDING_LOGIT
        return {"start_logits": logits[:, :, 0] + penalty, "end_logits": logits[:, :, 1] + penalty}

    def compute_output_shape(self, logits_shape, padding_mask_shape):
        return {"start_logits": tuple(logits_shape[:2]), "end_logits": tuple(logits_shape[:2])}


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSpanLabeler(EncoderTask):
    """Outputs dict `start_logits`, `end_logits`, each float32 `[B, T]`.

    Padding positions get a large negative logit. Train each output with
    `SparseCategoricalCrossentropy(from_logits=True)` on the start/end token index.

    On a ModernBERT encoder every token first goes through `span_transform`
    (dense, activation, LayerNorm: `ModernBertForQuestionAnswering`'s `head`,
    `bert_tf.models.task.token_head`); other families have none.
    """

    def __init__(self, encoder, dropout=0.0, head_initializer="bert", **kwargs):
        super().__init__(encoder, {"dropout": dropout, "head_initializer": head_initializer}, **kwargs)

    def create_heads(self, encoder, dropout, head_initializer="bert"):
        self.transform = token_head(encoder, "span_transform")  # None but for ModernBERT
        self.head = logits_head(encoder, 2, dropout, head_initializer, "span_head")
        self.span_logits = _SplitSpanLogits(dtype="float32", name="span_logits")

    def heads(self, encoded, inputs, training=None):
        sequence = encoded["sequence_output"]  # [B, T, H]
        if self.transform is not None:
            sequence = self.transform(sequence)  # [B, T, H]
        logits = self.head(sequence, training=training)  # [B, T, 2]
        return self.span_logits(logits, inputs["padding_mask"])

    def call_selected(self, inputs, training=None):
        # Every real token is read: skip the padding (outputs at padding carry no loss).
        return self.call_unpadded(inputs, training=training)
