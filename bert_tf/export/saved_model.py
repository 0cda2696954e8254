"""Exporting a model directory as a SavedModel that takes raw strings.

    from bert_tf.export import export_saved_model
    export_saved_model("runs/sst2", "serving/sst2/1")

The kind of model comes from the directory: `task` in `bert_tf.json` (a task
registered in `bert_tf.tasks`: classification, regression, ner, squad, ...)
or, without one, the encoder (plus a `fill_mask` signature when the
checkpoint holds the masked-LM head, a `replaced_token_scores` signature when it
holds ELECTRA's discriminator head, and a `search` signature over a corpus
given as `search_corpus`). The task declares the model and its
serving module. The SavedModel needs only `tensorflow` and `tensorflow_text`
to load; its vocabulary is an asset; `assets.extra/bert_tf_export.json`
records the kind, the label names and every signature's inputs and outputs.
"""

import contextlib
import dataclasses
import json
import logging
import os
import re
import shutil
import tempfile

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from bert_tf import checkpoints, tasks
from bert_tf.checkpoints import SETTINGS_FILE, CheckpointError, hub
from bert_tf.config import ConfigError
from bert_tf.embeddings.prompts import check_truncate_dim
from bert_tf.export.options import saved_model_options_class
from bert_tf.export.search_inputs import search_inputs
from bert_tf.models import BertPretrainer
from bert_tf.serving import EncoderModule, HybridSearchModule, RerankedSearchModule, SearchModule
from bert_tf.serving.options import options_of
from bert_tf.tasks.loading import hf_architecture, task_settings
from bert_tf.tasks.rerank import search_reranker
from bert_tf.text.windows import check_long_text

METADATA_FILE = "bert_tf_export.json"  # In the SavedModel's assets.extra/.
# Ops of the exported SavedModels that core TensorFlow lacks: a serving binary must have them registered
# (tensorflow_text's kernels). `op_names` lists every op of a SavedModel; these are those a process without
# tensorflow_text does not know (tests/export/export_test.py checks it on every kind).
TEXT_OPS = (
    "FastBertNormalize",
    "FastWordpieceTokenizeWithOffsets",
    "NormalizeUTF8",
    "RegexSplitWithOffsets",
    "TFText>RoundRobinTrim",
)

logger = logging.getLogger(__name__)


def _task_of(path, settings):
    """The registered task named by `settings["task"]`; ConfigError naming the file otherwise."""
    name = settings.get("task")
    try:
        return tasks.get(name)
    except ValueError:
        raise ConfigError(
            f"{path}: `task` in {SETTINGS_FILE} must be one of {tasks.names()} for a task model. "
            f"Received: task={name!r}"
        ) from None


def load_task_model(path, dtype=None):
    """The fine-tuned task model of a model directory, with its settings.

    The task (`settings["task"]` of `bert_tf.json`, looked up in
    `bert_tf.tasks`) builds the model (`Task.build_model`: classification ->
    `BertClassifier` with one class per label name, regression ->
    `BertClassifier` with one output, ner -> `BertTokenClassifier`, squad ->
    `BertSpanLabeler`). Encoder and head weights come from the checkpoint.

    Args:
        path: a model directory written by fine-tuning (`save_model_dir` with
            `settings={"task": ..., "labels": ...}`).
        dtype: the encoder's dtype policy.

    Returns:
        `(model, settings)`.
    """
    path = checkpoints.ModelDirectory.read(path)  # a path, or the ModelDirectory `serving_module` read
    settings = task_settings(path)  # a Hugging Face task architecture's task and labels too
    task, labels = _task_of(path, settings), settings["labels"]
    if task.needs_labels and not labels:
        raise ConfigError(
            f"{path}: a {task.name} model needs its label names (`labels` in "
            f"{SETTINGS_FILE}). Received: labels={labels!r}"
        )
    model, _ = tasks.load_model(path, dtype=dtype)  # the task model of `settings` (checked above)
    return model, settings


