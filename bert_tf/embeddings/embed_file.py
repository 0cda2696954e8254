"""embed_file: the sentence embeddings of a whole corpus file, written in resumable shards (bert-tf-embed's call).

    from bert_tf.embeddings import embed_file
    embed_file("models/minilm", "corpus.txt", "corpus_embeddings")

The output directory:

    embeddings.json     the manifest: model, count, dimension, pooling, normalize, truncate_dim and the
                        prompt put before each passage, and what the run read (input file and its
                        SHA-256, columns, max_seq_length, shard size, format);
                        `complete` once the final files are written
    embeddings.npy      float32 [N, D] ("npy" format), in input order; with `quantize`, its codes: int8/uint8
                        [N, D] or packed sign bits int8 (binary) / uint8 (ubinary) [N, ceil(D / 8)]
                        (`bert_tf.embeddings.quantize_embeddings`: sentence-transformers' values)
    quantization_ranges.npy  (`quantize` int8/uint8) float32 [2, D]: each dimension's min and max the codes
                        were calibrated on (the whole corpus, or `calibration_embeddings`)
    ids.txt             one id a line, in the same order ("npy" format)
    embeddings.tfrecord ("tfrecord" format) one `tf.train.Example` per passage: `id` (bytes),
                        `embedding` (float list of D)
    shards/00000.npy    while running: each finished shard of `shard_size` passages, written atomically;
                        a restart with the same input and model skips them; removed once joined

Shape legend: N passages, D embedding.
"""

import dataclasses
import hashlib
import json
import os
import posixpath
import shutil
import time

import keras
import numpy as np
import tensorflow as tf

from bert_tf.checkpoints import ModelDirectory
from bert_tf.data import read_passages
from bert_tf.data.passages import PASSAGE_FORMATS
from bert_tf.embeddings.embed_sparse import embed_sparse_file
from bert_tf.embeddings.quantization import quantization_ranges, quantize_embeddings
from bert_tf.embeddings.sentence_embedder import SentenceEmbedder
from bert_tf.options import option
from bert_tf.text.windows import LONG_TEXT, MAX_WINDOWS

MANIFEST_FILE = "embeddings.json"
EMBEDDINGS_FILE = "embeddings.npy"
IDS_FILE = "ids.txt"
TFRECORD_FILE = "embeddings.tfrecord"
RANGES_FILE = "quantization_ranges.npy"
QUANTIZE = ("none", "int8", "uint8", "binary", "ubinary")  # bert-tf-embed --quantize
SHARDS_DIR = "shards"
OUTPUT_FORMATS = ("npy", "tfrecord")
INPUT_FORMATS = PASSAGE_FORMATS + ("parquet",)  # --file_format; Parquet is read by a Beam run (bert_tf.beam) only
# Passages per `encode` call inside a shard: the progress bar moves this often.
ENCODE_CHUNK = 2048
# Manifest fields a resumed run must share with the run that wrote the shards.
RUN_FIELDS = (
    "model",
    "model_files",
    "input",
    "input_sha256",
    "text_column",
    "id_column",
    "count",
    "dimension",
    "pooling",
    "normalize",
    "max_seq_length",
    "long_text",
    "window_stride",
    "max_windows",
    "truncate_dim",
    "prompt",
    "shard_size",
    "output_format",
    "quantize",
    "calibration",
)
# What a manifest written before a field existed meant by it (an older unfinished run stays resumable).
FIELDS_BEFORE = {"quantize": "none", "calibration": None, "long_text": "truncate", "truncate_dim": None, "prompt": ""}


