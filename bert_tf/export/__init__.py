"""bert_tf.export: SavedModels that take raw strings and return answers.

    from bert_tf.export import export_saved_model
    export_saved_model("runs/conll", "serving/ner/1")  # kind from the directory's bert_tf.json

The SavedModel loads with `import tensorflow_text` then `tf.saved_model.load`
(or in TF Serving with the tensorflow-text ops); see the section "Export: a
SavedModel that takes raw strings" of README.md.
"""

from bert_tf.export.classifier_module import ClassifierModule
from bert_tf.export.embedding_module import EmbeddingModule
from bert_tf.export.encoder_module import EncoderModule
from bert_tf.export.saved_model import (
    METADATA_FILE,
    TEXT_OPS,
    check_output_dir,
    export_saved_model,
    load_task_model,
    op_names,
    save_module,
    serving_module,
)
from bert_tf.export.search_module import SearchModule
from bert_tf.export.serving_module import ServingModule
from bert_tf.export.span_module import SpanModule
from bert_tf.export.tagger_module import TaggerModule

__all__ = [
    "ClassifierModule",
    "EmbeddingModule",
    "EncoderModule",
    "METADATA_FILE",
    "SearchModule",
    "ServingModule",
    "SpanModule",
    "TEXT_OPS",
    "TaggerModule",
    "check_output_dir",
    "export_saved_model",
    "load_task_model",
    "op_names",
    "save_module",
    "serving_module",
]