def serving_module(model_dir, options=None, passages=None, corpus_embeddings=None, **kwargs):
    """The serving module (a `tf.Module`) of the model at `model_dir`; see `export_saved_model` for the options.

    `options`: a `bert_tf.export.options.saved_model_options_class()` instance, or any object with fields of
    those names (a bert-tf-export config); keyword arguments (`max_seq_length=64`) replace its fields. The search
    corpus options are not read here: `passages` (a `bert_tf.data.Passages`) makes it a `SearchModule` over them,
    on the directory's encoder and pooling: an encoder, a sentence-embedding model (a task served by an
    `EncoderModule`, e.g. "embedding"), or, with `encoder_only`, the encoder of another fine-tuned model.
    `corpus_embeddings`: the passages' float `[N, D]` embeddings computed beforehand (`search_embeddings`: an array
    or memory map); `passages.texts` may then be None (ids only).
    """
    options = options_of(saved_model_options_class(), options, kwargs, "serving_module")
    encoder_only, max_seq_length, long_text, window_stride = (
        options.encoder_only,
        options.max_seq_length,
        options.long_text,
        options.window_stride,
    )
    model_dir = checkpoints.ModelDirectory.read(model_dir)  # read once: config, settings, tokenizer, weights' loaders
    config = model_dir.config
    settings = task_settings(model_dir)  # a Hugging Face `...ForSequenceClassification` is served with its head
    model_dir.check_tokenizer()  # the SavedModel needs the tokenizer: an error naming the files looked for
    serving_class = None if settings.get("task") is None else _task_of(model_dir, settings).serving_class
    # A task module that holds a corpus itself (`add_corpus`: the sparse encoder's) searches with its own model.
    own_search = passages is not None and not encoder_only and hasattr(serving_class, "add_corpus")
    embeds = serving_class is None or issubclass(serving_class, EncoderModule) or own_search
    sparse_model = getattr(options, "search_sparse_model", None)
    weight = getattr(options, "search_hybrid_weight", 0.5)
    if sparse_model is not None and (
        isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1
    ):
        raise ConfigError(
            "search_hybrid_weight (the sparse scores' weight) must be in [0, 1]. "
            f"Received: search_hybrid_weight={weight!r}"
        )
    if sparse_model is not None and (passages is None or own_search):
        raise ConfigError(
            f"search_sparse_model mixes a sparse encoder's search into a dense model's: it needs a search corpus "
            f"(search_corpus) and a dense model. Received: search_sparse_model={sparse_model!r}, "
            f"search_corpus={'given' if passages is not None else None}, model_dir={model_dir}"
        )
    if passages is not None and not (embeds or encoder_only):
        raise ConfigError(
            f"{model_dir}: a search corpus needs the encoder, and this directory holds a fine-tuned "
            f"{settings['task']} model; pass encoder_only=True (--encoder_only) to search with its encoder."
        )
    max_seq_length = max_seq_length or settings["max_seq_length"]
    if not 3 <= max_seq_length <= config.max_position_embeddings:
        raise ConfigError(
            f"The sequence length must be in [3, {config.max_position_embeddings}] (the model's "
            f"positions). Received: max_seq_length={max_seq_length}"
        )

    def tokenizer(**kwargs):
        return model_dir.build_tokenizer(settings, **kwargs)

    if long_text is None:  # the directory's choice (fine-tuning records it), else truncation
        long_text, window_stride = settings.get("long_text", "truncate"), window_stride or settings.get("window_stride")
    windows = dict(long_text=long_text, window_stride=window_stride, max_windows=options.max_windows)
    check_long_text(**windows, max_seq_length=max_seq_length)  # before any weight is read
    common = dict(max_input_bytes=options.max_input_bytes, **windows)
    embedding = dict(
        pooling=settings["pooling"], normalize=settings["normalize"], **_embedding_options(options, settings)
    )
    if options.truncate_dim is not None:  # before any weight is read
        if not (embeds or encoder_only):
            raise ConfigError(
                f"{model_dir}: truncate_dim cuts a sentence embedding, and this directory holds a fine-tuned "
                f"{settings['task']} model; pass encoder_only=True (--encoder_only) to export its encoder's. "
                f"Received: truncate_dim={options.truncate_dim}"
            )
        check_truncate_dim(options.truncate_dim, config.hidden_size * len(settings["pooling"]))
    if encoder_only or settings.get("task") is None or (passages is not None and not own_search):
        if passages is None:
            module_class, corpus = EncoderModule, {}
        else:
            module_class = SearchModule
            corpus = dict(
                passage_ids=passages.ids,
                passage_texts=passages.texts,
                store_texts=options.search_store_texts,
                embeddings=corpus_embeddings,
                batch_size=options.search_batch_size,
                quantization=options.search_quantization,
                rescore=options.search_rescore,
                rescore_multiplier=options.search_rescore_multiplier,
            )
        if sparse_model is not None:  # hybrid: the sparse encoder's module beside the dense search
            sparse = serving_module(sparse_model, max_active_dims=getattr(options, "max_active_dims", None))
            if not hasattr(sparse, "add_corpus"):
                raise ConfigError(
                    f"search_sparse_model must be a sparse encoder (a SparseEncoder folder or its conversion). "
                    f"Received: search_sparse_model={sparse_model!r}, a {kind_of(sparse)} model"
                )
            module_class = HybridSearchModule
            corpus.update(sparse=sparse, hybrid_weight=options.search_hybrid_weight)
        # What the directory holds, as `tasks.load_model` decides it for every reader: ELECTRA's discriminator
        # (replaced_token_scores), a pretrainer with its masked-LM head (fill_mask), a task model (its encoder is
        # served here) or the encoder.
        model, _ = tasks.load_model(model_dir)
        if getattr(model, "discriminator_head", None) is not None:
            heads = dict(discriminator_head=model.discriminator_head)
        elif isinstance(model, BertPretrainer):
            heads = dict(pretrainer=model, mask_tokenizer=tokenizer(split_special_tokens=False), top_k=options.top_k)
        else:
            heads = {}
            architecture = hf_architecture(model_dir)
            if architecture not in ("", config.family.hf_class_prefix + "Model"):  # a head left out: one line
                why = (
                    "encoder_only leaves its task head out"
                    if settings.get("task")
                    else "bert_tf does not read its head"
                )
                logger.warning("%s holds a %s; %s: exporting the encoder.", model_dir, architecture, why)
        encoder = getattr(model, "encoder", model)
        return module_class(encoder, tokenizer(), max_seq_length, **heads, **corpus, **embedding, **common)
    model, settings = load_task_model(model_dir)
    task = tasks.get(settings["task"])  # Known: load_task_model checked it.
    # The task's own options (squad's windows): as given, else as fine-tuning read the data (recorded), else the
    # task's training default (`Task.served_with`).
    options = task.served_with(dataclasses.replace(options, max_seq_length=max_seq_length, **windows), settings)
    labels = settings["labels"] if task.needs_labels else None
    module = task.serving_module(model, tokenizer(), max_seq_length, labels, options)
    if own_search:
        module.add_corpus(passages.ids, passages.texts, batch_size=options.search_batch_size)
    return module


