"""bert-tf-export: export a model directory as a SavedModel that takes raw strings (or a LiteRT or ONNX model).

    bert-tf-export --model_dir=runs/sst2 --output_dir=serving/sst2/1
    bert-tf-export --model_dir=runs/sst2 --output_dir=edge/sst2 --format=litert --quantize=dynamic_int8
    bert-tf-export --model_dir=runs/sst2 --output_dir=onnx/sst2 --format=onnx --quantize=dynamic_int8

The kind comes from the directory: a fine-tuned one (`task` in bert_tf.json)
answers its task (classification, regression, ner, squad); a pretrained or
converted one gives embeddings, plus a `fill_mask` signature when the
checkpoint has the masked-LM head; --search_corpus adds a corpus and a
`search` signature (query, k -> the k nearest passages). The SavedModel loads with only tensorflow
and tensorflow_text installed (`import tensorflow_text` before
`tf.saved_model.load`) and serves in TF Serving. `--format=litert` writes a `.tflite` model with
the WordPiece tokenizer inside (an ids-in model plus the tokenizer files for the other
tokenizers), `--format=onnx` an ids-in ONNX model with a Hugging Face `tokenizer.json` beside
it; `--quantize` shrinks either.
"""

import os
import sys

from absl import app, flags

from bert_tf.apps import errors, launch
from bert_tf.apps.common_flags import check_checkpoint_dir
from bert_tf.checkpoints import CheckpointError, ModelDirectory
from bert_tf.config import ConfigError
from bert_tf.data.passages import PASSAGE_FORMATS
from bert_tf.export import check_output_dir, export_litert, export_onnx, export_saved_model
from bert_tf.serving import LONG_TEXT, MAX_WINDOWS

FLAGS = flags.FLAGS

