"""Reranking data: queries, each with its candidate passages and their relevance, for cross-encoders.

    from bert_tf.data import rerank
    groups = rerank.read_groups("triples.tsv")            # query \t positive [\t negative ...], one row each
    groups = rerank.read_groups("train.jsonl")            # {"query", "positive(s)"/"pos", "negative(s)"/"neg"}
    groups = rerank.read_labeled_pairs("pairs.tsv", "query", "passage", "label")  # (query, passage, 0/1/2...)
    groups = rerank.squad_groups(read_squad("train.json"), negatives=7, seed=0)   # question -> its paragraph
    rows = rerank.training_rows(groups, negatives=3, seed=0)   # (query, positive, 3 negatives) per positive
    dataset = rerank.make_dataset(rows, tokenizer, 256, batch_size=16)          # [B, 4, T] pairs

Formats (a query's rows are merged into one group wherever they are in the file,
its candidates in first-seen order, a passage given twice kept once):

- TSV/CSV without a header: `query, positive[, negative, ...]` (MS MARCO's
  `triples.train.small.tsv` is this with one negative); every row has at
  least two non-empty fields.
- JSONL: `query` (a string); positives under `positive`, `positives` or `pos`
  and negatives under `negative`, `negatives` or `neg`, each a string or a
  list of strings (sentence-transformers' and FlagEmbedding's layouts); at
  least one positive.
- Labeled pairs (`read_labeled_pairs`): TSV/CSV/JSONL rows of (query,
  passage, relevance) read by column as the classification readers read them;
  relevance a non-negative integer (0 not relevant; graded relevance counts
  in NDCG).
- SQuAD v1.1/v2.0 (`squad_groups`): each answerable question with its own
  paragraph as the positive, the other paragraphs of its article as hard
  negatives, then paragraphs of other articles at random, seeded.

Errors name the file and line. Tokenization and packing run in-graph: each
(query, passage) pair is packed `[CLS] query [SEP] passage [SEP]`, the
longer text cut first (the tokenizer's pair rule, `packer_for`).

Shape legend: Q queries, B queries in a batch, K candidates per training
query (1 positive + m negatives), P pairs, T tokens.
"""

import dataclasses
import json

import numpy as np
import tensorflow as tf

from bert_tf.data.classification import FORMATS, delimited_records, infer_format, read_rows
from bert_tf.text import packer_for

# JSONL keys of a query's positives and negatives, in the order they are read.
POSITIVE_KEYS = ("positive", "positives", "pos")
NEGATIVE_KEYS = ("negative", "negatives", "neg")


@dataclasses.dataclass
class RerankGroups:
    """Queries, each with its candidate passages and their relevance, in file order.

    Attributes:
        queries: the query texts `[Q]` (distinct).
        candidates: per query, its candidate passages (distinct, first-seen order).
        relevance: per query, an int per candidate: 0 not relevant, > 0
            relevant (graded: the gain NDCG counts).
        lines: per query, the 1-based line of its first row in `path` (None for
            SQuAD groups).
        path: the file read.
    """

    queries: list
    candidates: list
    relevance: list
    lines: list = None
    path: str = ""

    def __len__(self):
        return len(self.queries)

    @property
    def num_pairs(self):
        """The (query, candidate) pairs of every query."""
        return sum(len(c) for c in self.candidates)

    def subset(self, indices):
        """The queries at `indices`, in that order."""
        return RerankGroups(
            [self.queries[i] for i in indices],
            [self.candidates[i] for i in indices],
            [self.relevance[i] for i in indices],
            None if self.lines is None else [self.lines[i] for i in indices],
            self.path,
        )

    def pairs(self):
        """Every (query, candidate) pair, query by query: `(queries [P], passages [P], group [P])`, `group` the
        query's index."""
        queries, passages, group = [], [], []
        for i, (query, candidates) in enumerate(zip(self.queries, self.candidates)):
            queries += [query] * len(candidates)
            passages += list(candidates)
            group += [i] * len(candidates)
        return queries, passages, np.asarray(group, np.int64)


