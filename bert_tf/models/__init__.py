"""BERT models: the encoder and the task models built on it.

`BertEncoder` is a Keras functional model (embeddings, transformer blocks,
pooler); `build_encoder(bert_config)` builds the encoder of any `model_type`
(`encoders.py` says which class each architecture uses). Every encoder class
is an `Encoder` (`encoder.py`: the graph's tail, config and dtype written
once; each family declares its layers, steps and what other code asks of it). A task model (`BertPretrainer`, `BertClassifier`,
`BertTokenClassifier`, `BertSpanLabeler`, `BertSentenceEncoder`, `BertSparseEncoder`) is an `EncoderTask`: its heads,
wired once in its `heads` method, on an encoder. `ElectraPretrainer` (replaced-token detection) holds two:
the discriminator (`encoder`) and a `BertPretrainer` generator sharing its embedding tables.

Forward paths. All compute the same function where their outputs are read
(tests/models/ check the values to 1e-5, and the gradients of the paths that
train); they differ in the work they skip.

path                          computes                                      runs under
----------------------------  --------------------------------------------  ----------------------------------------
EncoderTask.call              real tensors: `call_selected`;                `model(inputs)`: `fit`, `evaluate`,
  (`model(inputs)`)           Keras tensors: `call_graph`                   `predict`, `bert_tf.training`'s
                                                                            `TrainingLoop` (train and eval steps),
                                                                            fine-tuning's predictions
EncoderTask.call_selected     the graph's outputs by a cheaper path:        `EncoderTask.call` on real tensors
                              pretrainer `call_at(mask_positions,
                              pooled=nsp)`, classifier `call_at([CLS],
                              unpadded=True)`, then `heads`; token
                              classifier and span labeler `call_unpadded`
                              (values at padding differ, carry no loss)
EncoderTask.call_graph        the functional graph built at construction:   Keras tensors (a functional model built
                              `BertEncoder.call` on all positions, then     on this one), `model.summary()`, tests
                              `heads`                                       (the reference the other paths equal)
EncoderTask.call_unpadded     `BertEncoder.call_unpadded`, then `heads`     the SavedModels' serving functions
                                                                            (`bert_tf.export`); token tasks'
                                                                            `call_selected`
BertEncoder.call              the functional graph: every layer on all      symbolic construction of the task
  (`encoder(inputs)`)         `B*T` positions                               models; `encoder(inputs)` in user code
BertEncoder.call_at           layers but the last as `call` (or on real     pretrainer's and classifier's
                              tokens only, `unpadded`); the last only at    `call_selected`
                              `positions` (and `[CLS]` when `pooled`)
BertEncoder.call_unpadded     every layer on the real tokens only, as one   `EncoderTask.call_unpadded`; the
                              `[M, H]` token matrix; 0 at padding           encoder SavedModel

Shared layers (ALBERT): each path runs `BertEncoder.applied_layers`, the
distinct blocks in the order the layers use them (a block shared by several
layers is called once per layer), so the table holds for every family.

Below these, the layers have the same split: `TransformerBlock.call`
(`[B, T, H]`, the graph), `call_tokens` (a `[M, H]` token matrix: all
positions, or only the real ones with a `token_index`) and `call_at` (the
block's outputs at some positions only); `BertSelfAttention.call`, `attend`
and `attend_at` likewise.

Adding a task: subclass `EncoderTask` (its docstring states the constructor
contract), define `create_heads` and `heads`, and `call_selected` where a
cheaper path than the graph exists.
"""

from bert_tf.models.bert_classifier import BertClassifier
from bert_tf.models.bert_encoder import BertEncoder
from bert_tf.models.bert_pretrainer import BertPretrainer
from bert_tf.models.bert_sentence_encoder import BertSentenceEncoder
from bert_tf.models.bert_span_labeler import BertSpanLabeler
from bert_tf.models.bert_sparse_encoder import BertSparseEncoder
from bert_tf.models.bert_token_classifier import BertTokenClassifier
from bert_tf.models.deberta_v2_encoder import DebertaV2Encoder
from bert_tf.models.electra_pretrainer import RTD_INPUTS, RTD_MODEL_TYPES, ElectraPretrainer
from bert_tf.models.encoder import ENCODER_INPUTS, Encoder, encoder_inputs
from bert_tf.models.encoders import build_encoder, encoder_class
from bert_tf.models.modernbert_encoder import ModernBertEncoder
from bert_tf.models.rotary_bert_encoder import GteEncoder, NomicBertEncoder
from bert_tf.models.task import EncoderTask

__all__ = [
    "ENCODER_INPUTS",
    "BertClassifier",
    "BertEncoder",
    "BertPretrainer",
    "BertSentenceEncoder",
    "BertSparseEncoder",
    "DebertaV2Encoder",
    "BertSpanLabeler",
    "BertTokenClassifier",
    "ElectraPretrainer",
    "Encoder",
    "EncoderTask",
    "RTD_INPUTS",
    "RTD_MODEL_TYPES",
    "ModernBertEncoder",
    "NomicBertEncoder",
    "GteEncoder",
    "build_encoder",
    "encoder_class",
    "encoder_inputs",
]
