"""BertPretrainer: masked LM + a sentence objective (next-sentence or sentence-order prediction) on an encoder."""

import keras

from bert_tf.config import FAMILIES
from bert_tf.layers.dense_head import DenseHead
from bert_tf.layers.masked_lm_head import MaskedLMHead
from bert_tf.models.task import EncoderTask

# The sentence-level objectives a pretrainer's head can train: next-sentence prediction (BERT), sentence-order
# prediction (ALBERT) or none (RoBERTa). The same as `bert_tf.data.pretraining.SENTENCE_OBJECTIVES`.
SENTENCE_HEADS = ("nsp", "sop")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(EncoderTask):
    """BERT pretraining model.

    Inputs: the encoder inputs plus `mask_positions` int32 `[B, P]`.
    Outputs: dict `mlm` float32 logits `[B, P, V]` (only at `mask_positions`)
    and, with a sentence objective, its logits `[B, 2]` on the pooled output,
    keyed by the objective's name: `nsp` (next-sentence prediction: 1 = B is a
    random segment) or `sop` (sentence-order prediction: 1 = A and B swapped).

    A batch is `(features, labels, sample_weights)` with labels
    `{"mlm": [B, P], "nsp": [B]}` (or `"sop"`) and sample weights
    `{"mlm": [B, P]` (0 on unused prediction slots), `"nsp": [B]}`, so plain
    `model.fit` trains it with `SparseCategoricalCrossentropy(from_logits=True)`
    on both outputs.

    The masked-LM output is tied to `encoder.token_embedding`. The sentence head
    is the layer `nsp_head` whichever objective it trains, so checkpoint names do
    not depend on it: TF1 and bert_tf model directories store it as
    `cls/seq_relationship/*` (Google's name for BERT's NSP and ALBERT's SOP head
    alike), Hugging Face as the family's head (`cls.seq_relationship` in
    `BertForPreTraining`, `sop_classifier.classifier` in `AlbertForPreTraining`).
    A BERT pretrained with SOP therefore saves its head as `cls.seq_relationship`;
    only the model directory's `bert_tf.json` (`sentence_objective`) says it is a
    sentence-order head.

    Args:
        encoder: a `BertEncoder` (or a family encoder).
        nsp: legacy switch: True is `sentence_objective="nsp"`, False `"none"`.
        sentence_objective: "nsp", "sop" or "none"; None: from `nsp` (default
            "nsp"). `nsp` and `sentence_objective` given together must agree.

    Attributes:
        sentence_objective: "nsp", "sop" or "none".
        nsp: True when the model has a sentence head (`nsp_head`), of either kind.
    """

    def __init__(self, encoder, nsp=None, sentence_objective=None, **kwargs):
        if sentence_objective is None:
            sentence_objective = "none" if nsp is False else "nsp"
        if sentence_objective not in SENTENCE_HEADS + ("none",):
            raise ValueError(
                f"`sentence_objective` must be one of {SENTENCE_HEADS + ('none',)}. "
                f"Received: sentence_objective={sentence_objective!r}"
            )
        if nsp is not None and bool(nsp) != (sentence_objective != "none"):
            raise ValueError(
                f"`nsp` contradicts `sentence_objective`: set only `sentence_objective`. "
                f"Received: nsp={nsp!r}, sentence_objective={sentence_objective!r}"
            )
        super().__init__(
            encoder, {"sentence_objective": sentence_objective}, extra_inputs=("mask_positions",), **kwargs
        )

    def create_heads(self, encoder, sentence_objective):
        family = FAMILIES[encoder.model_type]
        options = {"hidden_act": family.mlm_activation or encoder.hidden_act}
        if family.mlm_head_fields:  # the head's form is the config's (ModernBERT: activation and biases)
            config = encoder.bert_config()
            options.update({argument: getattr(config, field) for argument, field in family.mlm_head_fields})
        self.mlm_head = MaskedLMHead(
            encoder.token_embedding,
            initializer_range=encoder.initializer_range,
            layer_norm_epsilon=encoder.layer_norm_epsilon,
            dtype=encoder.dtype_policy,
            name="mlm_head",
            **options,
        )
        self.sentence_objective = sentence_objective
        self.nsp = sentence_objective != "none"
        self.nsp_head = DenseHead(2, initializer_range=encoder.initializer_range, name="nsp_head") if self.nsp else None

    def heads(self, encoded, inputs, training=None):
        if "selected_output" in encoded:  # `call_selected`: the encoder's outputs at `mask_positions` only
            outputs = {"mlm": self.mlm_head.logits(encoded["selected_output"])}
        else:
            outputs = {"mlm": self.mlm_head(encoded["sequence_output"], inputs["mask_positions"])}
        if self.nsp:
            outputs[self.sentence_objective] = self.nsp_head(encoded["pooled_output"], training=training)  # [B, 2]
        return outputs

    def call_selected(self, inputs, training=None):
        # The last encoder layer runs its queries and feed-forward network at `mask_positions` (and `[CLS]`) only.
        encoded = self.encoder.call_at(inputs, inputs["mask_positions"], training=training, pooled=self.nsp)
        return self.heads(encoded, inputs, training=training)