class _Grouper:
    """Collects (query, passage, relevance) in file order, merging a query's rows and a passage given twice (its
    highest relevance kept)."""

    def __init__(self, path):
        self.path = path
        self.index = {}  # query -> group index
        self.groups = RerankGroups([], [], [], [], path)
        self.positions = []  # per group: passage -> position

    def add(self, line, query, passage, relevance):
        if query not in self.index:
            self.index[query] = len(self.groups.queries)
            self.groups.queries.append(query)
            self.groups.candidates.append([])
            self.groups.relevance.append([])
            self.groups.lines.append(line)
            self.positions.append({})
        group = self.index[query]
        position = self.positions[group].get(passage)
        if position is None:
            self.positions[group][passage] = len(self.groups.candidates[group])
            self.groups.candidates[group].append(passage)
            self.groups.relevance[group].append(relevance)
        else:
            self.groups.relevance[group][position] = max(self.groups.relevance[group][position], relevance)

    def result(self, require_positive=True):
        if not self.groups.queries:
            raise ValueError(f"{self.path}: no query in the file (empty, or only blank lines).")
        if require_positive:
            for query, relevance, line in zip(self.groups.queries, self.groups.relevance, self.groups.lines):
                if not any(r > 0 for r in relevance):
                    raise ValueError(f"{self.path}:{line}: query {query!r} has no relevant passage (label > 0).")
        return self.groups


def _read_text(path):
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"No such file: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read().decode("utf-8-sig", errors="replace")


def _texts(path, line, record, keys, role):
    """The strings under the first of `keys` present in a JSON record (a string or a list of strings)."""
    texts = []
    for key in keys:
        if key not in record:
            continue
        value = record[key]
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError(
                f"{path}:{line}: {key!r} ({role}) must be a string or a list of strings. Received: {value!r}"
            )
        texts += values
    return texts


def _check_text(path, line, text, what):
    if not text.strip():
        raise ValueError(f"{path}:{line}: the {what} is empty.")


def read_groups(path, file_format=None):
    """Reads queries with their positive and negative passages from a TSV, CSV or JSONL file (module docstring).

    Args:
        path: the file (any `tf.io.gfile` path).
        file_format: "tsv", "csv" or "jsonl"; None: from the extension.

    Returns:
        `RerankGroups` (relevance 1 for positives, 0 for negatives; a passage
        that is a query's positive in one row and its negative in another is
        a positive).

    Raises:
        FileNotFoundError: no such file.
        ValueError naming the file and line: a row of fewer than two fields,
            an empty text, a JSON line that is not an object, a missing
            `query` or positive, a non-string text; no query.
    """
    file_format = file_format or infer_format(path)
    if file_format not in FORMATS:
        raise ValueError(f"`file_format` must be one of {FORMATS}. Received: file_format={file_format!r}")
    grouper = _Grouper(path)
    if file_format == "jsonl":
        for line, text in enumerate(_read_text(path).split("\n"), 1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{line}: invalid JSON (one JSON object per line expected): {e}") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{line}: expected a JSON object. Received: {type(record).__name__}")
            query = record.get("query")
            if not isinstance(query, str):
                raise ValueError(f"{path}:{line}: 'query' must be a string. Keys: {sorted(record)}")
            positives = _texts(path, line, record, POSITIVE_KEYS, "positive")
            negatives = _texts(path, line, record, NEGATIVE_KEYS, "negative")
            if not positives:
                raise ValueError(f"{path}:{line}: no positive passage (one of the keys {list(POSITIVE_KEYS)}).")
            _check_text(path, line, query, "query")
            for passage in positives + negatives:
                _check_text(path, line, passage, "passage")
            for passage in positives:
                grouper.add(line, query, passage, 1)
            for passage in negatives:
                grouper.add(line, query, passage, 0)
    else:
        for line, fields in delimited_records(path, file_format, _read_text(path)):
            if len(fields) < 2:
                raise ValueError(
                    f"{path}:{line}: a row is query, positive[, negative, ...] ({file_format.upper()} without a "
                    f"header); received {len(fields)} field."
                )
            _check_text(path, line, fields[0], "query (field 1)")
            for i, passage in enumerate(fields[1:], 2):
                _check_text(path, line, passage, f"passage (field {i})")
            grouper.add(line, fields[0], fields[1], 1)
            for passage in fields[2:]:
                grouper.add(line, fields[0], passage, 0)
    return grouper.result()


