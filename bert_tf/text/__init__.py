"""bert_tf.text: in-graph text processing."""

from bert_tf.text.tokenizer import BertTokenizer

__all__ = ["BertTokenizer"]
