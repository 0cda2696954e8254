"""BertClassifier: sentence (pair) classification or regression on the pooled output."""

import keras

from bert_tf.layers.dense_head import DenseHead
from bert_tf.models.task import EncoderTask, encoder_inputs


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(EncoderTask):
    """Logits `[B, num_classes]` (float32) from the pooled `[CLS]` output.

    `num_classes=1` is regression: the single output is the score (train with
    `MeanSquaredError`). Otherwise train with
    `SparseCategoricalCrossentropy(from_logits=True)`.
    """

    def __init__(self, encoder, num_classes, dropout=0.1, **kwargs):
        head = DenseHead(
            num_classes,
            dropout=dropout,
            initializer_range=encoder.initializer_range,
            dtype=encoder.dtype_policy,
            name="classifier_head",
        )
        inputs = encoder_inputs()
        outputs = head(encoder(inputs)["pooled_output"])  # [B, C]
        super().__init__(inputs, outputs, encoder, {"num_classes": num_classes, "dropout": dropout}, **kwargs)
        self.head = head
        self.num_classes = num_classes

    def call_selected(self, inputs, training=None):
        # Sentence batches are mostly padding: the layers before the last skip it too.
        pooled = self.encoder.call_at(inputs, None, training=training, pooled=True, unpadded=True)["pooled_output"]
        return self.head(pooled, training=training)

    def heads(self, encoded, inputs, training=False):
        return self.head(encoded["pooled_output"], training=training)