def _relevance(path, line, column, value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not np.isfinite(number) or number < 0 or number != int(number):
        raise ValueError(
            f"{path}:{line}: the relevance (column {column!r}) must be a non-negative integer (0 not relevant). "
            f"Received: {value!r}"
        )
    return int(number)


def read_labeled_pairs(path, query_column, passage_column, label_column, file_format=None, has_header=None):
    """Reads (query, passage, relevance) rows of a TSV, CSV or JSONL file and groups them by query.

    Args:
        path: the file.
        query_column, passage_column, label_column: header names / JSON keys,
            or 0-based indices of header-less TSV/CSV files (as
            `bert_tf.data.classification.read_examples` takes them).
        file_format, has_header: as `read_examples`'.

    Returns:
        `RerankGroups` with each row's relevance.

    Raises:
        ValueError naming the file and line: a missing column, an empty text,
            a relevance that is not a non-negative integer, a query with no
            relevant passage (and every `read_rows` error); no row.
    """
    if query_column is None or passage_column is None or label_column is None:
        raise ValueError(
            "Labeled pairs need the query, passage and label columns. Received: "
            f"query_column={query_column!r}, passage_column={passage_column!r}, label_column={label_column!r}"
        )
    file_format = file_format or infer_format(path)
    if file_format not in FORMATS:
        raise ValueError(f"`file_format` must be one of {FORMATS}. Received: file_format={file_format!r}")
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"No such file: {path}")
    grouper = _Grouper(path)
    columns = {"text": query_column, "pair": passage_column, "label": label_column}
    for line, row in read_rows(path, columns, file_format, has_header):
        _check_text(path, line, row["text"], f"query (column {query_column!r})")
        _check_text(path, line, row["pair"], f"passage (column {passage_column!r})")
        grouper.add(line, row["text"], row["pair"], _relevance(path, line, label_column, row["label"].strip()))
    return grouper.result()


def squad_groups(examples, negatives, seed=0, path=""):
    """Each answerable question of `SquadExample`s with its paragraph and `negatives` other paragraphs.

    The negatives are first the other paragraphs of the question's article
    (hard negatives, in a seeded random order), then paragraphs of the other
    articles drawn at random (seeded by `seed` and the question's position):
    the same examples and seed give the same groups. The positive is first in
    each group's candidates.

    Args:
        examples: `SquadExample`s (`read_squad`); unanswerable v2.0 questions
            are left out (their paragraph does not answer them).
        negatives: negatives per question (at least 0); fewer where the file
            has fewer other paragraphs.
        seed: the random order's seed.
        path: the file read (for `RerankGroups.path`).

    Returns:
        `RerankGroups`.
    """
    if negatives < 0:
        raise ValueError(f"`negatives` must be at least 0. Received: negatives={negatives}")
    examples = [e for e in examples if not e.is_impossible]
    paragraphs = list(dict.fromkeys(e.context for e in examples))
    article_of = {}
    for e in examples:
        article_of.setdefault(e.context, e.title)
    by_article = {}
    for p in paragraphs:
        by_article.setdefault(article_of[p], []).append(p)
    groups = RerankGroups([], [], [], None, path)
    for i, e in enumerate(examples):
        rng = np.random.default_rng([seed, i])
        same = [p for p in by_article[article_of[e.context]] if p != e.context]
        chosen = [same[j] for j in rng.permutation(len(same))][:negatives]
        others = [p for p in paragraphs if article_of[p] != article_of[e.context]]
        if len(chosen) < negatives and others:
            picks = rng.choice(len(others), min(negatives - len(chosen), len(others)), replace=False)
            chosen += [others[j] for j in picks]
        groups.queries.append(e.question)
        groups.candidates.append([e.context] + chosen)
        groups.relevance.append([1] + [0] * len(chosen))
    return groups


@dataclasses.dataclass
class TrainingRows:
    """Training examples of a cross-encoder: a query, one positive and `K - 1` negatives each.

    Attributes:
        queries: `[N]` query texts.
        candidates: `[N]` lists of K passages, the positive first.
    """

    queries: list
    candidates: list

    def __len__(self):
        return len(self.queries)

    @property
    def candidates_per_query(self):
        """K: the positive and the negatives."""
        return len(self.candidates[0]) if self.candidates else 0