def _embedding_options(options, settings):
    """The `EncoderModule` arguments of the sentence embedding besides its pooling: `truncate_dim` (the option)
    and the directory's prompts (`bert_tf.embeddings.prompts`)."""
    return dict(
        truncate_dim=options.truncate_dim,
        prompts=settings.get("prompts"),
        default_prompt_name=settings.get("default_prompt_name"),
        include_prompt=settings.get("include_prompt", True),
    )


def kind_of(module):
    """The export metadata's `kind`: the name of the task the module serves (`bert_tf.tasks.for_module`),
    or "encoder"."""
    task = tasks.for_module(module)
    return "encoder" if task is None else task.name


def input_names(function):
    """The input names of a concrete function (a bound method's or a loaded signature's), in order."""
    args, kwargs = function.structured_input_signature
    return [spec.name for spec in args] + sorted(kwargs)


# What each export writes in its output directory: the metadata file that marks a previous export of the kind, and
# the top-level entries it writes (an ONNX export also the tokenizer files its metadata lists). `--overwrite`
# replaces only such a directory (`check_output_dir`).
EXPORT_OUTPUTS = {
    "saved_model": (
        os.path.join("assets.extra", METADATA_FILE),
        ("saved_model.pb", "fingerprint.pb", "variables", "assets", "assets.extra"),
        "SavedModel",
    ),
    "litert": ("bert_tf_litert.json", ("model.tflite", "bert_tf_litert.json", "tokenizer"), "LiteRT"),
    "onnx": ("bert_tf_onnx.json", ("model.onnx", "bert_tf_onnx.json", "tokenizer.json"), "ONNX"),
}
STAGING_MARK = ".partial-"  # `staged_output`'s folders beside the output: NAME.partial-PID-RANDOM


