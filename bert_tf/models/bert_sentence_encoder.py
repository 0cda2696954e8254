"""BertSentenceEncoder: one embedding per input text (sentence-transformers' Transformer + Pooling + Normalize)."""

import keras

from bert_tf.layers.sentence_pooling import SentencePooling
from bert_tf.models.task import EncoderTask


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSentenceEncoder(EncoderTask):
    """Sentence embeddings float32 `[B, D]` from the encoder's token vectors.

    The pooling (`SentencePooling`: "mean", "cls", "max", ... or a list of
    them, concatenated) runs over the real tokens of `sequence_output`; with
    `normalize` the embedding is L2-normalized, so inner products are cosines.
    A model directory records both (`pooling`, `normalize` in `bert_tf.json`),
    read from a sentence-transformers folder's `modules.json` and
    `1_Pooling/config.json` when converted.

    Called on real tensors of shape `[B, K, T]` (K texts per example, e.g.
    anchor, positive and negative, as embedding fine-tuning batches them) it
    returns `[B, K, D]` from one encoder call on all `B * K` texts.

    The model has no weights of its own: its checkpoint is the encoder's.
    """

    def __init__(self, encoder, pooling="mean", normalize=True, **kwargs):
        pooling = [pooling] if isinstance(pooling, str) else list(pooling)
        super().__init__(encoder, {"pooling": pooling, "normalize": normalize}, **kwargs)

    def create_heads(self, encoder, pooling, normalize):
        self.pooler = SentencePooling(pooling, normalize, name="sentence_pooling")
        self.pooling = self.pooler.pooling
        self.normalize = normalize

    def heads(self, encoded, inputs, training=None):
        return self.pooler(encoded["sequence_output"], inputs["padding_mask"])  # [B, D]

    def call_selected(self, inputs, training=None):
        # Every real token is read; padding is not.
        if len(inputs["token_ids"].shape) == 3:  # [B, K, T]: K texts per example
            shape = keras.ops.shape(inputs["token_ids"])
            flat = {name: keras.ops.reshape(value, (-1, shape[2])) for name, value in inputs.items()}  # [B*K, T]
            embeddings = self.call_unpadded(flat, training=training)  # [B*K, D]
            return keras.ops.reshape(embeddings, (shape[0], shape[1], -1))  # [B, K, D]
        return self.call_unpadded(inputs, training=training)
