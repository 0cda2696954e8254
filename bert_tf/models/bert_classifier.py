"""BertClassifier: sentence (pair) classification or regression on the pooled output."""

import keras

from bert_tf.models.task import EncoderTask, logits_head


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(EncoderTask):
    """Logits `[B, num_classes]` (float32) from the pooled `[CLS]` output.

    `num_classes=1` is regression: the single output is the score (train with
    `MeanSquaredError`). Otherwise train with
    `SparseCategoricalCrossentropy(from_logits=True)`.
    """

    def __init__(self, encoder, num_classes, dropout=0.1, head_initializer="bert", **kwargs):
        task_config = {"num_classes": num_classes, "dropout": dropout, "head_initializer": head_initializer}
        super().__init__(encoder, task_config, **kwargs)

    def create_heads(self, encoder, num_classes, dropout, head_initializer="bert"):
        self.head = logits_head(encoder, num_classes, dropout, head_initializer, "classifier_head")
        self.num_classes = num_classes

    def heads(self, encoded, inputs, training=None):
        return self.head(encoded["pooled_output"], training=training)  # [B, C]

    def call_selected(self, inputs, training=None):
        # The last encoder layer runs at `[CLS]` only; sentence batches are mostly padding: the layers before skip it.
        encoded = self.encoder.call_at(inputs, None, training=training, pooled=True, unpadded=True)
        return self.heads(encoded, inputs, training=training)