def _real_dir(path):
    """The real path of a directory, or of the directory holding a checkpoint prefix (`model.ckpt-N`); of a Hugging
    Face Hub id, its snapshot in huggingface_hub's cache (`checkpoints.hub.resolve_model_path`)."""
    try:
        path = hub.resolve_model_path(path)  # a local path (or a ModelDirectory's) as it is
    except CheckpointError:
        path = os.fspath(path)  # an id neither local nor in the cache: reading the model says so
    path = os.path.realpath(path)
    return path if os.path.isdir(path) or not os.path.exists(path + ".index") else os.path.dirname(path)


def _foreign_entries(output_dir, export_format):
    """The entries of `output_dir` (a previous export of `export_format`, its metadata file present) that such an
    export does not write, as relative paths."""
    metadata_file, written, _ = EXPORT_OUTPUTS[export_format]
    written = set(written)
    if export_format == "onnx":  # the tokenizer files its metadata lists
        try:
            with open(os.path.join(output_dir, metadata_file), encoding="utf-8") as f:
                written.update((json.load(f).get("tokenizer") or {}).get("files") or ())
        except (OSError, ValueError, AttributeError):
            pass
    foreign = sorted(name for name in os.listdir(output_dir) if name not in written)
    if export_format == "saved_model":  # assets.extra holds the metadata alone (a warm-up file is the user's)
        extra = os.path.join(output_dir, "assets.extra")
        if os.path.isdir(extra):
            foreign += [os.path.join("assets.extra", n) for n in sorted(os.listdir(extra)) if n != METADATA_FILE]
    return foreign


def check_output_dir(output_dir, overwrite=False, model_dir=None, export_format="saved_model"):
    """Raises `FileExistsError` (one line naming the paths) unless `output_dir` may be written.

    It may when absent or empty; with `overwrite`, also when it is a previous export of `export_format`
    ("saved_model", "litert" or "onnx": its metadata file, `EXPORT_OUTPUTS`) holding only what such an export
    writes. Never when it is or holds `model_dir` (the model being exported), whatever `overwrite` says:
    replacing it would delete the model.
    """
    if not os.path.exists(output_dir):
        return
    if not os.path.isdir(output_dir):
        raise FileExistsError(f"The output path exists and is not a directory. Received: output_dir={output_dir}")
    if model_dir is not None:
        output, model = os.path.realpath(output_dir), _real_dir(model_dir)
        if output == model or model.startswith(output.rstrip(os.sep) + os.sep):
            what = "is" if output == model else "holds"
            raise FileExistsError(
                f"The output directory {what} the model directory: writing there would delete the model "
                f"(--overwrite replaces only a previous export); choose another output directory. Received: "
                f"output_dir={output_dir}, model_dir={model_dir}"
            )
    if not os.listdir(output_dir):
        return
    if not overwrite:
        raise FileExistsError(
            f"The output directory is not empty (pass overwrite=True to replace it). Received: output_dir={output_dir}"
        )
    metadata_file, _, name = EXPORT_OUTPUTS[export_format]
    source = "" if model_dir is None else f", model_dir={model_dir}"
    if not os.path.isfile(os.path.join(output_dir, metadata_file)):
        raise FileExistsError(
            f"The output directory is not a previous {name} export (it has no {metadata_file}), and overwrite "
            f"replaces only one; nothing was deleted. Received: output_dir={output_dir}{source}"
        )
    foreign = _foreign_entries(output_dir, export_format)
    if foreign:
        raise FileExistsError(
            f"The output directory holds files a {name} export does not write ({', '.join(foreign[:5])}"
            f"{', ...' if len(foreign) > 5 else ''}), which overwrite would delete; move them or choose another "
            f"output directory. Received: output_dir={output_dir}{source}"
        )


