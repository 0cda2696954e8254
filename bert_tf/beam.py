"""bert_tf.beam: a corpus's sentence embeddings on Apache Beam (`RunInference`), on any runner: the DirectRunner
here, Dataflow, Flink or Spark by pipeline options. Needs the `[beam]` extra (`pip install "bert_tf[beam]"`);
`import bert_tf` never imports Beam.

    from bert_tf.beam import embed_corpus
    embed_corpus("models/minilm", "corpus.txt", "corpus_embeddings", output_format="parquet",
                 pipeline_args=["--runner=DirectRunner", "--direct_num_workers=2",
                                "--direct_running_mode=multi_processing"])

`bert-tf-embed --runner=NAME ... -- [pipeline options]` calls `embed_corpus`. The pipeline:

    Read        the input file, streamed by one worker: a text file (one passage per line; ids are 0-based line
                numbers, blank lines skipped but counted, as bert-tf-embed's), TSV/CSV/JSONL (`text_column`,
                `id_column`; without an id column a record's 0-based index) or Parquet (`text_column`, `id_column`:
                column names)
    EmbedPassages   (id, text) -> (id, float32 [D]): grouped by shard (a stable hash of the id), each shard's ids
                sorted and checked unique (a repeated id fails the run naming it, before anything is embedded), its
                passages sorted by length (whitespace words, then id) and cut into groups of `group_size`; each group
                is one element of `RunInference` with `EmbeddingModelHandler` (the model loaded once per worker
                process; `SentenceEmbedder.encode` sorts a group by token count into batches of `batch_size`)
    WriteEmbeddings (id, vector) -> shard files, each sorted by id, and the manifest, written once at the end

Batching: the length buckets are made here, before `RunInference`, not by Beam's own length-aware batching
(`ModelHandler(batch_length_fn=..., batch_bucket_boundaries=...)`, present in Beam 2.77): Beam's buckets are
filled by a stateful `BatchElements` whose batches close on a timer (`max_batch_duration_secs`), so which passages
share a batch changes from run to run, and with it the last bits of their embeddings. Groups made from a shard's
sorted passages are the same in every run, so a rerun writes byte-identical files.

The output directory (`output_format` "parquet" or "tfrecord"):

    embeddings-00000-of-00004.parquet   id (string), embedding (list<float32>), rows sorted by id; or
    embeddings-00000-of-00004.tfrecord  one tf.train.Example per passage: id (bytes), embedding (float list)
    embeddings.json                     the manifest: model, pooling, normalize, dimension, count, output_format,
                                        shards and their files and counts, max_seq_length, long_text, prompt,
                                        truncate_dim, input and columns, runner; `complete: true`

`bert_tf.embeddings.read_embeddings(output)` reads it (ids and float32 `[N, D]`, shard by shard). A shard's passages
are the ids whose CRC-32 modulo the shard count is its index; the shard count is ceil(count / `shard_size`).

Rerun: an output directory holding a previous Beam run of the same input, model and settings is replaced (its
manifest removed first, then its shard files; the new run writes the same bytes), and so are the shard files of a
run that failed before its manifest; a directory holding anything else (another run's settings, a local
bert-tf-embed output, other files) is refused unless `overwrite`, which empties it.
"""

import json
import math
import os
import posixpath
import re
import uuid
import zlib

try:
    import apache_beam as beam
    from apache_beam.ml.inference.base import ModelHandler, RunInference
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.runner import create_runner
except ImportError as error:  # the [beam] extra is not installed
    raise ImportError(
        f"bert_tf.beam needs Apache Beam: pip install 'bert_tf[beam]' (apache-beam==2.77.0). ({error})"
    ) from error
import numpy as np
import tensorflow as tf

from bert_tf.checkpoints import ModelDirectory
from bert_tf.checkpoints.readers import is_saved_model
from bert_tf.data.classification import infer_format, read_rows
from bert_tf.data.passages import TEXT_EXTENSIONS
from bert_tf.embeddings import MANIFEST_FILE, SentenceEmbedder, read_manifest
from bert_tf.embeddings.embed_file import INPUT_FORMATS
from bert_tf.embeddings.prompts import check_prompts, check_truncate_dim, resolve_prompt
from bert_tf.export import METADATA_FILE
from bert_tf.text.windows import MAX_WINDOWS, check_long_text

