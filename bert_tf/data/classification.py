"""Sentence (pair) classification and regression data: TSV/CSV/JSONL files to tf.data.

Reading is Python (files are small next to pretraining corpora and errors must
name a file and line); tokenization and packing run in-graph, inside the
`tf.data` map on batches, with `BertTokenizer.tokenize` and `BertPacker`.

Columns are named by header (TSV/CSV with a header line, JSONL keys) or by
0-based integer index (header-less TSV/CSV). `glue_layout(task)` gives the
column settings of the GLUE tasks' `train.tsv`/`dev.tsv` files.

Shapes: B batch, T max_seq_length.
"""

import csv
import dataclasses
import io
import json
import os
import re

import tensorflow as tf

from bert_tf.text import packer_for
from bert_tf.text.windows import MAX_WINDOWS, check_long_text, windows_of

TASKS = ("classification", "regression")
FORMATS = ("tsv", "csv", "jsonl")
_EXTENSIONS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}

# GLUE train/dev layouts (files of the GLUE download script). `label_values` are what the files hold, in id
# order; `label_names` name those ids (TFDS's names for the same configs): SST-2's "0" is id 0, "negative".
# Both are fixed so train and dev map labels to the same ids.
_BINARY = ("0", "1")


def _binary(negative, positive):
    return dict(label_names=(negative, positive), label_values=_BINARY)


_GLUE = {
    "cola": dict(text_column=3, label_column=1, has_header=False, **_binary("unacceptable", "acceptable")),
    "sst2": dict(text_column="sentence", label_column="label", **_binary("negative", "positive")),
    "mrpc": dict(
        text_column="#1 String",
        text_pair_column="#2 String",
        label_column="Quality",
        **_binary("not_equivalent", "equivalent"),
    ),
    "stsb": dict(text_column="sentence1", text_pair_column="sentence2", label_column="score", task="regression"),
    "qqp": dict(
        text_column="question1",
        text_pair_column="question2",
        label_column="is_duplicate",
        **_binary("not_duplicate", "duplicate"),
    ),
    "mnli": dict(
        text_column="sentence1",
        text_pair_column="sentence2",
        label_column="gold_label",
        label_names=("contradiction", "entailment", "neutral"),
    ),
    "qnli": dict(
        text_column="question",
        text_pair_column="sentence",
        label_column="label",
        label_names=("entailment", "not_entailment"),
    ),
    "rte": dict(
        text_column="sentence1",
        text_pair_column="sentence2",
        label_column="label",
        label_names=("entailment", "not_entailment"),
    ),
    # WNLI's 1 is entailment (TFDS: 0 not_entailment, 1 entailment).
    "wnli": dict(
        text_column="sentence1",
        text_pair_column="sentence2",
        label_column="label",
        **_binary("not_entailment", "entailment"),
    ),
}


@dataclasses.dataclass
class ClassificationExamples:
    """Examples read from one file.

    Attributes:
        texts: first segments, one per example.
        pairs: second segments, or None for single-sentence tasks.
        labels: int label ids (classification), floats (regression), or None
            when the file has no label column (prediction).
        label_names: classification label strings; `labels[i]` indexes them.
            None for regression.
        task: "classification" or "regression".
        path: the file read.
        lines: 1-based line on which each example starts.
    """

    texts: list
    pairs: list = None
    labels: list = None
    label_names: list = None
    task: str = "classification"
    path: str = ""
    lines: list = dataclasses.field(default_factory=list)

    def __len__(self):
        return len(self.texts)


def glue_layout(task_name):
    """`read_examples` keyword arguments for a GLUE task's train/dev TSV.

    Args:
        task_name: "CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI",
            "RTE" or "WNLI" (case, "-" and "_" ignored).

    Returns:
        dict with `text_column`, `text_pair_column`, `label_column`, `task`,
        `file_format` ("tsv"), `has_header`, `label_names` (the classes' names
        in id order, e.g. SST-2's ["negative", "positive"]) and `label_values`
        (what the files hold for them, e.g. ["0", "1"]; None where the files
        hold the names).
    """
    key = re.sub(r"[-_ ]", "", str(task_name).lower())
    if key not in _GLUE:
        raise ValueError(
            f"Unknown GLUE task. Known: CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI. "
            f"Received: task_name={task_name!r}"
        )
    layout = dict(text_pair_column=None, task="classification", file_format="tsv", has_header=True)
    layout.update(_GLUE[key])
    for key in ("label_names", "label_values"):
        layout[key] = list(layout[key]) if layout.get(key) is not None else None
    return layout