def export_saved_model(model_dir, output_dir, options=None, overwrite=False, **kwargs):
    """Exports the model at `model_dir` as a SavedModel taking raw strings.

    Its options are the fields of `bert_tf.export.options.saved_model_options_class()` (declared by
    `bert_tf.serving.options`, each task's `serving_options` and `bert_tf.export.options.SearchCorpus`): pass an
    instance (or any object with fields of those names, e.g. a bert-tf-export config) as `options`, or each as a
    keyword argument (`export_saved_model(model_dir, output_dir, max_seq_length=64)`), which replaces the field.

    Args:
        model_dir: a bert_tf model directory (pretrained, fine-tuned or
            converted), a Hugging Face BERT directory or a TF1 checkpoint
            directory with `vocab.txt`.
        output_dir: the SavedModel directory to write (absent or empty, or
            replaced with `overwrite`). It is written beside it first and
            renamed when complete.
        options: the options below, as one object (None: their defaults).
        encoder_only: export the encoder (embeddings) even from a fine-tuned
            directory.
        text_pair: classification/regression: `serving_default` takes `text`
            and `text_pair` (a pair task); the `single` and `pair`
            signatures are there either way.
        top_k: candidates per `[MASK]` of `fill_mask`.
        max_seq_length: tokens per input (per window for ner/squad);
            default: the directory's `max_seq_length`.
        max_input_bytes: each input string is cut to this many bytes first;
            default 100 per token of `max_seq_length`.
        doc_stride, max_query_length, max_answer_length: squad windows and
            answers (in word pieces; `bert_tf.tasks.squad.SquadServing`);
            default: the directory's (as fine-tuning read them), else
            `SquadOptions`' defaults.
        search_corpus: a corpus file (`bert_tf.data.read_passages`: a text
            file with one passage per line, ids its 0-based line numbers, or a
            TSV/CSV/JSONL file) to embed now and hold in the SavedModel, with a
            `search` signature (`bert_tf.export.SearchModule`): `query`
            `[B]`, `k` -> the k nearest passages' `ids`, `texts`, `scores`.
            The corpus is read, and refused with read_passages' errors,
            before anything is written.
        search_text_column, search_id_column: the corpus's text and id
            columns (TSV/CSV/JSONL; default ids: 0-based record numbers).
        search_format: "text", "tsv", "csv" or "jsonl"; default: from the
            corpus file's extension (`.txt`, `.text` or none: text).
        search_batch_size: passages per batch when embedding the corpus.
        search_embeddings: a bert-tf-embed output directory (float32
            `embeddings.npy`, same model and settings) to build the index
            from instead of embedding the corpus (`bert_tf.export.search_inputs`);
            without `search_corpus`, ids only.
        search_quantization, search_rescore, search_rescore_multiplier: the
            index (`bert_tf.serving.corpus_index.CorpusIndex`): "none"
            (float32, exact), "int8" or "binary"; rescore "none", "int8"
            (binary) or "float32"; candidates rescored per passage returned.
        search_store_texts: keep the passages' texts (False: `search`
            returns empty strings as `texts`).
        search_reranker, search_rerank_top_n: two-stage search
            (`bert_tf.serving.RerankedSearchModule`): a cross-encoder's
            directory (`bert_tf.tasks.rerank.load_reranker`) held in the
            SavedModel; `search` reranks the `search_rerank_top_n` passages
            the model retrieves and returns the k best by its scores.
        long_text: "truncate" or "windows": what the one-text signatures of a
            classifier, a regression model or an encoder (embeddings) do with a
            text longer than `max_seq_length` (see
            `bert_tf.serving.ServingModule`); default: the directory's
            `long_text` setting, else "truncate". NER and QA always slide
            windows (`doc_stride`).
        window_stride: pieces between window starts (default: the
            directory's, else half a window).
        max_windows: windows of one text at most.

    Returns:
        the metadata dict also written to `assets.extra/bert_tf_export.json`:
        `kind`, `labels`, `max_seq_length`, `signatures` (inputs and outputs
        of each), `long_text`, `window_stride` and `max_windows` where the
        kind has the option, and with a corpus `search` (`corpus_size`,
        `embedding_dim`).
    """
    check_output_dir(output_dir, overwrite, model_dir=model_dir)
    options = options_of(saved_model_options_class(), options, kwargs, "export_saved_model")
    passages, embeddings = search_inputs(options, model_dir)  # read and checked before anything is written
    reranker = search_reranker(options, passages)  # two-stage search: the cross-encoder, before the corpus is embedded
    module = serving_module(model_dir, options, passages=passages, corpus_embeddings=embeddings)
    if reranker is not None:
        module = RerankedSearchModule(module, reranker, options.search_rerank_top_n)
    return save_module(module, output_dir, overwrite=overwrite)


