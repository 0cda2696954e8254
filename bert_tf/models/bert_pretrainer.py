"""BertPretrainer: masked LM + next-sentence prediction on a BertEncoder."""

import keras

from bert_tf.config import FAMILIES
from bert_tf.layers.dense_head import DenseHead
from bert_tf.layers.masked_lm_head import MaskedLMHead
from bert_tf.models.task import EncoderTask


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(EncoderTask):
    """BERT pretraining model.

    Inputs: the encoder inputs plus `mask_positions` int32 `[B, P]`.
    Outputs: dict `mlm` float32 logits `[B, P, V]` (only at `mask_positions`)
    and, when `nsp=True`, `nsp` float32 logits `[B, 2]`.

    A batch is `(features, labels, sample_weights)` with labels
    `{"mlm": [B, P], "nsp": [B]}` and sample weights `{"mlm": [B, P]` (0 on
    unused prediction slots), `"nsp": [B]}`, so plain `model.fit` trains it
    with `SparseCategoricalCrossentropy(from_logits=True)` on both outputs.

    The masked-LM output is tied to `encoder.token_embedding`.
    """

    def __init__(self, encoder, nsp=True, **kwargs):
        super().__init__(encoder, {"nsp": nsp}, extra_inputs=("mask_positions",), **kwargs)

    def create_heads(self, encoder, nsp):
        self.mlm_head = MaskedLMHead(
            encoder.token_embedding,
            hidden_act=FAMILIES[encoder.model_type].mlm_activation or encoder.hidden_act,
            initializer_range=encoder.initializer_range,
            layer_norm_epsilon=encoder.layer_norm_epsilon,
            dtype=encoder.dtype_policy,
            name="mlm_head",
        )
        self.nsp_head = DenseHead(2, initializer_range=encoder.initializer_range, name="nsp_head") if nsp else None
        self.nsp = nsp

    def heads(self, encoded, inputs, training=None):
        if "selected_output" in encoded:  # `call_selected`: the encoder's outputs at `mask_positions` only
            outputs = {"mlm": self.mlm_head.logits(encoded["selected_output"])}
        else:
            outputs = {"mlm": self.mlm_head(encoded["sequence_output"], inputs["mask_positions"])}
        if self.nsp:
            outputs["nsp"] = self.nsp_head(encoded["pooled_output"], training=training)
        return outputs

    def call_selected(self, inputs, training=None):
        # The last encoder layer runs its queries and feed-forward network at `mask_positions` (and `[CLS]`) only.
        encoded = self.encoder.call_at(inputs, inputs["mask_positions"], training=training, pooled=self.nsp)
        return self.heads(encoded, inputs, training=training)