def infer_format(path):
    """ "tsv", "csv" or "jsonl" from a file name's extension."""
    extension = os.path.splitext(path)[1].lower()
    if extension not in _EXTENSIONS:
        raise ValueError(
            f"Cannot infer the file format of {path!r} from its extension; pass file_format "
            f"(one of {FORMATS}). Received: extension={extension!r}"
        )
    return _EXTENSIONS[extension]


def _read_text(path):
    """The file as text: UTF-8 (BOM dropped), invalid bytes replaced by U+FFFD."""
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read().decode("utf-8-sig", errors="replace")


def delimited_records(path, file_format, text=None):
    """Yields `(line, fields)` per non-blank record of a TSV (no quoting) or CSV file `path` (`text`: its content,
    when the caller has read it); a malformed record is a ValueError naming the file and line."""
    content = io.StringIO(_read_text(path) if text is None else text, newline="")
    if file_format == "tsv":  # GLUE TSVs hold unbalanced quotes inside text: no quoting.
        reader = csv.reader(content, delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(content)
    line = 1
    try:
        for fields in reader:
            if fields and not (len(fields) == 1 and not fields[0].strip()):
                yield line, fields
            line = reader.line_num + 1
    except csv.Error as e:
        raise ValueError(f"{path}:{line}: malformed {file_format.upper()} record: {e}") from None


def _jsonl_records(path):
    """Yields `(line, object)` per non-blank line of a JSON lines file."""
    # Only "\n" ends a line: JSON strings may hold raw U+2028 or U+0085, which str.splitlines splits at.
    for line, text in enumerate(_read_text(path).split("\n"), 1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{line}: invalid JSON (one JSON object per line expected): {e}") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{line}: expected a JSON object. Received: {type(record).__name__}")
        yield line, record


def _column_indices(path, columns, header, has_header):
    """Maps column names or indices to field indices (None stays None)."""
    indices = {}
    for role, column in columns.items():
        if column is None:
            indices[role] = None
        elif isinstance(column, int) and not isinstance(column, bool):
            indices[role] = column
        elif not has_header:
            raise ValueError(
                f"{path}: column {column!r} ({role}) is a name but the file is read without a "
                f"header; pass an integer index or has_header=True. Received: {role}={column!r}"
            )
        elif column in header:
            indices[role] = header.index(column)
        else:
            raise ValueError(f"{path}:1: missing column {column!r} ({role}). Header columns: {header}")
    return indices


def _delimited_rows(path, file_format, columns, has_header):
    """Yields `(line, {role: value})` from a TSV/CSV file."""
    records = delimited_records(path, file_format)
    if has_header is None:  # names need a header; integer indices mean a header-less file
        has_header = any(isinstance(c, str) for c in columns.values())
    header = None
    width = None
    if has_header:
        first = next(records, None)
        if first is None:
            raise ValueError(f"{path}: the file is empty but a header line was expected")
        header = [name.strip() for name in first[1]]
        width = len(header)
    indices = _column_indices(path, columns, header, has_header)
    for line, fields in records:
        if width is None:
            width = len(fields)
        if len(fields) != width:
            raise ValueError(
                f"{path}:{line}: wrong column count: expected {width} "
                f"({'header' if header else 'first row'}), received {len(fields)}"
            )
        row = {}
        for role, index in indices.items():
            if index is None:
                continue
            if not -width <= index < width:
                raise ValueError(f"{path}:{line}: missing column {index} ({role}); the row has {width} columns")
            row[role] = fields[index]
        yield line, row


def _jsonl_rows(path, columns):
    """Yields `(line, {role: value})` from a JSON lines file."""
    for line, record in _jsonl_records(path):
        row = {}
        for role, key in columns.items():
            if key is None:
                continue
            if key not in record:
                raise ValueError(f"{path}:{line}: missing column {key!r} ({role}). Keys: {sorted(record)}")
            value = record[key]
            if role != "label" and not isinstance(value, str):
                raise ValueError(f"{path}:{line}: column {key!r} ({role}) must be a string. Received: {value!r}")
            row[role] = value if isinstance(value, str) else json.dumps(value)
        yield line, row


def read_rows(path, columns, file_format, has_header=None):
    """Yields `(line, {role: value})` for each record of a TSV, CSV or JSONL file.

    Args:
        path: the file.
        columns: `{role: column}`: a header name / JSON key, or a 0-based index
            (header-less TSV/CSV); a None column is left out of the rows.
        file_format: "tsv", "csv" or "jsonl".
        has_header: see `read_examples`.

    Raises:
        ValueError naming the file and line: a missing column, a wrong column
        count, invalid JSON, a non-string JSON text.
    """
    if file_format == "jsonl":
        for role, column in columns.items():
            if column is not None and not isinstance(column, str):
                raise ValueError(f"JSONL columns are keys (strings). Received: {role}_column={column!r}")
        return _jsonl_rows(path, columns)
    return _delimited_rows(path, file_format, columns, has_header)


def _sorted_labels(values):
    """Stable label order: numerically if all labels are numbers, else as strings."""

    def number(value):
        try:
            return float(value)
        except ValueError:
            return None

    unique = sorted(set(values))
    if all(number(v) is not None for v in unique):
        return sorted(unique, key=lambda v: (number(v), v))
    return unique


def label_ids(labels, label_names, where):
    """Maps classification labels to ids in the order of `label_names`.

    Args:
        labels: `(position, label)` pairs, the label a string and position
            what `where` turns into the location an error names (a line
            number, an example index).
        label_names: labels in id order, or None to collect the labels,
            sorted numerically when all are numbers, else as strings.
        where: function of a position giving its location in error
            messages (e.g. "train.tsv:12").

    Returns:
        `(ids, label_names)`: int ids, one per label, and the label names
        (as str) they index.

    Raises:
        ValueError: a label not in `label_names`, naming its location.
    """
    if label_names is None:
        label_names = _sorted_labels([value for _, value in labels])
    label_names = [str(name) for name in label_names]
    index = {name: i for i, name in enumerate(label_names)}
    ids = []
    for position, value in labels:
        if value not in index:
            raise ValueError(f"{where(position)}: unknown label {value!r}. Known labels: {label_names}")
        ids.append(index[value])
    return ids, label_names


def read_examples(
    path,
    text_column,
    text_pair_column=None,
    label_column=None,
    task="classification",
    file_format=None,
    has_header=None,
    label_names=None,
    label_values=None,
):
    """Reads classification or regression examples from a TSV, CSV or JSONL file.

    TSV is read without quote handling (`csv.QUOTE_NONE`, as GLUE files need:
    MRPC text holds unbalanced `"`); CSV with standard quoting; JSONL one
    object per line. Invalid UTF-8 is decoded with U+FFFD replacement and a
    UTF-8 BOM is dropped. Blank lines are skipped; every other problem (a
    missing column, a wrong column count, an unknown label, a non-numeric
    regression target, invalid JSON) raises `ValueError` naming the file and
    line: no record is skipped silently.

    Args:
        path: the file (any `tf.io.gfile` path).
        text_column: header name / JSON key, or 0-based index (negative
            counts from the end) for header-less files.
        text_pair_column: the second segment's column, or None.
        label_column: the label column, or None (no labels: prediction).
        task: "classification" (string labels mapped to ids) or "regression"
            (float targets).
        file_format: "tsv", "csv" or "jsonl"; None infers it from the
            extension (.tsv, .csv, .jsonl/.json/.ndjson as JSON lines).
        has_header: whether the first TSV/CSV line names the columns; None
            means yes when any column is given by name, no when all are
            integer indices.
        label_names: classification labels in id order. None collects the
            file's labels, sorted numerically when all are numbers, else as
            strings; pass the training file's `label_names` when reading an
            evaluation file so ids agree. A label not in the list is an error.
        label_values: what the file holds for each of `label_names`, in the
            same order, when it holds something else than the names (GLUE's
            SST-2 holds "0"/"1" for "negative"/"positive"); None: the file
            holds the names.

    Returns:
        `ClassificationExamples`.
    """
    if task not in TASKS:
        raise ValueError(f"`task` must be one of {TASKS}. Received: task={task!r}")
    if label_values is not None and (label_names is None or len(label_values) != len(label_names)):
        raise ValueError(
            "`label_values` needs `label_names` of the same length. "
            f"Received: label_names={label_names!r}, label_values={label_values!r}"
        )
    file_format = file_format or infer_format(path)
    if file_format not in FORMATS:
        raise ValueError(f"`file_format` must be one of {FORMATS}. Received: file_format={file_format!r}")
    if text_column is None:
        raise ValueError("`text_column` is required. Received: text_column=None")
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"No such file: {path}")
    columns = {"text": text_column, "pair": text_pair_column, "label": label_column}
    rows = read_rows(path, columns, file_format, has_header)
    texts, pairs, raw_labels, lines = [], [], [], []
    for line, row in rows:
        texts.append(row["text"])
        if text_pair_column is not None:
            pairs.append(row["pair"])
        if label_column is not None:
            raw_labels.append((line, row["label"].strip()))
        lines.append(line)
    examples = ClassificationExamples(
        texts=texts, pairs=pairs if text_pair_column is not None else None, task=task, path=path, lines=lines
    )
    if label_column is None:
        examples.label_names = list(label_names) if label_names is not None else None
        return examples
    if task == "regression":
        examples.labels = [_to_float(path, line, value) for line, value in raw_labels]
        return examples
    if label_values is None:
        examples.labels, examples.label_names = label_ids(raw_labels, label_names, lambda line: f"{path}:{line}")
    else:
        examples.labels, _ = label_ids(raw_labels, label_values, lambda line: f"{path}:{line}")
        examples.label_names = [str(name) for name in label_names]
    return examples


