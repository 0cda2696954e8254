"""BERT models: the encoder and the task models built on it."""

from bert_tf.models.bert_classifier import BertClassifier
from bert_tf.models.bert_encoder import BertEncoder
from bert_tf.models.bert_pretrainer import BertPretrainer
from bert_tf.models.bert_span_labeler import BertSpanLabeler
from bert_tf.models.bert_token_classifier import BertTokenClassifier

__all__ = ["BertClassifier", "BertEncoder", "BertPretrainer", "BertSpanLabeler", "BertTokenClassifier"]
