"""BertTokenClassifier: per-token labels (NER) on the sequence output."""

import keras

from bert_tf.layers.dense_head import DenseHead
from bert_tf.models.task import EncoderTask, encoder_inputs


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(EncoderTask):
    """Logits `[B, T, num_classes]` (float32), one row per word piece.

    Train with `SparseCategoricalCrossentropy(from_logits=True)` and a sample
    weight `[B, T]` that is 1 only on the pieces that carry a label (first
    piece of each word) so padding and continuation pieces add no loss.
    """

    def __init__(self, encoder, num_classes, dropout=0.1, **kwargs):
        head = DenseHead(
            num_classes,
            dropout=dropout,
            initializer_range=encoder.initializer_range,
            dtype=encoder.dtype_policy,
            name="tagger_head",
        )
        inputs = encoder_inputs()
        outputs = head(encoder(inputs)["sequence_output"])  # [B, T, C]
        super().__init__(inputs, outputs, encoder, {"num_classes": num_classes, "dropout": dropout}, **kwargs)
        self.head = head
        self.num_classes = num_classes

    def call_selected(self, inputs, training=None):
        # Every real token is read: skip the padding (outputs at padding carry no loss).
        return self.call_unpadded(inputs, training=training)

    def heads(self, encoded, inputs, training=False):
        return self.head(encoded["sequence_output"], training=training)
