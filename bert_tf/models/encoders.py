"""Which encoder class builds each architecture: the one place that maps `model_type` to a Keras model class.

Most of the family (BERT, RoBERTa, DistilBERT, ELECTRA, ALBERT) is one class,
`BertEncoder`, configured by `BertConfig`'s family fields. An architecture
whose computation differs enough to need its own encoder class (DeBERTa's
disentangled attention, ModernBERT's rotary
positions and sliding-window layers, NomicBERT's and GTE's rotary positions and
gated MLPs in post-norm blocks) names it in `ENCODER_CLASSES` as "module:Class",
imported on first use so that `bert_tf.models` imports no more than it needs.
Every caller that builds an encoder from a config (loading checkpoints,
pretraining, fine-tuning, the demo) goes through `build_encoder`.
"""

import importlib

# model_type -> "module:Class" of an encoder class other than BertEncoder (which builds every other model_type). Each
# is an `Encoder` (bert_tf/models/encoder.py; docs/ARCHITECTURE.md, "How to add an encoder variant"): the same
# inputs and outputs, `call_at`, `call_unpadded`, `token_embedding`, `from_bert_config` and `bert_config`.
ENCODER_CLASSES = {
    "deberta-v2": "bert_tf.models.deberta_v2_encoder:DebertaV2Encoder",
    "modernbert": "bert_tf.models.modernbert_encoder:ModernBertEncoder",
    "nomic_bert": "bert_tf.models.rotary_bert_encoder:NomicBertEncoder",
    "gte": "bert_tf.models.rotary_bert_encoder:GteEncoder",
}
DEFAULT_ENCODER_CLASS = "bert_tf.models.bert_encoder:BertEncoder"


def encoder_class(model_type):
    """The Keras model class of the encoder of `model_type` (`bert_tf.config.MODEL_TYPES`): an `Encoder`, whose
    class attributes and methods say what the rest of the code asks of the family (`takes`, `layerwise`, ...)."""
    module, attribute = ENCODER_CLASSES.get(model_type, DEFAULT_ENCODER_CLASS).split(":")
    return getattr(importlib.import_module(module), attribute)


def build_encoder(bert_config, **kwargs):
    """A new encoder of `bert_config`'s architecture; kwargs (`dtype`, `name`) pass through."""
    return encoder_class(bert_config.model_type).from_bert_config(bert_config, **kwargs)