def _to_float(path, line, value):
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is None or number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{path}:{line}: non-numeric regression target. Received: {value!r}")
    return number


def make_dataset(
    examples,
    tokenizer,
    max_seq_length,
    batch_size,
    shuffle=False,
    seed=0,
    repeat=False,
    max_position_embeddings=None,
    drop_remainder=False,
    truncation=None,
    with_index=False,
    long_text="truncate",
    window_stride=None,
    max_windows=MAX_WINDOWS,
):
    """Batches of encoder inputs (and labels) from `ClassificationExamples`.

    Tokenization and packing run in-graph on whole batches: `[CLS] A [SEP]`
    or `[CLS] A [SEP] B [SEP]`, segments trimmed before packing.

    Args:
        examples: `ClassificationExamples` (from `read_examples`).
        tokenizer: a `bert_tf.text.BertTokenizer`.
        max_seq_length: T.
        batch_size: B.
        shuffle: shuffle examples (a full-size buffer, seeded, a new order
            every pass).
        seed: shuffle seed.
        repeat: repeat forever.
        max_position_embeddings: the model's positions; a longer `max_seq_length` is
            refused.
        drop_remainder: drop a last partial batch (static batch shape).
        truncation: how pairs are cut to fit (`bert_tf.text.TRUNCATIONS`);
            None: the tokenizer's checkpoint's rule (`packer_for`: the
            original run_classifier's "longest_first", or Hugging Face's
            "hf_longest_first" for a checkpoint with a `tokenizer.json`).
        with_index: features also hold `example_index` int32 `[B]`, each row's
            position in `examples` (carried through shuffling and repeats).
        long_text: "truncate" (a text keeps its first pieces) or "windows":
            each text longer than a window becomes several rows, its
            overlapping windows (`bert_tf.text.windows`), each with the text's
            label and, always, its `example_index` (how an evaluation averages
            a text's windows); batches hold `batch_size` windows. One-text
            examples only.
        window_stride, max_windows: the windows' (see `check_long_text`).

    Returns:
        `tf.data.Dataset` of `(features, labels)`: features dict `token_ids`,
        `segment_ids`, `padding_mask` int32 `[B, T]`; labels int32 `[B]`
        (classification) or float32 `[B]` (regression). Without labels, the
        elements are the features alone.
    """
    if batch_size <= 0:
        raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
    window_stride = check_long_text(long_text, window_stride, max_windows, max_seq_length)
    windows = long_text == "windows"
    if windows and examples.pairs is not None:
        raise ValueError(
            "long_text='windows' cuts one-text examples into windows; these examples are pairs (text_pair_column): "
            "use long_text='truncate'."
        )
    with_index = with_index or windows
    packer = packer_for(
        tokenizer,
        max_seq_length,
        truncation=truncation,
        max_position_embeddings=max_position_embeddings,
    )
    columns = {"text": tf.constant(examples.texts, tf.string, shape=[len(examples)])}
    if examples.pairs is not None:
        columns["pair"] = tf.constant(examples.pairs, tf.string, shape=[len(examples)])
    if examples.labels is not None:
        dtype = tf.float32 if examples.task == "regression" else tf.int32
        columns["label"] = tf.constant(examples.labels, dtype, shape=[len(examples)])
    if with_index:
        columns["index"] = tf.range(len(examples), dtype=tf.int32)
    dataset = tf.data.Dataset.from_tensor_slices(columns)
    if shuffle:
        dataset = dataset.shuffle(max(len(examples), 1), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder and not windows)

    def encode(batch):  # dict of [B] -> (features [B, T], labels [B]); windows: [N] windows of the B texts
        segments = [tokenizer.tokenize(batch["text"])]  # [B, (P)]
        if "pair" in batch:
            segments.append(tokenizer.tokenize(batch["pair"]))
        if windows:
            segments[0], row, _ = windows_of(segments[0], max_seq_length, window_stride, max_windows)  # [N, (W)]
            batch = {key: tf.gather(value, row) for key, value in batch.items() if key != "text"}
        features = packer(*segments)
        if with_index:
            features = dict(features, example_index=batch["index"])
        return (features, batch["label"]) if "label" in batch else features

    dataset = dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if windows:  # batches of `batch_size` windows (a text's windows stay together, in order)
        dataset = dataset.unbatch().batch(batch_size, drop_remainder=drop_remainder)
    return dataset.prefetch(tf.data.AUTOTUNE)