BEAM_FORMATS = ("parquet", "tfrecord")  # output_format of a Beam run
PARQUET_EXTENSIONS = (".parquet", ".pq")
# Passages per RunInference element: a shard's length-sorted passages cut into groups of this many batches.
GROUP_BATCHES = 8
# A shard file's name (and its temporary name while written): what a rerun removes.
SHARD_PATTERN = re.compile(r"embeddings-\d{5}-of-\d{5}\.(parquet|tfrecord)(\.tmp-[0-9a-f]+)?")
# Errors raised on a worker start with this, so the driver finds their line in whatever the runner reports.
ERROR_MARK = "bert_tf.beam: "
# The manifest fields two runs must share for a rerun to replace the first (the others are what the run found).
SETTINGS_FIELDS = (
    "model",
    "model_kind",
    "input",
    "file_format",
    "text_column",
    "id_column",
    "pooling",
    "normalize",
    "max_seq_length",
    "long_text",
    "window_stride",
    "max_windows",
    "truncate_dim",
    "prompt",
    "batch_size",
    "shard_size",
    "output_format",
)


class BeamEmbedError(ValueError):
    """A Beam embedding run's input, options or output refused, or its pipeline failed: the message names why."""


def _fail(message):
    raise BeamEmbedError(ERROR_MARK + message)


def shard_file(index, shards, output_format):
    """The name of shard `index` of `shards`: `embeddings-00000-of-00004.parquet`."""
    return f"embeddings-{index:05d}-of-{shards:05d}.{output_format}"


def shard_count(count, shard_size):
    """The shards of a run of `count` passages: ceil(count / `shard_size`), at least one."""
    return max(1, math.ceil(count / shard_size))


def shard_of(identifier, shards):
    """The shard of a passage id: its UTF-8 bytes' CRC-32 modulo `shards` (the same in every process and run)."""
    return zlib.crc32(identifier.encode("utf-8")) % shards


def input_format(path, file_format=None):
    """The input's format: `file_format`, else inferred from the extension (text, tsv, csv, jsonl, parquet)."""
    if file_format is not None:
        if file_format not in INPUT_FORMATS:
            _fail(f"file_format must be one of {INPUT_FORMATS}. Received: file_format={file_format!r}")
        return file_format
    extension = os.path.splitext(path)[1].lower()
    if extension in PARQUET_EXTENSIONS:
        return "parquet"
    if extension in TEXT_EXTENSIONS:
        return "text"
    try:
        return infer_format(path)
    except ValueError:
        _fail(
            f"Cannot infer the corpus format of {path!r} from its extension {extension!r}: .txt/.text or none is "
            f"text (one passage per line), .tsv, .csv, .jsonl, .parquet the others."
        )


def _text_records(path):
    with tf.io.gfile.GFile(path, "rb") as f:
        for index, line in enumerate(f):
            text = line.decode("utf-8-sig" if index == 0 else "utf-8", errors="replace").rstrip("\n").rstrip("\r")
            if text.strip():
                yield str(index), text


def _parquet_records(path, text_column, id_column):
    import pyarrow.parquet as pq

    if "://" in path:  # a remote file through tf.io.gfile, read whole (pyarrow cannot read a GFile)
        import pyarrow as pa

        with tf.io.gfile.GFile(path, "rb") as f:
            source = pa.BufferReader(f.read())
    else:
        source = path
    with pq.ParquetFile(source) as parquet:
        names = parquet.schema_arrow.names
        for role, column in (("text_column", text_column), ("id_column", id_column)):
            if column is not None and column not in names:
                _fail(f"{path}: no column {column!r} ({role}); the file has {names}.")
        columns = [text_column] + ([id_column] if id_column is not None else [])
        index = 0
        for batch in parquet.iter_batches(columns=columns):
            texts = batch.column(0).to_pylist()
            ids = batch.column(1).to_pylist() if id_column is not None else None
            for row, text in enumerate(texts):
                if not isinstance(text, str) or not text.strip():
                    _fail(f"{path}: row {index}: the passage (column {text_column!r}) is empty or not a string.")
                identifier = str(index) if ids is None else ("" if ids[row] is None else str(ids[row]).strip())
                if not identifier:
                    _fail(f"{path}: row {index}: the id (column {id_column!r}) is empty.")
                yield identifier, text
                index += 1