@dataclasses.dataclass(kw_only=True)
class EmbedConfig:
    """A bert-tf-embed run: each field is the flag of the same name, with its default; `embed_file(**config.kwargs())`
    (`embed_file`'s arguments are named as the library names them) runs it."""

    model_dir: str = option(
        help="Model to embed with: bert_tf model directory, Hugging Face directory or TF1 checkpoint directory."
    )
    input: str = option(help="Corpus: a text file (one passage per line) or a TSV/CSV/JSONL file (with --text_column).")
    output: str = option(
        help="Output directory (embeddings.npy + ids.txt + embeddings.json, or embeddings.tfrecord); an unfinished "
        "run of the same input and model there is resumed."
    )
    text_column: object = option(
        None, "TSV/CSV/JSONL: the passage's column (header name or JSON key, or 0-based index without a header)."
    )
    id_column: object = option(None, "TSV/CSV/JSONL: the id column; default: the passage's 0-based index.")
    file_format: str = option(  # None: from the input's extension
        None,
        "The input's format (parquet: a Beam run's, --runner). Default: from its extension (.txt/.text or none: text).",
        enum=INPUT_FORMATS,
    )
    output_format: str = option(
        "npy",
        "npy: embeddings.npy + ids.txt; tfrecord: {id, embedding}; parquet (a Beam run's, --runner): {id, embedding} "
        "shards. Default with --runner: parquet.",
        enum=OUTPUT_FORMATS + ("parquet",),
    )
    quantize: str = option(
        "none",
        "Write quantized embeddings (npy only; sentence-transformers' quantize_embeddings): int8/uint8 codes with "
        "per-dimension ranges calibrated on the whole corpus (or --calibration_embeddings) and written to "
        "quantization_ranges.npy, or binary/ubinary sign bits packed 8 to a byte. The shards stay float32.",
        enum=QUANTIZE,
    )
    calibration_embeddings: str = option(
        None,
        "--quantize=int8|uint8: calibrate the ranges on these float32 embeddings instead of the corpus: an .npy "
        "file [M, D] or a bert-tf-embed output directory.",
    )
    batch_size: int = option(32, "Passages per forward call.", lower_bound=1)
    max_seq_length: int = option(  # None: the model directory's
        None,
        "Tokens per passage (per window with --long_text=windows). Default: the model directory's max_seq_length.",
        lower_bound=3,
    )
    long_text: str = option(  # None: the model directory's
        None,
        "A passage longer than max_seq_length: truncate it (the run logs how many were), or embed it as the mean "
        "of overlapping windows (--window_stride) over the whole text, as the exported SavedModel does. Default: the "
        "model directory's choice, else truncate.",
        enum=LONG_TEXT,
    )
    window_stride: int = option(
        None, "--long_text=windows: pieces between window starts. Default: half a window.", lower_bound=1
    )
    max_windows: int = option(MAX_WINDOWS, "--long_text=windows: windows of one passage at most.", lower_bound=1)
    truncate_dim: int = option(  # None: the whole embedding
        None,
        "Matryoshka: keep each embedding's first N dimensions (after the model's normalization, as "
        "sentence-transformers' truncate_dim). At most the model's embedding dimension.",
        lower_bound=1,
    )
    prompt_name: str = option(  # None: the model directory's default prompt, else none
        None,
        "The model's prompt put before each passage (config_sentence_transformers.json's prompts, e.g. query, "
        "passage). Default: the model's default_prompt_name, else none.",
    )
    max_active_dims: int = option(  # None: the model directory's, else all
        None,
        "Sparse (SPLADE) encoders: non-zero vocabulary weights kept per passage (the largest). A sparse encoder "
        "writes sparse.jsonl ({id, indices, values} per passage) + sparse.json. Default: the model's, else all.",
        lower_bound=1,
    )
    shard_size: int = option(10000, "Passages per shard (the unit a restart skips).", lower_bound=1)
    max_shards: int = option(
        None,
        "Stop after this many new shards, leaving a resumable output (split a long job over several runs).",
        lower_bound=1,
    )
    overwrite: bool = option(False, "Replace whatever --output holds (a complete or different run).")
    progress: bool = option(True, "Show a progress bar (passages/s) on stderr.")
    runner: str = option(  # None: a local run (embed_file); else bert_tf.beam.embed_corpus
        None,
        "Run on Apache Beam with this runner (DirectRunner, DataflowRunner, FlinkRunner, SparkRunner, ...; needs "
        "bert_tf[beam]); Beam's pipeline options follow `--`. Writes Parquet (default) or TFRecord shards. Default: "
        "a local run.",
    )

    def kwargs(self):
        """`embed_file`'s arguments for this run (a local one: `runner` None)."""
        values = dataclasses.asdict(self)
        values.pop("runner")
        return {
            "input_path": values.pop("input"),
            "show_progress": values.pop("progress"),
            **values,
        }


class EmbedResumeError(ValueError):
    """An output directory holds shards of a different run (input, model or settings): the message names them."""


