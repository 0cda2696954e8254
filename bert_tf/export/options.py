"""The export's options, each declared once: bert-tf-export's flags and the export functions' arguments.

Option groups (`bert_tf.options.option` fields):

- `bert_tf.serving.options.ServingOptions` and each task's `serving_options`
  (`bert_tf.tasks.serving_options_class()`): what a served model reads.
- `SearchCorpus`: a SavedModel's `search` corpus.
- `SentenceEmbedding`: what a SavedModel's `sentence_embedding` keeps (Matryoshka `truncate_dim`).
- `Quantization`: the LiteRT and ONNX formats' weights (and LiteRT's tokenizer).
- `ExportRun`: the directories and the format of a bert-tf-export run.

`saved_model_options_class()` is what `export_saved_model` takes (the serving
options and the search corpus); `format_options_class("litert")` and
`format_options_class("onnx")` what `export_litert` and `export_onnx` take (the
options named in `FORMAT_OPTIONS`, with their groups' declarations);
`export_config_class()` joins them all with `ExportRun`: bert-tf-export has one
flag per field (`bert_tf.apps.common_flags.define_config_flags`). Each function
also takes its options as keyword arguments
(`export_saved_model(model_dir, output_dir, max_seq_length=64)`).
"""

import dataclasses

from bert_tf import tasks
from bert_tf.data.passages import PASSAGE_FORMATS
from bert_tf.options import compose, option, override
from bert_tf.serving.corpus_index import SEARCH_QUANTIZATIONS, SEARCH_RESCORES
from bert_tf.tasks.rerank import DEFAULT_RERANK_TOP_N

FORMATS = ("saved_model", "litert", "onnx")
QUANTIZE = ("none", "float16", "dynamic_int8", "int8")  # LiteRT's; ONNX refuses "int8" (`onnx.check_quantize`)


@dataclasses.dataclass(kw_only=True)
class SearchCorpus:
    """Passages a SavedModel holds, with a `search` signature over them (an encoder, a sentence-embedding model or a
    sparse encoder; a dense one and a sparse one mixed: `search_sparse_model`)."""

    search_corpus: str = option(
        None,
        "Passages to search: embedded now and saved in the SavedModel with a `search` signature (query, k -> ids, "
        "texts, scores of the k nearest passages). A text file (one passage per line, ids = 0-based line numbers) "
        "or a TSV/CSV/JSONL file (--search_text_column, --search_id_column).",
    )
    search_text_column: object = option(  # a name, or a 0-based index
        None, "--search_corpus TSV/CSV/JSONL: the passage's column (header name / JSON key, or 0-based index)."
    )
    search_id_column: object = option(
        None, "--search_corpus TSV/CSV/JSONL: the id's column. Default: 0-based record numbers."
    )
    search_format: str = option(  # None: from the file's extension
        None,
        "--search_corpus file format. Default: from its extension (.txt, .text or none: text; .tsv, .csv, .jsonl).",
        enum=PASSAGE_FORMATS,
    )
    search_batch_size: int = option(32, "Passages per batch when embedding --search_corpus.", lower_bound=1)
    search_embeddings: str = option(  # None: --search_corpus is embedded at export
        None,
        "A bert-tf-embed output directory (float32 embeddings.npy + ids.txt, made by this model and settings): the "
        "index is built from its embeddings (read as a memory map, in chunks) instead of embedding the corpus again. "
        "With --search_corpus (same ids, same order) the texts come from it; without, the SavedModel holds ids only.",
    )
    search_quantization: str = option(
        "none",
        "The corpus index: none (float32 vectors, exact inner product), int8 (sentence-transformers' int8 codes, "
        "ranges calibrated on the corpus; 4x smaller) or binary (packed sign bits searched by Hamming distance; 32x "
        "smaller). A model that does not normalize its embeddings is refused with binary and --search_rescore=none, "
        "warned about otherwise.",
        enum=SEARCH_QUANTIZATIONS,
    )
    search_rescore: str = option(
        "none",
        "Rescore the best k x --search_rescore_multiplier candidates of a quantized index with the float query "
        "against the passages' int8 codes (binary only; kept beside the bits) or float32 vectors (kept too); none: "
        "the index's scores.",
        enum=SEARCH_RESCORES,
    )
    search_rescore_multiplier: int = option(
        4, "--search_rescore: candidates rescored per passage returned (k x this).", lower_bound=1
    )
    search_store_texts: bool = option(
        True,
        "Keep the passages' texts in the SavedModel (`search` returns them); --nosearch_store_texts keeps ids only "
        "(`texts` is then empty strings): a much smaller model for tens of millions of passages.",
    )
    search_sparse_model: str = option(  # None: the model's own search
        None,
        "Hybrid search: a sparse (SPLADE) encoder's directory (a SparseEncoder folder or its conversion) also "
        "encoding --search_corpus; `search` then ranks by (1 - w) * dense + w * sparse, each side's scores min-max "
        "normalized over the corpus per query (w: --search_hybrid_weight). The model exported is the dense one.",
    )
    search_hybrid_weight: float = option(
        0.5,
        "--search_sparse_model: w, the sparse scores' weight in the hybrid score (0: dense only, 1: sparse only).",
        lower_bound=0,
        upper_bound=1,
    )
    search_reranker: str = option(  # None: the bi-encoder's scores
        None,
        "Two-stage search: a cross-encoder's directory (a sentence-transformers CrossEncoder folder, a rerank or "
        "one-label regression model) held in the SavedModel beside --search_corpus; `search` then reranks the "
        "--search_rerank_top_n passages the exported model retrieves and returns the k best by the cross-encoder's "
        "score (its scores).",
    )
    search_rerank_top_n: int = option(
        DEFAULT_RERANK_TOP_N,
        "--search_reranker: passages retrieved and reranked per query (k beyond it returns it).",
        lower_bound=1,
    )