def _check_columns(path, file_format, text_column, id_column):
    """BeamEmbedError when the columns do not fit the format: none for a text file, text_column for the others."""
    if file_format == "text" and (text_column is not None or id_column is not None):
        _fail(
            f"{path}: a text file holds one passage per line (ids: 0-based line numbers); text_column and "
            "id_column are for TSV/CSV/JSONL/Parquet files."
        )
    if file_format != "text" and text_column is None:
        _fail(f"{path}: a {file_format.upper()} corpus needs text_column (the passage's column).")


def read_records(path, file_format, text_column=None, id_column=None):
    """Yields `(id, text)` of each passage of `path`, streamed, with bert-tf-embed's ids (`read_passages`'s)."""
    _check_columns(path, file_format, text_column, id_column)
    if file_format == "text":
        yield from _text_records(path)
        return
    if file_format == "parquet":
        yield from _parquet_records(path, text_column, id_column)
        return
    count = 0
    try:
        for line, row in read_rows(path, {"text": text_column, "id": id_column}, file_format):
            if not row["text"].strip():
                _fail(f"{path}:{line}: the passage (column {text_column!r}) is empty.")
            identifier = row["id"].strip() if id_column is not None else str(count)
            if not identifier:
                _fail(f"{path}:{line}: the id (column {id_column!r}) is empty.")
            yield identifier, row["text"]
            count += 1
    except BeamEmbedError:
        raise
    except ValueError as e:
        _fail(str(e))


def passage_length(text):
    """The length passages are bucketed by: whitespace-separated words (a cheap stand-in for tokens)."""
    return len(text.split())


def model_settings(
    model,
    max_seq_length=None,
    long_text=None,
    window_stride=None,
    max_windows=None,
    truncate_dim=None,
    prompt_name=None,
):
    """The embedding settings a run with `model` writes in its manifest, read without loading weights: `model` as
    every worker reads it (a Hub id, an absolute path, or a remote path as given), then for a model directory (or Hub
    id) those `SentenceEmbedder` resolves (ValueError naming a bad option); for an exported SavedModel its export
    metadata's (the options are the export's: any given here is refused)."""
    if is_saved_model(model):
        given = dict(max_seq_length=max_seq_length, long_text=long_text, window_stride=window_stride)
        given.update(max_windows=max_windows, truncate_dim=truncate_dim, prompt_name=prompt_name)
        given = {name: value for name, value in given.items() if value is not None}
        if given:
            _fail(
                f"{model} is an exported SavedModel: its tokenization, prompt and truncation were fixed at export. "
                f"Received: {', '.join(f'{k}={v!r}' for k, v in given.items())}"
            )
        path = posixpath.join(model, "assets.extra", METADATA_FILE)
        if not tf.io.gfile.exists(path):
            _fail(f"{model}: a SavedModel without {path} is not a bert_tf export.")
        with tf.io.gfile.GFile(path) as f:
            metadata = json.load(f)
        if "sentence_embedding" not in metadata.get("signatures", {}).get("serving_default", {}).get("outputs", []):
            _fail(f"{model}: its serving_default signature has no sentence_embedding output (kind {metadata['kind']}).")
        prompts = metadata.get("prompts") or {}
        return {
            "model": model if "://" in model else os.path.abspath(model),
            "model_kind": "saved_model",
            "pooling": None,  # the export metadata does not record them
            "normalize": None,
            "max_seq_length": metadata["max_seq_length"],
            "long_text": metadata.get("long_text"),
            "window_stride": metadata.get("window_stride"),
            "max_windows": metadata.get("max_windows"),
            "truncate_dim": metadata.get("truncate_dim"),
            "prompt": resolve_prompt(prompts, metadata.get("default_prompt_name")),
        }
    directory = ModelDirectory.read(model)
    settings = directory.settings
    if "sparse_pooling" in settings:
        _fail(f"{directory.name} is a sparse encoder: a Beam run embeds with dense sentence encoders only.")
    max_seq_length = max_seq_length or settings["max_seq_length"]
    if long_text is None:
        long_text, window_stride = settings.get("long_text", "truncate"), window_stride or settings.get("window_stride")
    max_windows = max_windows or MAX_WINDOWS
    window_stride = check_long_text(long_text, window_stride, max_windows, max_seq_length)
    prompts = check_prompts(settings.get("prompts"), settings.get("default_prompt_name"), directory.name)
    default_prompt_name = settings.get("default_prompt_name") if prompt_name is None else prompt_name
    prompt = resolve_prompt(prompts, prompt_name=default_prompt_name)
    dimension = directory.config.hidden_size * len(settings["pooling"])
    return {
        "model": directory.hub_id or os.path.abspath(directory.path),
        "model_kind": "model_directory",
        "pooling": list(settings["pooling"]),
        "normalize": settings["normalize"],
        "max_seq_length": max_seq_length,
        "long_text": long_text,
        "window_stride": window_stride,
        "max_windows": max_windows if window_stride else None,
        "truncate_dim": check_truncate_dim(truncate_dim, dimension),
        "prompt": prompt,
    }


