"""BertPretrainer: masked LM + next-sentence prediction on a BertEncoder."""

import keras

from bert_tf.layers.dense_head import DenseHead
from bert_tf.layers.masked_lm_head import MaskedLMHead
from bert_tf.models.task import EncoderTask, encoder_inputs


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
        # === Layers ===
        mlm_head = MaskedLMHead(
            encoder.token_embedding,
            hidden_act=encoder.hidden_act,
            initializer_range=encoder.initializer_range,
            layer_norm_epsilon=encoder.layer_norm_epsilon,
            dtype=encoder.dtype_policy,
            name="mlm_head",
        )
        nsp_head = DenseHead(2, initializer_range=encoder.initializer_range, name="nsp_head") if nsp else None

        # === Functional Model ===
        inputs = encoder_inputs()
        inputs["mask_positions"] = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        encoded = encoder({k: inputs[k] for k in ("token_ids", "segment_ids", "padding_mask")})
        outputs = {"mlm": mlm_head(encoded["sequence_output"], inputs["mask_positions"])}
        if nsp:
            outputs["nsp"] = nsp_head(encoded["pooled_output"])
        super().__init__(inputs, outputs, encoder, {"nsp": nsp}, **kwargs)
        self.mlm_head = mlm_head
        self.nsp_head = nsp_head
        self.nsp = nsp

    def call_selected(self, inputs, training=None):
        encoded = self.encoder.call_at(inputs, inputs["mask_positions"], training=training, pooled=self.nsp)
        outputs = {"mlm": self.mlm_head.logits(encoded["selected_output"])}
        if self.nsp:
            outputs["nsp"] = self.nsp_head(encoded["pooled_output"], training=training)
        return outputs

    def heads(self, encoded, inputs, training=False):
        outputs = {"mlm": self.mlm_head(encoded["sequence_output"], inputs["mask_positions"])}
        if self.nsp:
            outputs["nsp"] = self.nsp_head(encoded["pooled_output"], training=training)
        return outputs
