"""Text pairs for sentence-embedding training: (anchor, positive[, negative]) or scored (text, text, score).

    from bert_tf.data import text_pairs
    pairs = text_pairs.read_text_pairs("pairs.tsv", "question", "answer")           # in-batch negatives
    pairs = text_pairs.read_text_pairs("triplets.jsonl", "q", "pos", negative_column="neg")
    pairs = text_pairs.read_text_pairs("sts.tsv", "sentence1", "sentence2", score_column="score")
    pairs = text_pairs.squad_pairs(read_squad("train.json"))                        # question -> its paragraph

Reading is Python (errors name the file and line, as `read_examples`);
`make_dataset` tokenizes and packs in-graph, each text on its own
(`[CLS] text [SEP]`), into `[B, K, T]` encoder inputs.

Shape legend: B examples, K texts per example (2 or 3), T tokens.
"""

import dataclasses
import math

import tensorflow as tf

from bert_tf.data.classification import FORMATS, infer_format, read_rows
from bert_tf.text import packer_for


@dataclasses.dataclass
class TextPairs:
    """Examples of two or three texts, in file order.

    Attributes:
        anchors: first texts (queries).
        positives: the texts each anchor goes with (or is scored against).
        negatives: hard negatives, one per example, or None.
        scores: gold similarity scores (floats), or None for unscored pairs.
        lines: 1-based line of each example in `path` (None for SQuAD pairs).
        path: the file read.
    """

    anchors: list
    positives: list
    negatives: list = None
    scores: list = None
    lines: list = None
    path: str = ""

    def __len__(self):
        return len(self.anchors)

    @property
    def texts_per_example(self):
        """K: 2 (anchor, positive) or 3 (with a negative)."""
        return 2 if self.negatives is None else 3

    def subset(self, indices):
        """The examples at `indices`, in that order."""

        def pick(values):
            return None if values is None else [values[i] for i in indices]

        return TextPairs(
            pick(self.anchors),
            pick(self.positives),
            pick(self.negatives),
            pick(self.scores),
            pick(self.lines),
            self.path,
        )


def _score(path, line, column, value):
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ValueError(f"{path}:{line}: the score (column {column!r}) must be a finite number. Received: {value!r}")
    return number


def read_text_pairs(
    path, text_column, text_pair_column, negative_column=None, score_column=None, file_format=None, has_header=None
):
    """Reads text pairs (or triplets, or scored pairs) from a TSV, CSV or JSONL file.

    Args:
        path: the file (any `tf.io.gfile` path).
        text_column, text_pair_column: the anchor's and the positive's columns
            (header names / JSON keys, or 0-based indices of header-less files).
        negative_column: the hard negative's column, or None.
        score_column: the gold score's column (floats), or None.
        file_format, has_header: as in `bert_tf.data.classification.read_examples`.

    Returns:
        `TextPairs`.

    Raises:
        FileNotFoundError: no such file.
        ValueError naming the file and line: an empty text, a non-numeric
            score, a missing column (and every `read_rows` error); no example.
    """
    if text_column is None or text_pair_column is None:
        raise ValueError(
            "Text pairs need both columns. "
            f"Received: text_column={text_column!r}, text_pair_column={text_pair_column!r}"
        )
    if negative_column is not None and score_column is not None:
        raise ValueError(
            "Scored pairs have no negatives: give negative_column or score_column, not both. "
            f"Received: negative_column={negative_column!r}, score_column={score_column!r}"
        )
    file_format = file_format or infer_format(path)
    if file_format not in FORMATS:
        raise ValueError(f"`file_format` must be one of {FORMATS}. Received: file_format={file_format!r}")
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"No such file: {path}")
    columns = {"text": text_column, "pair": text_pair_column, "negative": negative_column, "score": score_column}
    named = {"text": text_column, "pair": text_pair_column, "negative": negative_column}
    pairs = TextPairs([], [], [] if negative_column is not None else None, [] if score_column is not None else None)
    pairs.lines, pairs.path = [], path
    for line, row in read_rows(path, columns, file_format, has_header):
        for role, column in named.items():
            if column is not None and not row[role].strip():
                raise ValueError(f"{path}:{line}: the text of column {column!r} is empty.")
        pairs.anchors.append(row["text"])
        pairs.positives.append(row["pair"])
        if negative_column is not None:
            pairs.negatives.append(row["negative"])
        if score_column is not None:
            pairs.scores.append(_score(path, line, score_column, row["score"].strip()))
        pairs.lines.append(line)
    if not pairs.anchors:
        raise ValueError(f"{path}: no example in the file (empty, or only blank lines).")
    return pairs


def squad_pairs(examples, path=""):
    """(question, its paragraph) pairs of `SquadExample`s (from `read_squad`), in file order."""
    return TextPairs([e.question for e in examples], [e.context for e in examples], path=path)


def make_dataset(
    pairs, tokenizer, max_seq_length, batch_size, shuffle=False, seed=0, repeat=False, max_position_embeddings=None
):
    """Batches of `[B, K, T]` encoder inputs from `TextPairs` (the last partial batch dropped).

    Each text is tokenized and packed on its own (`[CLS] text [SEP]`, cut to
    `max_seq_length`), anchors at `[:, 0]`, positives at `[:, 1]`, negatives
    at `[:, 2]`.

    Returns:
        `tf.data.Dataset` of `(features, scores, positive_ids)`: features dict
        `token_ids`, `segment_ids`, `padding_mask` int32 `[B, K, T]`; scores
        float32 `[B]` (zeros for unscored pairs); positive_ids int32 `[B]`, the
        index of each positive among the distinct positive texts (equal texts,
        equal ids: several questions of one paragraph).
    """
    if batch_size <= 0:
        raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
    packer = packer_for(tokenizer, max_seq_length, max_position_embeddings=max_position_embeddings)
    n = len(pairs)
    columns = [pairs.anchors, pairs.positives] + ([pairs.negatives] if pairs.negatives is not None else [])
    texts = tf.constant(list(zip(*columns)), tf.string, shape=[n, len(columns)])  # [N, K]
    scores = tf.constant(pairs.scores if pairs.scores is not None else [0.0] * n, tf.float32, shape=[n])
    distinct = {}
    positive_ids = tf.constant([distinct.setdefault(p, len(distinct)) for p in pairs.positives], tf.int32, shape=[n])
    dataset = tf.data.Dataset.from_tensor_slices((texts, scores, positive_ids))
    if shuffle:
        dataset = dataset.shuffle(max(n, 1), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.batch(batch_size, drop_remainder=True)

    def encode(texts, scores, positive_ids):  # [B, K] strings -> [B, K, T] features
        k = texts.shape[1]
        packed = [packer(tokenizer.tokenize(texts[:, i])) for i in range(k)]  # K x {name: [B, T]}
        features = {name: tf.stack([p[name] for p in packed], axis=1) for name in packed[0]}
        return features, scores, positive_ids

    return dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)
