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

import dataclasses
import os
import sys

from absl import app, flags

from bert_tf.apps import common_flags, errors, launch
from bert_tf.apps.common_flags import check_checkpoint_dir
from bert_tf.checkpoints import CheckpointError
from bert_tf.config import ConfigError
from bert_tf.export import check_output_dir, export_litert, export_onnx, export_saved_model
from bert_tf.export import options as export_options
from bert_tf.export.options import export_config_class, saved_model_options_class

FLAGS = flags.FLAGS
# A flag for each field of ExportConfig (bert_tf.export.options: the serving options, each registered task's
# serving options, the search corpus, the quantization and the run's directories and format), with the field's help.
ExportConfig = export_config_class()
common_flags.define_config_flags(ExportConfig, sys.modules[__name__])
FORMATS, QUANTIZE = export_options.FORMATS, export_options.QUANTIZE
# The flags each format reads besides --model_dir, --output_dir and --overwrite; the rest are SavedModel options.
FORMAT_FLAGS = export_options.FORMAT_OPTIONS
SAVED_MODEL_ONLY = tuple(field.name for field in dataclasses.fields(saved_model_options_class()))


def _validate_flags():
    """Checks every flag before any side effect; raises app.UsageError naming the bad one. Returns --model_dir's
    `ModelDirectory` (read once: the export takes it as it is)."""
    directory = check_checkpoint_dir("model_dir")
    model_dir = directory.path  # a Hub id's snapshot: never written into either
    if not FLAGS.output_dir:
        raise app.UsageError("--output_dir is required. Received: --output_dir=None")
    try:
        check_output_dir(FLAGS.output_dir, FLAGS.overwrite, model_dir=model_dir, export_format=FLAGS.format)
    except FileExistsError as e:
        raise app.UsageError(f"--output_dir: {e}") from None
    if os.path.abspath(FLAGS.output_dir) == os.path.abspath(model_dir):
        raise app.UsageError(f"--output_dir must differ from --model_dir. Received: --output_dir={FLAGS.output_dir}")
    _validate_format_flags()
    if FLAGS.search_corpus is None:
        for name in ("search_text_column", "search_id_column", "search_format"):
            if FLAGS[name].value is not None:
                raise app.UsageError(f"--{name} describes --search_corpus, which is not given.")
    elif not os.path.isfile(FLAGS.search_corpus):
        raise app.UsageError(f"--search_corpus is not a file. Received: --search_corpus={FLAGS.search_corpus}")
    return directory


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
    directory = _validate_flags()
    config = common_flags.config_from_flags(ExportConfig, sys.modules[__name__], exclude=())
    config = dataclasses.replace(
        config, search_text_column=_column(config.search_text_column), search_id_column=_column(config.search_id_column)
    )
    function, report = {
        "saved_model": (export_saved_model, _report_saved_model),
        "litert": (export_litert, _report_other_format),
        "onnx": (export_onnx, _report_other_format),
    }[config.format]
    code, metadata = errors.run_command(
        "bert-tf-export",
        # The directory read once; every writer writes beside --output_dir and renames when complete. Each reads its
        # own options of the config (the flags another format does not read were refused above).
        lambda: function(directory, config.output_dir, config, overwrite=config.overwrite),
        (CheckpointError, ConfigError, ValueError, ImportError),
        kept=f"nothing written to {FLAGS.output_dir}; {FLAGS.model_dir} unchanged",
    )
    if code:
        return code
    report(metadata)
    return 0


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