class EmbeddingModelHandler(ModelHandler):
    """A `RunInference` model handler of a sentence encoder: a bert_tf/Hugging Face/TF1 model directory or a Hub id
    (`SentenceEmbedder`, with its options) or an exported embedding SavedModel (its `serving_default` signature's
    `sentence_embedding`).

    `load_model` runs once per worker process (RunInference shares the model among the process's threads). An
    element is a group of `(id, text)` pairs (see `EmbedPassages`) and its inference the list of `(id, float32
    [D])`; Beam's batching is off (`max_batch_size` 1), as the groups are the batches.
    """

    def __init__(self, model, batch_size=32, **embedder_options):
        super().__init__(min_batch_size=1, max_batch_size=1)
        self._model = model
        self._batch_size = batch_size
        self._options = embedder_options

    def load_model(self):
        if is_saved_model(self._model):
            return tf.saved_model.load(self._model).signatures["serving_default"]
        return SentenceEmbedder(self._model, batch_size=self._batch_size, **self._options)

    def run_inference(self, batch, model, inference_args=None):
        results = []
        for group in batch:
            ids = [identifier for identifier, _ in group]
            texts = [text for _, text in group]
            if isinstance(model, SentenceEmbedder):
                vectors = model.encode(texts, show_progress_bar=False)
            else:
                vectors = np.concatenate(
                    [
                        model(text=tf.constant(texts[start : start + self._batch_size]))["sentence_embedding"].numpy()
                        for start in range(0, len(texts), self._batch_size)
                    ]
                )
            results.append(list(zip(ids, np.asarray(vectors, np.float32))))
        return results

    def get_metrics_namespace(self):
        return "bert_tf"


def _key_by_shard(pair, count, shard_size):
    """`(id, value)` -> `(its shard, (id, value))`: passages before inference, embeddings before writing."""
    return shard_of(pair[0], shard_count(count, shard_size)), pair


def _length_sorted_groups(shard, group_size):
    """One shard's `(key, [(id, text)])` -> its passages in groups of `group_size`, sorted by (length, id), after
    checking every id appears once (a repeated id fails the run, naming it)."""
    _, records = shard
    records = sorted(records)
    for previous, record in zip(records, records[1:]):
        if previous[0] == record[0]:
            _fail(f"passage id {record[0]!r} appears more than once in the input; ids must be unique.")
    records.sort(key=lambda record: (passage_length(record[1]), record[0]))
    for start in range(0, len(records), group_size):
        yield records[start : start + group_size]


class EmbedPassages(beam.PTransform):
    """`(id, text)` pairs -> `(id, float32 [D])`, each id once (a repeated id fails the run naming it), through
    `RunInference(EmbeddingModelHandler(model, batch_size, **embedder_options))`.

    The passages are grouped by shard (`shard_of` their id, `ceil(count / shard_size)` shards), sorted by length
    within a shard and cut into groups of `GROUP_BATCHES * batch_size`: each group is one inference call, the same
    in every run (see the module docstring: why not Beam's length-aware `BatchElements`).
    """

    def __init__(self, model, batch_size=32, shard_size=10000, **embedder_options):
        super().__init__()
        self._handler = EmbeddingModelHandler(model, batch_size=batch_size, **embedder_options)
        self._group_size = GROUP_BATCHES * batch_size
        self._shard_size = shard_size

    def expand(self, passages):
        count = passages | "Count" >> beam.combiners.Count.Globally()
        return (
            passages
            | "KeyByShard" >> beam.Map(_key_by_shard, beam.pvalue.AsSingleton(count), self._shard_size)
            | "GroupShards" >> beam.GroupByKey()
            | "LengthSortedGroups" >> beam.FlatMap(_length_sorted_groups, self._group_size)
            | "RunInference" >> RunInference(self._handler)
            | "Ungroup" >> beam.FlatMap(_ungroup)
        )


