"""BertSparseEncoder: one sparse vocabulary-sized vector per text (SPLADE: sentence-transformers' SparseEncoder)."""

import keras

from bert_tf.config import FAMILIES
from bert_tf.layers.masked_lm_head import MaskedLMHead
from bert_tf.layers.splade_pooling import SpladePooling
from bert_tf.models.task import EncoderTask


def masked_lm_head(encoder, name="mlm_head"):
    """The family's masked-LM head on `encoder`, tied to its word embeddings (as `BertPretrainer` makes it)."""
    family = FAMILIES[encoder.model_type]
    options = {"hidden_act": family.mlm_activation or encoder.hidden_act}
    if family.mlm_head_fields:  # the head's form is the config's (ModernBERT: activation and biases)
        config = encoder.bert_config()
        options.update({argument: getattr(config, field) for argument, field in family.mlm_head_fields})
    return MaskedLMHead(
        encoder.token_embedding,
        initializer_range=encoder.initializer_range,
        layer_norm_epsilon=encoder.layer_norm_epsilon,
        dtype=encoder.dtype_policy,
        name=name,
        **options,
    )


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSparseEncoder(EncoderTask):
    """Sparse text vectors float32 `[B, V]` over the vocabulary (SPLADE).

    The masked-LM head (`mlm_head`, the pretrainer's: tied to the word
    embeddings, checkpoint names `cls/predictions/*`) gives every token's
    logits `[B, T, V]`; `SpladePooling` turns them into weights
    `log(1 + relu(logits))` (`activation` "log1p_relu": once more `log(1 + .)`)
    and pools them over the real tokens by `pooling` ("max" or "sum"). A model
    directory records both (`sparse_pooling`, `sparse_activation` in
    `bert_tf.json`), read from a sentence-transformers SparseEncoder folder's
    `1_SpladePooling/config.json` when converted.

    Called on real tensors of shape `[B, K, T]` (K texts per example, as
    embedding fine-tuning batches them) it returns `[B, K, V]` from one
    encoder call on all `B * K` texts.

    Args:
        encoder: a `BertEncoder` (or a family encoder).
        pooling: "max" or "sum".
        activation: "relu" or "log1p_relu".
    """

    def __init__(self, encoder, pooling="max", activation="relu", **kwargs):
        super().__init__(encoder, {"pooling": pooling, "activation": activation}, **kwargs)

    def create_heads(self, encoder, pooling, activation):
        self.mlm_head = masked_lm_head(encoder)
        self.splade = SpladePooling(pooling, activation, name="splade_pooling")
        self.pooling, self.activation = self.splade.pooling, self.splade.activation
        self.vocabulary_size = self.mlm_head.vocabulary_size

    def heads(self, encoded, inputs, training=None):
        mask = inputs["padding_mask"]  # [B, T]
        positions = keras.ops.cumsum(keras.ops.ones_like(mask), axis=1) - 1  # [B, T]: every token
        logits = self.mlm_head(encoded["sequence_output"], positions)  # [B, T, V]
        return self.splade(logits, mask)  # [B, V]

    def call_selected(self, inputs, training=None):
        # Every real token is read; padding is not.
        if len(inputs["token_ids"].shape) == 3:  # [B, K, T]: K texts per example
            shape = keras.ops.shape(inputs["token_ids"])
            flat = {name: keras.ops.reshape(value, (-1, shape[2])) for name, value in inputs.items()}  # [B*K, T]
            vectors = self.call_unpadded(flat, training=training)  # [B*K, V]
            return keras.ops.reshape(vectors, (shape[0], shape[1], -1))  # [B, K, V]
        return self.call_unpadded(inputs, training=training)