def training_rows(groups, negatives, seed=0):
    """One training example per (query, relevant passage): the passage and `negatives` non-relevant ones.

    A query's own non-relevant candidates come first (in a seeded random
    order); where it has fewer than `negatives`, the rest are drawn at random
    from the other queries' candidates (never one of this query's relevant
    passages). Deterministic in `seed`.

    Raises:
        ValueError: `negatives` < 0, or more than the distinct passages of all
            groups can give one query.
    """
    if negatives < 0:
        raise ValueError(f"`negatives` must be at least 0. Received: negatives={negatives}")
    pool = list(dict.fromkeys(p for candidates in groups.candidates for p in candidates))
    rows = TrainingRows([], [])
    for i, (query, candidates, relevance) in enumerate(zip(groups.queries, groups.candidates, groups.relevance)):
        rng = np.random.default_rng([seed, i])
        relevant = {p for p, r in zip(candidates, relevance) if r > 0}
        own = [p for p, r in zip(candidates, relevance) if r <= 0]
        for positive in [p for p, r in zip(candidates, relevance) if r > 0]:
            chosen = [own[j] for j in rng.permutation(len(own))][:negatives]
            while len(chosen) < negatives:
                if len(pool) - len(relevant) - len(chosen) <= 0:
                    raise ValueError(
                        f"{groups.path or 'the data'}: {negatives} negatives per query, but query {query!r} can "
                        f"have only {len(chosen)} (the data holds {len(pool)} distinct passages)."
                    )
                passage = pool[rng.integers(len(pool))]
                if passage not in relevant and passage not in chosen:
                    chosen.append(passage)
            rows.queries.append(query)
            rows.candidates.append([positive] + chosen)
    return rows


def _pack_pairs(packer, tokenizer, queries, passages):
    """Encoder inputs `[N, T]` of N (query, passage) pairs."""
    return packer(tokenizer.tokenize(queries), tokenizer.tokenize(passages))


def make_dataset(
    rows, tokenizer, max_seq_length, batch_size, shuffle=False, seed=0, repeat=False, max_position_embeddings=None
):
    """Batches of `[B, K, T]` (query, candidate) pairs from `TrainingRows` (the last partial batch dropped).

    Returns:
        `tf.data.Dataset` of `(features, relevance)`: features dict
        `token_ids`, `segment_ids`, `padding_mask` int32 `[B, K, T]`, the
        positive at `[:, 0]`; relevance float32 `[B, K]` (1 at the positive,
        0 at the negatives).
    """
    if batch_size <= 0:
        raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
    if not len(rows):
        raise ValueError("No training rows.")
    packer = packer_for(tokenizer, max_seq_length, max_position_embeddings=max_position_embeddings)
    n, k = len(rows), rows.candidates_per_query
    queries = tf.constant(rows.queries, tf.string, shape=[n])
    passages = tf.constant(rows.candidates, tf.string, shape=[n, k])
    dataset = tf.data.Dataset.from_tensor_slices((queries, passages))
    if shuffle:
        dataset = dataset.shuffle(max(n, 1), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.batch(batch_size, drop_remainder=True)
    relevance = tf.one_hot(0, k)  # [K]: the positive first

    def encode(queries, passages):  # [B], [B, K] -> [B, K, T]
        b = tf.shape(queries)[0]
        flat = _pack_pairs(packer, tokenizer, tf.repeat(queries, k), tf.reshape(passages, [-1]))  # [B*K, T]
        features = {name: tf.reshape(value, [b, k, -1]) for name, value in flat.items()}
        return features, tf.tile(relevance[None], [b, 1])

    return dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)


def pair_dataset(queries, passages, tokenizer, max_seq_length, batch_size, max_position_embeddings=None):
    """Batches of `[B, T]` encoder inputs of (query, passage) pairs, in order (for scoring every candidate)."""
    if batch_size <= 0:
        raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
    packer = packer_for(tokenizer, max_seq_length, max_position_embeddings=max_position_embeddings)
    n = len(queries)
    dataset = tf.data.Dataset.from_tensor_slices(
        (tf.constant(queries, tf.string, shape=[n]), tf.constant(passages, tf.string, shape=[n]))
    ).batch(batch_size)
    dataset = dataset.map(lambda q, p: _pack_pairs(packer, tokenizer, q, p), num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)
