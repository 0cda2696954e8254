"""BertTokenClassifier: per-token labels (NER) on the sequence output."""

import keras

from bert_tf.models.task import EncoderTask, logits_head, token_head


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(EncoderTask):
    """Logits `[B, T, num_classes]` (float32), one row per word piece.

    Train with `SparseCategoricalCrossentropy(from_logits=True)` and a sample
    weight `[B, T]` that is 1 only on the pieces that carry a label (first
    piece of each word) so padding and continuation pieces add no loss.

    On a ModernBERT encoder every token first goes through `tagger_transform`
    (dense, activation, LayerNorm: `ModernBertForTokenClassification`'s
    `head`, `bert_tf.models.task.token_head`); other families have none.
    """

    def __init__(self, encoder, num_classes, dropout=0.1, head_initializer="bert", **kwargs):
        task_config = {"num_classes": num_classes, "dropout": dropout, "head_initializer": head_initializer}
        super().__init__(encoder, task_config, **kwargs)

    def create_heads(self, encoder, num_classes, dropout, head_initializer="bert"):
        self.transform = token_head(encoder, "tagger_transform")  # None but for ModernBERT
        self.head = logits_head(encoder, num_classes, dropout, head_initializer, "tagger_head")
        self.num_classes = num_classes

    def heads(self, encoded, inputs, training=None):
        sequence = encoded["sequence_output"]  # [B, T, H]
        if self.transform is not None:
            sequence = self.transform(sequence)  # [B, T, H]
        return self.head(sequence, training=training)  # [B, T, C]

    def call_selected(self, inputs, training=None):
        # Every real token is read: skip the padding (outputs at padding carry no loss).
        return self.call_unpadded(inputs, training=training)
