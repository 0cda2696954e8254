"""BertClassifier: sentence (pair) classification or regression on the pooled output."""

import keras

from bert_tf.models.task import EncoderTask, logits_head


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(EncoderTask):
    """Logits `[B, num_classes]` (float32) from the pooled `[CLS]` output.

    `num_classes=1` is regression: the single output is the score (train with
    `MeanSquaredError`). Otherwise train with
    `SparseCategoricalCrossentropy(from_logits=True)`.

    Called on real tensors of shape `[B, K, T]` (K texts or pairs per example,
    e.g. a reranker's query with K candidates) it returns `[B, K, num_classes]`
    from one encoder call on all `B * K` rows.
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
        if len(inputs["token_ids"].shape) == 3:  # [B, K, T]: K pairs per example (a reranker's candidates)
            shape = keras.ops.shape(inputs["token_ids"])
            flat = {name: keras.ops.reshape(value, (-1, shape[2])) for name, value in inputs.items()}  # [B*K, T]
            logits = self.call_selected(flat, training=training)  # [B*K, C]
            return keras.ops.reshape(logits, (shape[0], shape[1], -1))  # [B, K, C]
        encoded = self.encoder.call_at(inputs, None, training=training, pooled=True, unpadded=True)
        return self.heads(encoded, inputs, training=training)
