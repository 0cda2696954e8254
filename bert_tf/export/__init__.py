"""bert_tf.export: SavedModels that take raw strings and return answers.

    from bert_tf.export import export_saved_model
    export_saved_model("runs/conll", "serving/ner/1")  # kind from the directory's bert_tf.json

`export_onnx` writes the `ids` signature as an ONNX model (`bert_tf[onnx]` extra: tf2onnx, onnx,
onnxruntime) with its tokenizer files and a Hugging Face `tokenizer.json` beside it.
`export_litert` writes a LiteRT (.tflite) model of the same kinds, its WordPiece
tokenizer inside (bert_tf.export.litert).

The SavedModel loads with `import tensorflow_text` then `tf.saved_model.load`
(or in TF Serving with the tensorflow-text ops); see
docs/export-and-serving.md.

The serving modules live in `bert_tf.serving` (below `bert_tf.tasks`); their
names are importable from here as well (`from bert_tf.export import ClassifierModule`).
"""

from bert_tf.export.litert import export_litert
from bert_tf.export.onnx import export_onnx
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
from bert_tf.serving import (
    ClassifierModule,
    EmbeddingModule,
    EncoderModule,
    HybridSearchModule,
    RerankedSearchModule,
    RerankModule,
    SearchModule,
    ServingModule,
    SpanModule,
    SparseModule,
    TaggerModule,
)

__all__ = [
    "ClassifierModule",
    "EmbeddingModule",
    "EncoderModule",
    "HybridSearchModule",
    "METADATA_FILE",
    "RerankModule",
    "RerankedSearchModule",
    "SearchModule",
    "ServingModule",
    "SpanModule",
    "SparseModule",
    "TEXT_OPS",
    "TaggerModule",
    "check_output_dir",
    "export_litert",
    "export_onnx",
    "export_saved_model",
    "load_task_model",
    "op_names",
    "save_module",
    "serving_module",
]
