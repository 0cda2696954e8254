"""bert_tf: the whole BERT life cycle on TensorFlow / Keras 3."""

from bert_tf.config import BertConfig

__version__ = "0.1.0"
__all__ = ["BertConfig"]