@dataclasses.dataclass(kw_only=True)
class SentenceEmbedding:
    """The `sentence_embedding` of an encoder or sentence-embedding SavedModel (and its search corpus)."""

    truncate_dim: int = option(  # None: the whole embedding
        None,
        "Matryoshka: sentence_embedding keeps its first N dimensions (after the model's normalization, as "
        "sentence-transformers' truncate_dim), and a --search_corpus is embedded and searched at N. Recorded in the "
        "export metadata. At most the model's embedding dimension.",
        lower_bound=1,
    )


@dataclasses.dataclass(kw_only=True)
class Quantization:
    """The weights of a LiteRT or ONNX model, and where a LiteRT model's tokenizer runs."""

    quantize: str = option(
        "none",
        "--format=litert or onnx: none (float32), float16 (float16 weights), dynamic_int8 (int8 weights, "
        "activations quantized on the fly), int8 (litert: full-integer, calibrated on --calibration_file).",
        enum=QUANTIZE,
    )
    calibration_file: str = option(
        None,
        "--quantize=int8: a text file of sentences (one per line; a tab separates a pair's texts) whose first "
        "lines calibrate the activations' ranges.",
    )
    tokenizer_inside: bool = option(
        True,
        "--format=litert: the WordPiece tokenizer inside the model (raw strings in; the runtime registers "
        "tensorflow-text's LiteRT kernels). --notokenizer_inside: an ids-in model of builtin ops only, with the "
        "tokenizer files beside it (for an interpreter without those kernels).",
    )


@dataclasses.dataclass(kw_only=True)
class ExportRun:
    """A bert-tf-export run: what it reads, where it writes, in which format."""

    model_dir: str = option(
        help="Model directory to export: bert_tf (pretrained, fine-tuned or converted), Hugging Face directory of "
        "any supported family, or TF1 checkpoint directory, with its tokenizer files."
    )
    output_dir: str = option(
        help="SavedModel directory to write (for TF Serving: MODEL/VERSION, e.g. serving/sst2/1); must be absent or "
        "empty unless --overwrite."
    )
    overwrite: bool = option(
        False,
        "Replace a previous export of this --format in --output_dir (never the model directory, a directory holding it, or files the export did not write).",
    )
    format: str = option(
        "saved_model",
        "saved_model: a TensorFlow SavedModel taking raw strings (every signature and option). litert: a .tflite "
        "model for LiteRT (phones, browsers, the ai-edge-litert interpreter) with the WordPiece tokenizer inside, "
        "ids in for other tokenizers (pip install bert_tf[litert] to run it here). onnx: an ids-in model.onnx for "
        "ONNX Runtime, OpenVINO or Optimum with tokenizer.json beside it (pip install bert_tf[onnx]).",
        enum=FORMATS,
    )


# The options `export_litert` and `export_onnx` read (besides the directories and `overwrite`); the other serving
# and search options are the SavedModel's alone.
FORMAT_OPTIONS = {
    "litert": (
        "encoder_only",
        "max_seq_length",
        "quantize",
        "calibration_file",
        "text_pair",
        "max_query_length",
        "max_answer_length",
        "tokenizer_inside",
    ),
    "onnx": ("encoder_only", "max_seq_length", "quantize", "calibration_file"),
}


def saved_model_options_class(task_list=None):
    """The options `export_saved_model` takes: the serving options of `task_list` (default: the registered tasks;
    `tasks.serving_options_class`) and the search corpus. The same tasks give the same class."""
    return compose(
        "SavedModelOptions",
        (SearchCorpus, SentenceEmbedding, tasks.serving_options_class(task_list)),
        module=__name__,
        doc="The options of a SavedModel export: the serving options and the search corpus.",
    )


def format_options_class(export_format, task_list=None):
    """The options `export_litert` ("litert") or `export_onnx` ("onnx") takes: the fields `FORMAT_OPTIONS` names,
    each as its group declares it. A name no group of the registered tasks declares (squad's, when squad is not
    registered) is left out."""
    groups = (Quantization, saved_model_options_class(task_list))
    declared = {field.name: group for group in groups for field in dataclasses.fields(group)}
    names = [name for name in FORMAT_OPTIONS[export_format] if name in declared]
    key = (export_format, tuple(names), groups)
    if key not in _FORMAT_CLASSES:
        fields = [(name, _type_of(declared[name], name), override(declared[name], name)) for name in names]
        name = "LiteRTOptions" if export_format == "litert" else "OnnxOptions"
        _FORMAT_CLASSES[key] = dataclasses.make_dataclass(
            name, fields, kw_only=True, namespace={"__module__": __name__}
        )
    return _FORMAT_CLASSES[key]


_FORMAT_CLASSES = {}


def _type_of(group, name):
    return next(field.type for field in dataclasses.fields(group) if field.name == name)


def export_config_class(task_list=None):
    """bert-tf-export's config: `ExportRun`, `Quantization` and the SavedModel's options (of `task_list`, default
    the registered tasks); one flag per field."""
    return compose(
        "ExportConfig",
        (ExportRun, Quantization, saved_model_options_class(task_list)),
        module=__name__,
        doc="A bert-tf-export run: one field per flag, of the same name and default.",
    )