def _ungroup(pairs):
    return pairs


def _read(spec):
    return read_records(*spec)


def _temporary(path):
    return f"{path}.tmp-{uuid.uuid4().hex}"


def _write_shard(shard, output, shards, output_format):
    """Writes one shard's `(id, vector)` rows sorted by id to its file (a temporary file renamed: a retried bundle
    rewrites the same bytes); returns `{file, count, dimension}`."""
    index, rows = shard
    rows = sorted(rows, key=lambda row: row[0])
    name = shard_file(index, shards, output_format)
    path = posixpath.join(output, name)
    temporary = _temporary(path)
    dimension = len(rows[0][1])
    if output_format == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        vectors = np.stack([vector for _, vector in rows]).astype(np.float32)
        embedding = pa.ListArray.from_arrays(
            pa.array(np.arange(0, vectors.size + 1, dimension, dtype=np.int32)), pa.array(vectors.reshape(-1))
        )
        table = pa.table({"id": pa.array([identifier for identifier, _ in rows], pa.string()), "embedding": embedding})
        buffer = pa.BufferOutputStream()  # in memory, then through tf.io.gfile (local, gs://, ...)
        pq.write_table(table, buffer)
        with tf.io.gfile.GFile(temporary, "wb") as f:
            f.write(buffer.getvalue().to_pybytes())
    else:
        with tf.io.TFRecordWriter(temporary) as writer:
            for identifier, vector in rows:
                feature = {
                    "id": tf.train.Feature(bytes_list=tf.train.BytesList(value=[identifier.encode("utf-8")])),
                    "embedding": tf.train.Feature(float_list=tf.train.FloatList(value=vector)),
                }
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    tf.io.gfile.rename(temporary, path, overwrite=True)
    return {"file": name, "count": len(rows), "dimension": dimension}


def _write_manifest(files, output, settings):
    files = sorted(files, key=lambda entry: entry["file"])
    if not files:
        _fail(f"{settings['input']}: no passage in the file (empty, or only blank lines).")
    dimensions = sorted({entry["dimension"] for entry in files})
    if len(dimensions) != 1:
        _fail(f"the shards hold embeddings of different dimensions {dimensions}.")
    manifest = {
        **settings,
        "count": sum(entry["count"] for entry in files),
        "dimension": dimensions[0],
        "shards": settings["shards"],
        "files": [{"file": entry["file"], "count": entry["count"]} for entry in files],
        "complete": True,
    }
    path = posixpath.join(output, MANIFEST_FILE)
    temporary = _temporary(path)
    with tf.io.gfile.GFile(temporary, "w") as f:
        f.write(json.dumps(manifest, indent=2) + "\n")
    tf.io.gfile.rename(temporary, path, overwrite=True)
    return manifest


def _write_shards(shard, count, output, shard_size, output_format):
    return _write_shard(shard, output, shard_count(count, shard_size), output_format)


def _with_shards(settings, count, shard_size):
    return {**settings, "shards": shard_count(count, shard_size)}


class WriteEmbeddings(beam.PTransform):
    """`(id, float32 [D])` -> shard files of `output` (`ceil(count / shard_size)` of them, the ids of each sorted)
    and, once every shard is written, the manifest: `settings` plus count, dimension, shards and files."""

    def __init__(self, output, output_format, settings, shard_size=10000):
        super().__init__()
        if output_format not in BEAM_FORMATS:
            _fail(f"output_format must be one of {BEAM_FORMATS}. Received: output_format={output_format!r}")
        self._output, self._format, self._settings, self._shard_size = output, output_format, settings, shard_size

    def expand(self, embeddings):
        count = beam.pvalue.AsSingleton(embeddings | "Count" >> beam.combiners.Count.Globally())
        files = (
            embeddings
            | "KeyByShard" >> beam.Map(_key_by_shard, count, self._shard_size)
            | "GroupShards" >> beam.GroupByKey()
            | "WriteShards" >> beam.Map(_write_shards, count, self._output, self._shard_size, self._format)
        )
        settings = (
            embeddings.pipeline
            | "Settings" >> beam.Create([self._settings])
            | "ShardCount" >> beam.Map(_with_shards, count, self._shard_size)
        )
        return (
            files
            | "AllFiles" >> beam.combiners.ToList()
            | "WriteManifest" >> beam.Map(_write_manifest, self._output, beam.pvalue.AsSingleton(settings))
        )