def save_module(module, output_dir, overwrite=False):
    """Saves a serving module with its signatures and metadata; see `export_saved_model`."""
    check_output_dir(output_dir, overwrite)
    signatures = module.signatures()
    metadata = {
        "kind": kind_of(module),
        "labels": list(module.labels) if getattr(module, "labels", None) is not None else None,
        "max_seq_length": module.max_seq_length,
        "max_input_bytes": module.max_input_bytes,
        "signatures": {
            name: {"inputs": input_names(function), "outputs": sorted(function.structured_outputs)}
            for name, function in sorted(signatures.items())
        },
        **module.metadata(),
    }
    with staged_output(output_dir) as staging:
        tf.saved_model.save(module, staging, signatures=signatures)
        os.makedirs(os.path.join(staging, "assets.extra"), exist_ok=True)
        write_json(os.path.join(staging, "assets.extra", METADATA_FILE), metadata)
    return metadata


def op_names(saved_model_dir):
    """Every op type of a SavedModel: its graphs and their function libraries (set of str)."""
    saved_model = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    names = set()
    for meta_graph in saved_model.meta_graphs:
        names.update(node.op for node in meta_graph.graph_def.node)
        for function in meta_graph.graph_def.library.function:
            names.update(node.op for node in function.node_def)
    return names


@contextlib.contextmanager
def staged_output(output_dir):
    """A new directory beside `output_dir` that the block writes into; it replaces `output_dir` (created with its
    parents, or an existing one removed) when the block ends without an error, and is removed when it raises, so an
    interrupted or failed export never leaves a partial `output_dir`. Its name, `NAME.partial-PID-RANDOM`, says which
    process writes it: a success also removes the staging folders of `output_dir` left by processes that no longer
    run (an export killed mid-write)."""
    output_dir = os.path.abspath(output_dir)
    parent = os.path.dirname(output_dir)
    os.makedirs(parent, exist_ok=True)
    prefix = os.path.basename(output_dir) + STAGING_MARK
    staging = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent)
    try:
        yield staging
        if os.path.exists(output_dir):
            shutil.rmtree(output_dir)
        os.rename(staging, output_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    for name in os.listdir(parent):
        path = os.path.join(parent, name)
        if name.startswith(prefix) and os.path.isdir(path) and _stale(name[len(prefix) :]):
            shutil.rmtree(path, ignore_errors=True)


def _stale(suffix):
    """Whether a staging folder's name after `NAME.partial-` is `PID-RANDOM` of a process that no longer runs, or
    `RANDOM` alone (a folder of an earlier version); `RANDOM` is `tempfile.mkdtemp`'s 8 characters. Any other name is
    not a staging folder's and stays."""
    match = re.fullmatch(r"(?:(\d+)-)?[a-z0-9_]{8}", suffix)
    if match is None:
        return False
    if match.group(1) is None:
        return True
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: it runs
        return False
    return False


def write_json(path, data):
    """`data` as indented JSON with sorted keys and a final newline: the exports' metadata files."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