def _sha256(path):
    digest = hashlib.sha256()
    with tf.io.gfile.GFile(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _model_files(path):
    """`{name: [size, mtime_ns]}` of the files directly in the model directory: a retrained model differs."""
    directory = path if os.path.isdir(path) else os.path.dirname(path) or "."
    files = {}
    for name in sorted(os.listdir(directory)):
        full = os.path.join(directory, name)
        if os.path.isfile(full):
            stat = os.stat(full)
            files[name] = [stat.st_size, stat.st_mtime_ns]
    return files


def _write_atomically(path, write):
    """Calls `write(temporary_path)`, then renames the file to `path` (a reader never sees half a file)."""
    temporary = f"{path}.tmp-{os.getpid()}"
    write(temporary)
    os.replace(temporary, path)


def _save_npy(path, array):
    with open(path, "wb") as f:  # a file object: np.save would add ".npy" to a path's name
        np.save(f, array)


def _write_json(path, data):
    def write(temporary):
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
            f.write("\n")

    _write_atomically(path, write)


def read_manifest(output):
    """The manifest of an output directory (`embeddings.json`; local or any path `tf.io.gfile` reads, as a Beam
    run's gs:// output), or None when there is none."""
    path = posixpath.join(output, MANIFEST_FILE) if "://" in output else os.path.join(output, MANIFEST_FILE)
    if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise EmbedResumeError(f"{path}: not a valid manifest ({e}); pass overwrite=True to start again.") from None


def _changed_fields(previous, manifest):
    """`field: before -> now` for each run field that differs between a previous run's manifest and this one's."""
    return [
        f"{field}: {previous.get(field, FIELDS_BEFORE.get(field))!r} -> {manifest[field]!r}"
        for field in RUN_FIELDS
        if previous.get(field, FIELDS_BEFORE.get(field)) != manifest[field]
    ]


def _check_resume(output, previous, manifest):
    """Raises `EmbedResumeError` naming each run field that differs between the shards' run and this one."""
    changed = _changed_fields(previous, manifest)
    if changed:
        raise EmbedResumeError(
            f"{output} holds shards of a different run ({'; '.join(changed)}). Resuming would mix embeddings: "
            "pass overwrite=True (--overwrite) to start again, or choose another output."
        )


def _final_files(output_format):
    return [EMBEDDINGS_FILE, IDS_FILE] if output_format == "npy" else [TFRECORD_FILE]


def _check_complete(output, previous, manifest):
    """Raises `EmbedResumeError` unless the complete run in `output` is this very run (same input, model and
    settings) and its final files are there."""
    changed = _changed_fields(previous, manifest)
    if changed:
        raise EmbedResumeError(
            f"{output} already holds the complete embeddings of a different run ({'; '.join(changed)}): pass "
            "overwrite=True (--overwrite) to replace them, or choose another output."
        )
    missing = [
        name for name in _final_files(manifest["output_format"]) if not os.path.isfile(os.path.join(output, name))
    ]
    if missing:
        raise EmbedResumeError(
            f"{output}: {MANIFEST_FILE} says the run is complete but {', '.join(missing)} is missing: pass "
            "overwrite=True (--overwrite) to embed again."
        )


def _prepare_output(output, overwrite):
    """The manifest of the run in `output` (an unfinished one to resume, or a complete one to compare), or None for
    a fresh start."""
    if os.path.exists(output) and not os.path.isdir(output):
        raise FileExistsError(f"The output path exists and is not a directory. Received: output={output}")
    previous = read_manifest(output) if os.path.isdir(output) else None
    if overwrite and os.path.isdir(output):
        shutil.rmtree(output)
        previous = None
    elif previous is None and os.path.isdir(output) and os.listdir(output):
        raise FileExistsError(
            f"The output directory is not empty and has no {MANIFEST_FILE} (pass overwrite=True, --overwrite, to "
            f"replace it). Received: output={output}"
        )
    return previous


def _shard_path(output, index):
    return os.path.join(output, SHARDS_DIR, f"{index:05d}.npy")


def _finished_shard(path, rows, dimension):
    """The shard at `path` if a previous run finished it (shape `[rows, dimension]`), else None."""
    if not os.path.isfile(path):
        return None
    shard = np.load(path, mmap_mode="r")
    if shard.shape != (rows, dimension) or shard.dtype != np.float32:
        raise EmbedResumeError(
            f"{path}: a finished shard must be float32 [{rows}, {dimension}]; found {shard.dtype} {list(shard.shape)}. "
            "Pass overwrite=True (--overwrite) to start again."
        )
    return shard


def _check_quantize(quantize, calibration_embeddings, output_format):
    """The calibration embeddings (float `[M, D]`, memory-mapped) or None; ValueError names a bad setting."""
    if quantize not in QUANTIZE:
        raise ValueError(f"`quantize` must be one of {QUANTIZE}. Received: quantize={quantize!r}")
    if quantize != "none" and output_format != "npy":
        raise ValueError(
            f"Quantized embeddings are written as npy only. Received: quantize={quantize!r}, "
            f"output_format={output_format!r}"
        )
    if calibration_embeddings is None:
        return None
    if quantize not in ("int8", "uint8"):
        raise ValueError(
            f"calibration_embeddings calibrate int8/uint8 ranges. Received: quantize={quantize!r}, "
            f"calibration_embeddings={calibration_embeddings!r}"
        )
    if os.path.isdir(calibration_embeddings):
        calibration = read_embeddings(calibration_embeddings)[1]
    elif os.path.isfile(calibration_embeddings):
        calibration = np.load(calibration_embeddings, mmap_mode="r")
    else:
        raise FileNotFoundError(
            f"No such calibration file or directory. Received: calibration_embeddings={calibration_embeddings}"
        )
    if calibration.ndim != 2 or calibration.shape[0] < 1 or calibration.dtype != np.float32:
        raise ValueError(
            f"calibration_embeddings must be float32 [M, D] with M >= 1. Received: {calibration_embeddings} of "
            f"{calibration.dtype} {list(calibration.shape)}"
        )
    return calibration


def _join(output, manifest, ids, shards, calibration=None):
    """Writes the final files from the shards (in order), quantized as the manifest says; returns their names."""
    count, dimension = manifest["count"], manifest["dimension"]
    quantize = manifest.get("quantize", "none")
    if manifest["output_format"] == "npy":
        ranges = None
        if quantize in ("int8", "uint8"):
            if calibration is None:  # each dimension's min and max over the whole corpus, shard by shard
                low, high = zip(*(quantization_ranges(np.load(path, mmap_mode="r")) for path in shards))
                ranges = np.stack([np.min(low, axis=0), np.max(high, axis=0)])
            else:
                ranges = quantization_ranges(calibration)
        if quantize == "none":
            dtype, shape = np.float32, (count, dimension)
        else:
            dtype = np.int8 if quantize in ("int8", "binary") else np.uint8
            shape = (count, dimension if quantize.endswith("int8") else -(-dimension // 8))

        def write_embeddings(temporary):
            # Opened as a memory map: a corpus larger than memory is copied shard by shard.
            joined = np.lib.format.open_memmap(temporary, mode="w+", dtype=dtype, shape=shape)
            start = 0
            for path in shards:
                shard = np.load(path, mmap_mode="r")
                if quantize != "none":
                    shard = quantize_embeddings(shard, quantize, ranges=ranges)
                joined[start : start + len(shard)] = shard
                start += len(shard)
            joined.flush()
            del joined

        if ranges is not None:
            _write_atomically(os.path.join(output, RANGES_FILE), lambda temporary: _save_npy(temporary, ranges))

        def write_ids(temporary):
            with open(temporary, "w", encoding="utf-8") as f:
                f.writelines(f"{identifier}\n" for identifier in ids)

        _write_atomically(os.path.join(output, EMBEDDINGS_FILE), write_embeddings)
        _write_atomically(os.path.join(output, IDS_FILE), write_ids)
        return [EMBEDDINGS_FILE, IDS_FILE] + ([RANGES_FILE] if ranges is not None else [])

    def write_records(temporary):
        index = 0
        with tf.io.TFRecordWriter(temporary) as writer:
            for path in shards:
                for vector in np.load(path):
                    feature = {
                        "id": tf.train.Feature(bytes_list=tf.train.BytesList(value=[ids[index].encode("utf-8")])),
                        "embedding": tf.train.Feature(float_list=tf.train.FloatList(value=vector)),
                    }
                    writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
                    index += 1

    _write_atomically(os.path.join(output, TFRECORD_FILE), write_records)
    return [TFRECORD_FILE]


def embed_file(
    model_dir,
    input_path,
    output,
    text_column=None,
    id_column=None,
    file_format=None,
    output_format="npy",
    quantize="none",
    calibration_embeddings=None,
    batch_size=32,
    max_seq_length=None,
    long_text=None,
    window_stride=None,
    max_windows=MAX_WINDOWS,
    truncate_dim=None,
    prompt_name=None,
    max_active_dims=None,
    shard_size=10000,
    max_shards=None,
    overwrite=False,
    show_progress=True,
    log=print,
):
    """Embeds every passage of `input_path` with the model at `model_dir` and writes them to `output`.

    Args:
        model_dir: a checkpoint `SentenceEmbedder` reads (bert_tf, Hugging Face or TF1 directory, or a Hugging Face
            Hub id `org/name[@revision]`).
        input_path: the corpus: a text file (one passage per line; ids are
            0-based line numbers) or a TSV/CSV/JSONL file (`text_column`,
            `id_column`), read by `bert_tf.data.read_passages` (bad rows: a
            ValueError naming the file and line).
        output: the output directory (see the module docstring). A directory
            holding an unfinished run of the same input, model and settings
            is resumed: its finished shards are kept; a complete one is left
            as it is (the run is already complete: its manifest is returned);
            an unfinished or complete run of another input, model or settings
            is refused (`EmbedResumeError` naming what differs), unless
            `overwrite`.
        output_format: "npy" (`embeddings.npy` + `ids.txt`) or "tfrecord".
        quantize: "none", or the codes `embeddings.npy` holds ("npy" only): "int8"/"uint8" (ranges calibrated on
            the whole corpus, written to `RANGES_FILE`) or "binary"/"ubinary" (packed sign bits), as
            `bert_tf.embeddings.quantize_embeddings` gives them.
        calibration_embeddings: int8/uint8: the float32 embeddings (an `.npy` file or a bert-tf-embed output
            directory) whose ranges calibrate the codes instead of the corpus's.
        batch_size, max_seq_length, long_text, window_stride, max_windows,
            truncate_dim, prompt_name: `SentenceEmbedder`'s. With "truncate",
            the run logs how many passages it cut. The manifest records the
            prompt's text (`prompt`, "" for none).
        max_active_dims: a sparse (SPLADE) encoder's cap of non-zero weights per passage (default: the model
            directory's, else all). A sparse encoder's run writes `sparse.jsonl` instead (`embed_sparse`; the
            dense options `output_format`, `quantize`, `long_text`, `truncate_dim`, `prompt_name` are refused).
        shard_size: passages per shard (the unit of resumption).
        max_shards: stop after embedding this many new shards, leaving a
            resumable output (None: all).
        overwrite: replace whatever `output` holds.
        show_progress: a progress bar (passages/s) on stderr.
        log: receives the messages.

    Returns:
        the manifest (dict, also `output/embeddings.json`); `complete` is
        False when `max_shards` stopped the run early.
    """
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"`output_format` must be one of {OUTPUT_FORMATS}. Received: output_format={output_format!r}")
    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise ValueError(f"`shard_size` must be a positive integer. Received: shard_size={shard_size!r}")
    if max_shards is not None and max_shards < 1:
        raise ValueError(f"`max_shards` must be positive or None. Received: max_shards={max_shards!r}")
    calibration = _check_quantize(quantize, calibration_embeddings, output_format)
    passages = read_passages(input_path, text_column=text_column, id_column=id_column, file_format=file_format)
    model = ModelDirectory.read(model_dir)  # a directory or a Hugging Face Hub id, read once
    if "sparse_pooling" in model.settings:  # a sparse (SPLADE) encoder: sparse.jsonl (`embed_sparse`)
        dense_only = dict(
            output_format=(output_format, "npy"), quantize=(quantize, "none"), long_text=(long_text, None)
        )
        dense_only.update(truncate_dim=(truncate_dim, None), prompt_name=(prompt_name, None))
        for name, (value, default) in dense_only.items():
            if value != default:
                raise ValueError(
                    f"{model.name} is a sparse encoder: `{name}` is a dense embedding's. Received: {name}={value!r}"
                )
        sparse = dict(batch_size=batch_size, max_seq_length=max_seq_length, max_active_dims=max_active_dims)
        files = dict(text_column=text_column, id_column=id_column, file_format=file_format)
        run = dict(shard_size=shard_size, max_shards=max_shards, overwrite=overwrite, log=log)
        return embed_sparse_file(model, input_path, output, **files, **sparse, **run)
    elif max_active_dims is not None:
        raise ValueError(
            f"`max_active_dims` caps a sparse encoder's vectors; {model.name} is dense. Received: "
            f"max_active_dims={max_active_dims!r}"
        )
    previous = _prepare_output(output, overwrite)
    embedder = SentenceEmbedder(
        model,
        max_seq_length=max_seq_length,
        batch_size=batch_size,
        long_text=long_text,
        window_stride=window_stride,
        max_windows=max_windows,
        truncate_dim=truncate_dim,
        prompt_name=prompt_name,
    )
    manifest = {
        "model": model.hub_id or os.path.abspath(model.path),
        "model_files": _model_files(model.path),
        "input": os.path.abspath(input_path),
        "input_sha256": _sha256(input_path),
        "text_column": text_column,
        "id_column": id_column,
        "count": len(passages),
        "dimension": embedder.embedding_dimension,
        "pooling": embedder.pooling,
        "normalize": embedder.normalize,
        "max_seq_length": embedder.max_seq_length,
        "long_text": embedder.long_text,
        "window_stride": embedder.window_stride,
        "max_windows": embedder.max_windows,
        "truncate_dim": embedder.truncate_dim,
        "prompt": embedder.prompt,
        "shard_size": shard_size,
        "output_format": output_format,
        "quantize": quantize,
        "calibration": None if calibration_embeddings is None else os.path.abspath(calibration_embeddings),
        "shards": -(-len(passages) // shard_size),
        "complete": False,
    }
    if previous is not None and previous.get("complete"):
        _check_complete(output, previous, manifest)  # a re-run of a finished run: nothing to do (as pretraining's)
        log(
            f"{output}: already complete ({previous['count']} passages of {input_path}, nothing to do). Pass "
            "overwrite=True (--overwrite) to embed again, or choose another output."
        )
        return previous
    if previous is not None:
        _check_resume(output, previous, manifest)
    os.makedirs(os.path.join(output, SHARDS_DIR), exist_ok=True)
    _write_json(os.path.join(output, MANIFEST_FILE), manifest)

    shards, skipped, embedded = [], 0, 0
    progress = (
        keras.utils.Progbar(len(passages), stateful_metrics=["passages/s"], unit_name="passage")
        if show_progress
        else None
    )
    done, start_time, new_passages = 0, time.perf_counter(), 0
    for index in range(manifest["shards"]):
        path = _shard_path(output, index)
        texts = passages.texts[index * shard_size : (index + 1) * shard_size]
        shards.append(path)
        if _finished_shard(path, len(texts), manifest["dimension"]) is not None:
            skipped += 1
            done += len(texts)
            if progress is not None:
                progress.update(done)
            continue
        if max_shards is not None and embedded >= max_shards:
            break
        vectors = []
        for chunk in range(0, len(texts), ENCODE_CHUNK):
            vectors.append(embedder.encode(texts[chunk : chunk + ENCODE_CHUNK], show_progress_bar=False))
            done += len(vectors[-1])
            new_passages += len(vectors[-1])
            if progress is not None:
                rate = new_passages / max(time.perf_counter() - start_time, 1e-9)
                progress.update(done, values=[("passages/s", rate)])
        _write_atomically(path, lambda temporary, v=np.concatenate(vectors): _save_npy(temporary, v))
        embedded += 1
    if progress is not None and done < len(passages):
        print()  # ends the unfinished bar's line
    if skipped:
        log(f"Resumed in {output}: {skipped} finished shard(s) kept.")
    if embedder.truncated_texts:
        log(
            f"{embedder.truncated_texts} of the {new_passages} passages embedded by this run were longer than "
            f"max_seq_length ({embedder.max_seq_length} tokens) and truncated; --long_text=windows embeds whole texts."
        )
    if len(shards) < manifest["shards"] or not os.path.isfile(shards[-1]):
        finished = sum(os.path.isfile(p) for p in shards)
        log(f"Stopped after {embedded} new shard(s) ({finished} of {manifest['shards']} done); run again to go on.")
        return manifest
    if calibration is not None and calibration.shape[1] != manifest["dimension"]:
        raise ValueError(
            f"calibration_embeddings must have D = {manifest['dimension']} columns (the embeddings'). Received: "
            f"{calibration_embeddings} of shape {calibration.shape}"
        )
    files = _join(output, manifest, passages.ids, shards, calibration)
    manifest["complete"] = True
    _write_json(os.path.join(output, MANIFEST_FILE), manifest)
    shutil.rmtree(os.path.join(output, SHARDS_DIR))
    log(
        f"Embedded {manifest['count']} passages of {input_path} ({manifest['dimension']} dimensions) into "
        f"{output}: {', '.join(files)}."
    )
    return manifest


def _read_tfrecord(path):
    ids, vectors = [], []
    for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
        example = tf.train.Example.FromString(record)
        ids.append(example.features.feature["id"].bytes_list.value[0].decode("utf-8"))
        vectors.append(np.array(example.features.feature["embedding"].float_list.value, np.float32))
    return ids, vectors


def _read_shards(output, manifest):
    """`(ids, float32 [N, D])` of a Beam run's shard files (Parquet or TFRecord), in the manifest's file order."""
    ids, blocks, dimension = [], [], manifest["dimension"]
    for entry in manifest["files"]:
        path = os.path.join(output, entry["file"])
        if not os.path.isfile(path):
            raise ValueError(f"{output}: {MANIFEST_FILE} lists {entry['file']}, which is missing; embed again.")
        if manifest["output_format"] == "parquet":
            import pyarrow.parquet as pq  # installed with apache-beam (the [beam] extra) and tensorflow-datasets

            table = pq.read_table(path, columns=["id", "embedding"])
            shard_ids = table.column("id").to_pylist()
            flat = table.column("embedding").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            vectors = np.asarray(flat, np.float32).reshape(len(shard_ids), dimension)
        else:
            shard_ids, rows = _read_tfrecord(path)
            vectors = np.stack(rows) if rows else np.zeros((0, dimension), np.float32)
        if len(shard_ids) != entry["count"]:
            raise ValueError(
                f"{output}: {entry['file']} holds {len(shard_ids)} passages, {MANIFEST_FILE} says {entry['count']}; "
                "embed again."
            )
        ids.extend(shard_ids)
        blocks.append(vectors)
    return ids, (np.concatenate(blocks) if blocks else np.zeros((0, dimension), np.float32))


def read_embeddings(output):
    """The passages' ids and embeddings of a complete `embed_file` output directory (what `bert-tf-embed` wrote),
    or of a Beam run's (`bert_tf.beam`, `bert-tf-embed --runner=...`: Parquet or TFRecord shards, read in the
    manifest's order: shard by shard, ids sorted within each).

    Returns:
        `(ids, embeddings)`: ids a list of N str, embeddings `[N, D]` as stored: float32 (or, with `quantize`,
        int8/uint8 codes or packed bits `[N, ceil(D / 8)]`; the manifest's `quantize` says which, and
        `RANGES_FILE` holds the int8/uint8 ranges). The "npy" format's `embeddings.npy` is opened as a read-only
        memory map (a corpus larger than memory is read as it is used); "tfrecord" and a Beam run's shards are
        read into memory.

    Raises:
        ValueError: `output` holds no manifest, an unfinished run, or files that disagree with it (each named).
    """
    manifest = read_manifest(output) if os.path.isdir(output) else None
    if manifest is None:
        raise ValueError(f"{output}: not a bert-tf-embed output directory (no {MANIFEST_FILE}).")
    if not manifest.get("complete"):
        raise ValueError(f"{output}: the bert-tf-embed run is unfinished; run the same command again to complete it.")
    count = manifest["count"]
    if "files" in manifest:  # a Beam run (bert_tf.beam): shard files of id and embedding
        ids, embeddings = _read_shards(output, manifest)
    elif manifest["output_format"] == "tfrecord":
        ids, vectors = _read_tfrecord(os.path.join(output, TFRECORD_FILE))
        embeddings = np.stack(vectors) if vectors else np.zeros((0, manifest["dimension"]), np.float32)
    else:
        embeddings = np.load(os.path.join(output, EMBEDDINGS_FILE), mmap_mode="r")
        with open(os.path.join(output, IDS_FILE), encoding="utf-8") as f:
            ids = f.read().split("\n")[:-1]
    if len(ids) != count or embeddings.shape[0] != count:
        raise ValueError(
            f"{output}: {MANIFEST_FILE} lists {count} passages but the files hold {len(ids)} ids and "
            f"{embeddings.shape[0]} embeddings; embed again with --overwrite."
        )
    return ids, embeddings