def pipeline_options(pipeline_args, runner=None):
    """`PipelineOptions` of `pipeline_args` (Beam's flags) and `runner`; BeamEmbedError names an unknown runner or
    an argument no Beam option parses."""
    args = list(pipeline_args or [])
    if runner is not None:
        args = [f"--runner={runner}"] + args
    parsers = []
    options = PipelineOptions(args)
    options.get_all_options(add_extra_args_fn=parsers.append)  # Beam's parser of every option it knows
    _, unknown = parsers[0].parse_known_args(args)
    if unknown:
        raise BeamEmbedError(f"Unknown Beam pipeline options: {' '.join(unknown)} (after --; see Beam's --help).")
    name = options.get_all_options()["runner"]
    if name is not None:
        try:
            create_runner(name)
        except (ValueError, ImportError, AttributeError) as e:
            raise BeamEmbedError(f"--runner={name}: not a Beam runner this installation has ({e}).") from None
    return options


def _prepare_output(output, settings, overwrite):
    """Empties `output` with `overwrite`, or removes a previous Beam run of the same settings there (its manifest
    first, then its shard files); refuses anything else (BeamEmbedError naming what is there)."""
    if tf.io.gfile.exists(output) and not tf.io.gfile.isdir(output):
        raise BeamEmbedError(f"--output exists and is not a directory. Received: output={output}")
    if not tf.io.gfile.exists(output):
        tf.io.gfile.makedirs(output)
        return
    names = tf.io.gfile.listdir(output)
    if not names:
        return
    if overwrite:
        tf.io.gfile.rmtree(output)
        tf.io.gfile.makedirs(output)
        return
    previous = read_manifest(output)
    if previous is None and all(SHARD_PATTERN.fullmatch(name) for name in names):
        previous = settings  # the shards of a Beam run that stopped before its manifest: replaced as a rerun's
    if previous is None or ("files" not in previous and previous is not settings):
        raise BeamEmbedError(
            f"--output holds files that are not a Beam embedding run ({', '.join(sorted(names)[:3])}...): pass "
            f"--overwrite to replace them, or choose another output. Received: output={output}"
        )
    changed = [
        f"{field}: {previous.get(field)!r} -> {settings.get(field)!r}"
        for field in SETTINGS_FIELDS
        if previous.get(field) != settings.get(field)
    ]
    if changed:
        raise BeamEmbedError(
            f"--output holds a Beam run of other settings ({'; '.join(changed)}): pass --overwrite to replace it, "
            f"or choose another output. Received: output={output}"
        )
    if MANIFEST_FILE in names:
        tf.io.gfile.remove(posixpath.join(output, MANIFEST_FILE))
    for name in names:
        if SHARD_PATTERN.fullmatch(name):
            tf.io.gfile.remove(posixpath.join(output, name))


def pipeline_error(error):
    """The one line a failed pipeline's exception holds for the user: a bert_tf.beam error's message (found in the
    runner's report, which may carry a worker's traceback), else the exception's last line."""
    text = str(error)
    found = re.search(re.escape(ERROR_MARK) + r"(.*?)(?: \[while running [^\]]*\])?['\"]?$", text, re.MULTILINE)
    if found:
        return found.group(1).replace("\\'", "'")
    lines = [line for line in text.splitlines() if line.strip()]
    return f"the Beam pipeline failed: {type(error).__name__}: {lines[-1] if lines else ''}"