# allow_override on model_dir, max_seq_length and the squad window flags: pretrain and finetune define these names
# with their own help or default (a process importing several apps keeps the last definition; each bert-tf-*
# command imports only its own app).
flags.DEFINE_string(
    "model_dir",
    None,
    "Model directory to export: bert_tf (pretrained, fine-tuned or converted), "
    "Hugging Face directory of any supported family, or TF1 checkpoint directory, with its tokenizer files.",
    allow_override=True,
)
flags.DEFINE_string(
    "output_dir",
    None,
    "SavedModel directory to write (for TF Serving: MODEL/VERSION, e.g. "
    "serving/sst2/1); must be absent or empty unless --overwrite.",
)
flags.DEFINE_bool(
    "overwrite", False, "Replace a non-empty --output_dir.", allow_override=True
)  # bert-tf-convert has the same flag; tests import both apps
flags.DEFINE_bool("encoder_only", False, "Export the encoder (embeddings) even from a fine-tuned directory.")
flags.DEFINE_bool(
    "text_pair",
    False,
    "Classification/regression: serving_default takes text and text_pair (a "
    "pair task such as MNLI); the `single` and `pair` signatures exist either way.",
)
flags.DEFINE_integer("top_k", 5, "fill_mask: candidates per [MASK].", lower_bound=1)
flags.DEFINE_integer(
    "max_seq_length",
    None,
    "Tokens per input (per window for ner/squad). Default: the directory's max_seq_length.",
    lower_bound=3,
    allow_override=True,
)
flags.DEFINE_integer(
    "max_input_bytes",
    None,
    "Bytes kept of each input string before tokenizing. Default: 100 per token of max_seq_length.",
    lower_bound=1,
)
flags.DEFINE_integer(
    "doc_stride",
    None,
    "squad: context pieces between window starts (default: the fine-tuning's, else 128).",
    lower_bound=1,
    allow_override=True,
)
flags.DEFINE_integer(
    "max_query_length",
    None,
    "squad: question pieces kept (default: the fine-tuning's, else 64).",
    lower_bound=1,
    allow_override=True,
)
flags.DEFINE_integer(
    "max_answer_length",
    None,
    "squad: longest answer, in pieces (default: the fine-tuning's, else 30).",
    lower_bound=1,
    allow_override=True,
)
flags.DEFINE_string(
    "search_corpus",
    None,
    "Passages to search: embedded now and saved in the SavedModel with a `search` signature (query, k -> ids, "
    "texts, scores of the k nearest passages). A text file (one passage per line, ids = 0-based line numbers) "
    "or a TSV/CSV/JSONL file (--search_text_column, --search_id_column).",
)
flags.DEFINE_string(
    "search_text_column",
    None,
    "--search_corpus TSV/CSV/JSONL: the passage's column (header name / JSON key, or 0-based index).",
)
flags.DEFINE_string(
    "search_id_column",
    None,
    "--search_corpus TSV/CSV/JSONL: the id's column. Default: 0-based record numbers.",
)
flags.DEFINE_enum(
    "search_format",
    None,
    list(PASSAGE_FORMATS),
    "--search_corpus file format. Default: from its extension (.txt, .text or none: text; .tsv, .csv, .jsonl).",
)
flags.DEFINE_enum(
    "long_text",
    None,
    list(LONG_TEXT),
    "Classification, regression and embeddings: what the one-text signatures do with a text longer than "
    "max_seq_length: truncate it, or cut it into overlapping windows (--window_stride) whose logits or "
    "embeddings are averaged in the SavedModel. Default: the directory's choice (fine-tuning records it), else "
    "truncate.",
    allow_override=True,
)
flags.DEFINE_integer(
    "window_stride",
    None,
    "--long_text=windows: pieces between window starts, less than --max_seq_length. Default: the directory's, "
    "else half a window.",
    lower_bound=1,
    allow_override=True,
)
flags.DEFINE_integer("max_windows", MAX_WINDOWS, "--long_text=windows: windows of one text at most.", lower_bound=1)
flags.DEFINE_integer("search_batch_size", 32, "Passages per batch when embedding --search_corpus.", lower_bound=1)
FORMATS = ("saved_model", "litert", "onnx")
QUANTIZE = ("none", "float16", "dynamic_int8", "int8")
flags.DEFINE_enum(
    "format",
    "saved_model",
    list(FORMATS),
    "saved_model: a TensorFlow SavedModel taking raw strings (every signature and option). litert: a .tflite "
    "model for LiteRT (phones, browsers, the ai-edge-litert interpreter) with the WordPiece tokenizer inside, "
    "ids in for other tokenizers (pip install bert_tf[litert] to run it here). onnx: an ids-in model.onnx for "
    "ONNX Runtime, OpenVINO or Optimum with tokenizer.json beside it (pip install bert_tf[onnx]).",
)
flags.DEFINE_enum(
    "quantize",
    "none",
    list(QUANTIZE),
    "--format=litert or onnx: none (float32), float16 (float16 weights), dynamic_int8 (int8 weights, "
    "activations quantized on the fly), int8 (litert: full-integer, calibrated on --calibration_file).",
)
flags.DEFINE_string(
    "calibration_file",
    None,
    "--quantize=int8: a text file of sentences (one per line; a tab separates a pair's texts) whose first "
    "lines calibrate the activations' ranges.",
)
flags.DEFINE_bool(
    "tokenizer_inside",
    True,
    "--format=litert: the WordPiece tokenizer inside the model (raw strings in; the runtime registers "
    "tensorflow-text's LiteRT kernels). --notokenizer_inside: an ids-in model of builtin ops only, with the "
    "tokenizer files beside it (for an interpreter without those kernels).",
)
# The flags each format reads besides --model_dir, --output_dir and --overwrite; the rest are SavedModel options.
FORMAT_FLAGS = {
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
SAVED_MODEL_ONLY = (
    "text_pair",
    "top_k",
    "max_input_bytes",
    "doc_stride",
    "max_query_length",
    "max_answer_length",
    "search_corpus",
    "search_text_column",
    "search_id_column",
    "search_format",
    "long_text",
    "window_stride",
    "max_windows",
    "search_batch_size",
)


def _validate_flags():
    """Checks every flag before any side effect; raises app.UsageError naming the bad one."""
    check_checkpoint_dir("model_dir")
    if not FLAGS.output_dir:
        raise app.UsageError("--output_dir is required. Received: --output_dir=None")
    try:
        check_output_dir(FLAGS.output_dir, FLAGS.overwrite, model_dir=FLAGS.model_dir, export_format=FLAGS.format)
    except FileExistsError as e:
        raise app.UsageError(f"--output_dir: {e}") from None
    if os.path.abspath(FLAGS.output_dir) == os.path.abspath(FLAGS.model_dir):
        raise app.UsageError(f"--output_dir must differ from --model_dir. Received: --output_dir={FLAGS.output_dir}")
    _validate_format_flags()
    if FLAGS.search_corpus is None:
        for name in ("search_text_column", "search_id_column", "search_format"):
            if FLAGS[name].value is not None:
                raise app.UsageError(f"--{name} describes --search_corpus, which is not given.")
    elif not os.path.isfile(FLAGS.search_corpus):
        raise app.UsageError(f"--search_corpus is not a file. Received: --search_corpus={FLAGS.search_corpus}")


def _validate_format_flags():
    """--format, --quantize and --calibration_file, and the SavedModel options another format does not read."""
    if FLAGS.format != "litert" and FLAGS["tokenizer_inside"].present:
        raise app.UsageError(f"--tokenizer_inside applies to --format=litert. Received: --format={FLAGS.format}")
    if FLAGS.format == "saved_model":
        for name in ("quantize", "calibration_file"):
            if FLAGS[name].present:
                raise app.UsageError(
                    f"--{name} applies to --format=litert or onnx; a SavedModel is exported in float32. "
                    f"Received: --{name}={FLAGS[name].value}"
                )
        return
    reads = FORMAT_FLAGS[FLAGS.format]
    ignored = [name for name in SAVED_MODEL_ONLY if FLAGS[name].present and name not in reads]
    if ignored:
        raise app.UsageError(
            f"--format={FLAGS.format} does not read {', '.join('--' + name for name in ignored)} (SavedModel "
            "options); leave them out or use --format=saved_model."
        )
    if FLAGS.quantize == "int8" and not FLAGS.calibration_file:
        raise app.UsageError(
            "--quantize=int8 needs --calibration_file (a text file of sentences, one per line) to calibrate the "
            "activations; --quantize=dynamic_int8 needs none."
        )
    if FLAGS.calibration_file and FLAGS.quantize != "int8":
        raise app.UsageError(
            f"--calibration_file is read by --quantize=int8 only. Received: --quantize={FLAGS.quantize}"
        )
    if FLAGS.calibration_file and not os.path.isfile(FLAGS.calibration_file):
        raise app.UsageError(f"--calibration_file is not a file. Received: --calibration_file={FLAGS.calibration_file}")


def _column(value):
    """A column flag: a digit string is a 0-based index (header-less TSV/CSV), anything else a name."""
    return int(value) if value is not None and value.isdigit() else value


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected positional arguments. Received: {argv[1:]}")
    _validate_flags()
    if FLAGS.format == "saved_model":
        function, arguments, report = export_saved_model, _saved_model_arguments(), _report_saved_model
    else:
        function = export_litert if FLAGS.format == "litert" else export_onnx
        arguments, report = {name: FLAGS[name].value for name in FORMAT_FLAGS[FLAGS.format]}, _report_other_format
    try:
        # The directory read once; every writer writes beside --output_dir and renames when complete.
        metadata = function(
            ModelDirectory.read(FLAGS.model_dir), FLAGS.output_dir, overwrite=FLAGS.overwrite, **arguments
        )
    except (CheckpointError, ConfigError, ValueError, ImportError) as e:
        print(f"bert-tf-export: error: {e}", file=sys.stderr)
        return 1
    except errors.STORAGE_ERRORS as e:  # a read-only, full or missing disk
        kept = f"nothing written to {FLAGS.output_dir}; {FLAGS.model_dir} unchanged"
        print(errors.storage_error("bert-tf-export", e, kept), file=sys.stderr)
        return 1
    report(metadata)
    return 0


def _saved_model_arguments():
    """`export_saved_model`'s keyword arguments from the flags (all but the directories and --overwrite)."""
    return {
        "encoder_only": FLAGS.encoder_only,
        "text_pair": FLAGS.text_pair,
        "top_k": FLAGS.top_k,
        "max_seq_length": FLAGS.max_seq_length,
        "max_input_bytes": FLAGS.max_input_bytes,
        "doc_stride": FLAGS.doc_stride,
        "max_query_length": FLAGS.max_query_length,
        "max_answer_length": FLAGS.max_answer_length,
        "search_corpus": FLAGS.search_corpus,
        "search_text_column": _column(FLAGS.search_text_column),
        "search_id_column": _column(FLAGS.search_id_column),
        "search_format": FLAGS.search_format,
        "search_batch_size": FLAGS.search_batch_size,
        "long_text": FLAGS.long_text,
        "window_stride": FLAGS.window_stride,
        "max_windows": FLAGS.max_windows,
    }


def _report_saved_model(metadata):
    print(
        f"Exported {metadata['kind']} model {FLAGS.model_dir} to {FLAGS.output_dir} "
        f"(max_seq_length {metadata['max_seq_length']}); signatures:"
    )
    for name, spec in metadata["signatures"].items():
        print(f"  {name}: {', '.join(spec['inputs'])} -> {', '.join(spec['outputs'])}")
    if "search" in metadata:
        print(f"Search corpus: {metadata['search']['corpus_size']} passages from {FLAGS.search_corpus}")


def _report_other_format(metadata):
    """--format=litert or onnx: what was written."""
    print(
        f"Exported {metadata['kind']} model {FLAGS.model_dir} to {FLAGS.output_dir} as {FLAGS.format} "
        f"(quantize {FLAGS.quantize}, max_seq_length {metadata['max_seq_length']})"
    )
    for key in ("inputs", "outputs"):
        if key in metadata:
            print(f"  {key}: {', '.join(_names(metadata[key]))}")
    if metadata.get("message"):
        print(metadata["message"])


def _names(entries):
    """The names of a metadata `inputs`/`outputs` entry (a list of names, or of dicts with a `name`, or a dict)."""
    if isinstance(entries, dict):
        return list(entries)
    return [entry["name"] if isinstance(entry, dict) else str(entry) for entry in entries]


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
