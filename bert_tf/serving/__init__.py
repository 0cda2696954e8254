"""bert_tf.serving: the serving modules, a tokenizer and a Keras model behind raw-string signatures.

    module = ClassifierModule(model, tokenizer, max_seq_length=128, labels=["neg", "pos"])
    module.signatures()["serving_default"](text=tf.constant(["a fine film"]))

Each module is a `tf.Module` whose `signatures()` the SavedModel writer
(`bert_tf.export`) saves. The modules sit below `bert_tf.tasks`, which names
the module of each task (`Task.serving_class`), so a task declaration and a
served model never import the writer or the training code.
"""

from bert_tf.serving.classifier_module import ClassifierModule
from bert_tf.serving.embedding_module import EmbeddingModule
from bert_tf.serving.encoder_module import EncoderModule
from bert_tf.serving.rerank_module import RerankedSearchModule, RerankModule
from bert_tf.serving.search_module import SearchModule
from bert_tf.serving.serving_module import IDS, TEXT, TEXT_PAIR, ServingModule
from bert_tf.serving.span_module import SpanModule
from bert_tf.serving.sparse_module import HybridSearchModule, SparseIndex, SparseModule
from bert_tf.serving.tagger_module import TaggerModule
from bert_tf.text.windows import LONG_TEXT, MAX_WINDOWS

__all__ = [
    "IDS",
    "LONG_TEXT",
    "MAX_WINDOWS",
    "TEXT",
    "TEXT_PAIR",
    "ClassifierModule",
    "EmbeddingModule",
    "EncoderModule",
    "RerankModule",
    "RerankedSearchModule",
    "SearchModule",
    "HybridSearchModule",
    "SparseIndex",
    "SparseModule",
    "ServingModule",
    "SpanModule",
    "TaggerModule",
]