def embed_corpus(
    model,
    input_path,
    output,
    text_column=None,
    id_column=None,
    file_format=None,
    output_format="parquet",
    batch_size=32,
    max_seq_length=None,
    long_text=None,
    window_stride=None,
    max_windows=None,
    truncate_dim=None,
    prompt_name=None,
    shard_size=10000,
    overwrite=False,
    pipeline_args=None,
    runner=None,
    log=print,
):
    """Embeds every passage of `input_path` with `model` on a Beam pipeline and writes them to `output` (see the
    module docstring); returns the manifest.

    Args:
        model: a model directory or Hub id (`SentenceEmbedder` reads it on each worker: give a path every worker
            sees, or a Hub id) or an exported embedding SavedModel (`bert-tf-export`; local or gs://).
        input_path: the corpus (local, gs://, ...: any path `tf.io.gfile` reads); `file_format` (text, tsv, csv,
            jsonl, parquet) is inferred from its extension when None.
        text_column, id_column: as `bert_tf.data.read_passages`'s (Parquet: column names).
        output_format: "parquet" or "tfrecord".
        batch_size, max_seq_length, long_text, window_stride, max_windows, truncate_dim, prompt_name: the
            `SentenceEmbedder`'s (a SavedModel's are its export's).
        shard_size: passages per output shard on average (the shard count is ceil(count / shard_size)).
        overwrite: empty `output` first (else only a previous Beam run of the same settings is replaced).
        pipeline_args: Beam's pipeline options (`["--direct_num_workers=2", ...]`); `runner` their `--runner`.

    Raises:
        BeamEmbedError (a ValueError) with one line: a bad input, option, runner or output, or a failed pipeline.
    """
    arguments = dict(text_column=text_column, id_column=id_column, file_format=file_format)
    arguments.update(output_format=output_format, batch_size=batch_size, max_seq_length=max_seq_length)
    arguments.update(long_text=long_text, window_stride=window_stride, max_windows=max_windows)
    arguments.update(truncate_dim=truncate_dim, prompt_name=prompt_name, shard_size=shard_size, overwrite=overwrite)
    arguments.update(pipeline_args=pipeline_args, runner=runner, log=log)
    try:
        return _embed_corpus(model, input_path, output, **arguments)
    except BeamEmbedError as e:  # raised here, not on a worker: the message without its mark
        raise BeamEmbedError(str(e).removeprefix(ERROR_MARK)) from None


def _embed_corpus(
    model,
    input_path,
    output,
    text_column,
    id_column,
    file_format,
    output_format,
    batch_size,
    max_seq_length,
    long_text,
    window_stride,
    max_windows,
    truncate_dim,
    prompt_name,
    shard_size,
    overwrite,
    pipeline_args,
    runner,
    log,
):
    options = pipeline_options(pipeline_args, runner)
    if output_format not in BEAM_FORMATS:
        _fail(f"output_format must be one of {BEAM_FORMATS}. Received: output_format={output_format!r}")
    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        _fail(f"shard_size must be a positive integer. Received: shard_size={shard_size!r}")
    if not tf.io.gfile.exists(input_path) or tf.io.gfile.isdir(input_path):
        raise BeamEmbedError(f"No such corpus file: {input_path}")
    file_format = input_format(input_path, file_format)
    _check_columns(input_path, file_format, text_column, id_column)
    embedder_options = dict(max_seq_length=max_seq_length, long_text=long_text, window_stride=window_stride)
    embedder_options.update(max_windows=max_windows, truncate_dim=truncate_dim, prompt_name=prompt_name)
    found = model_settings(model, **embedder_options)
    reference = found["model"]  # what each worker loads
    if found["model_kind"] == "saved_model":
        embedder_options = {}
    settings = {
        **found,
        "input": input_path if "://" in input_path else os.path.abspath(input_path),
        "file_format": file_format,
        "text_column": text_column,
        "id_column": id_column,
        "batch_size": batch_size,
        "shard_size": shard_size,
        "output_format": output_format,
        "runner": options.get_all_options()["runner"] or "DirectRunner",
    }
    output_path = output if "://" in output else os.path.abspath(output)
    _prepare_output(output_path, settings, overwrite)
    read = (input_path, file_format, text_column, id_column)
    try:
        with beam.Pipeline(options=options) as pipeline:
            _ = (
                pipeline
                | "Input" >> beam.Create([read])
                | "Read" >> beam.FlatMap(_read)
                | "EmbedPassages" >> EmbedPassages(reference, batch_size, shard_size, **embedder_options)
                | "WriteEmbeddings" >> WriteEmbeddings(output_path, output_format, settings, shard_size)
            )
    except Exception as e:  # the runner's report of a worker's failure: its line
        raise BeamEmbedError(pipeline_error(e)) from None
    manifest = read_manifest(output_path)
    if manifest is None:  # a runner that returns before the pipeline ends (e.g. Dataflow without waiting)
        log(f"Submitted to {settings['runner']}: the manifest {MANIFEST_FILE} is written in {output} at the end.")
        return None
    log(
        f"Embedded {manifest['count']} passages of {input_path} ({manifest['dimension']} dimensions) into {output}: "
        f"{manifest['shards']} {output_format} shard(s) and {MANIFEST_FILE} ({settings['runner']})."
    )
    return manifest
