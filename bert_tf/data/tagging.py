"""Token classification (NER) data: CoNLL column files to word-aligned token labels in tf.data.

Alignment: each word is tokenized on its own (in-graph, ragged `[S, (W)]` ->
flat words -> `[S, (W), (P)]`); the word's tag labels its FIRST piece, the
other pieces, `[CLS]`, `[SEP]` and padding get weight 0. A word that gives no
piece at all (only control or zero-width characters) becomes one `[UNK]`, so
every word owns exactly one labelled piece and predictions map back to every
word.

Windows, not truncation: a sentence longer than `max_seq_length - 2` pieces is cut
into several windows of at most `max_seq_length - 2` pieces, starting every
`stride` pieces (default: no overlap). Every word is labelled in exactly one
window: the one in which its first piece has the most context on both sides
(as BERT's SQuAD "max context"), so training counts each word once and
`word_predictions` gives back a tag for every word; no label is lost in
evaluation.

Shapes: S sentences, W words, P pieces, N windows, B batch, T max_seq_length.
"""

import dataclasses
import re

import numpy as np
import tensorflow as tf

from bert_tf.metrics import split_tag
from bert_tf.text import packer_for

SCHEMES = ("auto", "BIO", "IOB1")
_DOCSTART = "-DOCSTART-"


@dataclasses.dataclass
class ConllData:
    """Sentences read from a CoNLL column file.

    Attributes:
        sentences: one list of words per sentence.
        tags: one list of tags per sentence (BIO after any IOB1 conversion).
        label_names: the file's tags, "O" first, then by entity type with B-
            before I-.
        scheme: the scheme the file was read as ("BIO" or "IOB1").
        path: the file read.
        lines: 1-based line of each sentence's first word.
    """

    sentences: list
    tags: list
    label_names: list
    scheme: str
    path: str = ""
    lines: list = dataclasses.field(default_factory=list)

    def __len__(self):
        return len(self.sentences)


def _starts_entity_with_i(previous, tag):
    """Whether an I- tag opens an entity (IOB1 style; illegal in BIO)."""
    prefix, kind = split_tag(tag, lenient=True)
    if prefix != "I":
        return False
    previous_prefix, previous_kind = split_tag(previous, lenient=True) if previous else (None, None)
    return previous_prefix is None or previous_kind != kind


def iob1_to_bio(tags):
    """Converts one sentence's IOB1 tags to BIO (IOB2).

    In IOB1 an entity starts with I- unless it follows an entity of the same
    type (then B-). In BIO every entity starts with B-. BIO input is left
    unchanged.

    Args:
        tags: list of str.

    Returns:
        list of str.
    """
    converted = []
    previous = None
    for tag in tags:
        if _starts_entity_with_i(previous, tag):
            converted.append("B-" + split_tag(tag, lenient=True)[1])
        else:
            converted.append(tag)
        previous = tag
    return converted


def to_bio(tags, scheme="auto"):
    """Tags of a whole data set as BIO, and the scheme they were read as.

    Args:
        tags: one list of tags per sentence.
        scheme: "BIO" (tags kept as they are), "IOB1" (converted to BIO) or
            "auto": IOB1 when some I- tag opens an entity (after "O" or
            another type), which BIO never does; otherwise BIO.

    Returns:
        `(tags, scheme)`: the tags in BIO, and "BIO" or "IOB1".
    """
    if scheme not in SCHEMES:
        raise ValueError(f"`scheme` must be one of {SCHEMES}. Received: scheme={scheme!r}")
    if scheme == "auto":
        iob1 = any(
            _starts_entity_with_i(prev, tag) for sentence in tags for prev, tag in zip([None] + sentence[:-1], sentence)
        )
        scheme = "IOB1" if iob1 else "BIO"
    if scheme == "IOB1":
        tags = [iob1_to_bio(sentence) for sentence in tags]
    return tags, scheme


def _label_order(tag):
    prefix, kind = split_tag(tag, lenient=True)
    return (tag != "O", kind, prefix or "")


def sorted_label_names(tags):
    """Label names of tag lists: "O" first, then by type, B- before I-."""
    names = {tag for sentence in tags for tag in sentence} | {"O"}
    return sorted(names, key=_label_order)


def _read_lines(path):
    """Lines split at "\n" only (a word may hold U+0085 or U+2028, which str.splitlines splits at)."""
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read().decode("utf-8-sig", errors="replace").split("\n")


def _columns(line):
    """Fields split at spaces and tabs only: a word may hold other Unicode spaces (U+00A0)."""
    return [field for field in re.split(r"[ \t]+", line.strip(" \t\r")) if field]


def read_conll(path, column=-1, scheme="auto", word_column=0):
    """Reads a CoNLL column file (one word a line, blank lines between sentences).

    Columns are split at spaces and tabs; `-DOCSTART-` lines are skipped. A line
    with a different number of columns than the file's first word line, or
    without the requested column, raises `ValueError` naming file and line.
    Invalid UTF-8 is decoded with U+FFFD replacement.

    Args:
        path: the file (any `tf.io.gfile` path).
        column: the tag column (default: the last).
        scheme: "BIO" (tags kept as they are), "IOB1" (converted to BIO) or
            "auto": IOB1 when some I- tag opens an entity (after "O" or
            another type), which BIO never does; otherwise BIO.
        word_column: the word column.

    Returns:
        `ConllData`.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"`scheme` must be one of {SCHEMES}. Received: scheme={scheme!r}")
    sentences, tags, lines = [], [], []
    words, sentence_tags, width = [], [], None
    for line, text in enumerate(_read_lines(path), 1):
        fields = _columns(text)
        if not fields or fields[0] == _DOCSTART:
            if words:
                sentences.append(words)
                tags.append(sentence_tags)
                words, sentence_tags = [], []
            continue
        width = width or len(fields)
        if len(fields) != width:
            raise ValueError(
                f"{path}:{line}: malformed line: expected {width} columns (as the first word line), "
                f"received {len(fields)}: {text!r}"
            )
        for name, index in (("column", column), ("word_column", word_column)):
            if not -width <= index < width:
                raise ValueError(f"{path}:{line}: malformed line: no column {index} ({name}) in {width} columns")
        if not words:
            lines.append(line)
        words.append(fields[word_column])
        sentence_tags.append(fields[column])
    if words:
        sentences.append(words)
        tags.append(sentence_tags)
    tags, scheme = to_bio(tags, scheme)
    return ConllData(
        sentences=sentences, tags=tags, label_names=sorted_label_names(tags), scheme=scheme, path=path, lines=lines
    )


def _tag_ids(sentences, tags, label_names):
    """Flat int32 tag ids, with errors naming the sentence."""
    ids = {name: i for i, name in enumerate(label_names)}
    flat = []
    for i, (words, sentence_tags) in enumerate(zip(sentences, tags)):
        if len(words) != len(sentence_tags):
            raise ValueError(f"Sentence {i} has {len(words)} words but {len(sentence_tags)} tags")
        for tag in sentence_tags:
            if tag not in ids:
                raise ValueError(f"Sentence {i}: unknown tag {tag!r}. Known labels: {list(label_names)}")
            flat.append(ids[tag])
    return np.asarray(flat, np.int32)


def _unk_if_empty(pieces, unk_id):
    """Gives a word with no piece one `[UNK]`: ragged `[W, (P)]` -> `[W, (P >= 1)]`."""
    empty = tf.cast(tf.equal(pieces.row_lengths(), 0), pieces.row_splits.dtype)  # [W]
    unk = tf.RaggedTensor.from_row_lengths(tf.fill([tf.reduce_sum(empty)], tf.constant(unk_id, pieces.dtype)), empty)
    return tf.concat([pieces, unk], axis=1)


def _owner_windows(position, length, num_windows, budget, stride):
    """The window that labels a piece: most context on both sides.

    Args:
        position: int64 `[P]`, piece index in its sentence.
        length: int64 `[P]`, pieces of its sentence.
        num_windows: int64 `[P]`, windows of its sentence.

    Returns:
        int64 `[P]`, the window number within the sentence.
    """
    last = tf.minimum(position // stride, num_windows - 1)  # latest window starting at or before the piece
    if stride == budget:
        return last
    candidates = last[:, None] - tf.range(-(-budget // stride), dtype=tf.int64)[None, :]  # [P, m]
    start = candidates * stride
    end = tf.minimum(start + budget, length[:, None])
    valid = tf.logical_and(candidates >= 0, end > position[:, None])
    score = tf.minimum(position[:, None] - start, end - 1 - position[:, None])
    score = tf.where(valid, score, -1)
    best = tf.argmax(score, axis=1, output_type=tf.int64)  # first max: the latest window on ties
    return tf.gather(candidates, best, batch_dims=1)


class _Windower:
    """Sentences (ragged words and tag ids) -> packed windows with word-aligned labels."""

    def __init__(self, tokenizer, max_seq_length, stride, max_position_embeddings):
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.budget = max_seq_length - 2  # [CLS] and [SEP]
        self.stride = stride
        self.packer = packer_for(
            tokenizer,
            max_seq_length,
            max_position_embeddings=max_position_embeddings,
        )

    @tf.autograph.experimental.do_not_convert  # graph code: nothing for autograph to convert (text/base.py)
    def __call__(self, index, words, tag_ids):
        """One batch of sentences to windows.

        Args:
            index: int64 `[S]`, sentence numbers.
            words: ragged tf.string `[S, (W)]`.
            tag_ids: ragged int32 `[S, (W)]`.

        Returns:
            dict of `[N, T]` tensors (`token_ids`, `segment_ids`,
            `padding_mask`, `labels`, `weights`, `word_index`) and
            `sentence_index` `[N]`.
        """
        words = words.with_row_splits_dtype(tf.int64)
        pieces = self.tokenizer.tokenize(words.flat_values).with_row_splits_dtype(tf.int64)  # [W', (P)]
        pieces = _unk_if_empty(pieces, self.tokenizer.unk_id)
        sentence_pieces = words.with_flat_values(pieces).merge_dims(1, 2)  # [S, (L)]

        # Per piece [P']: its word, whether it is the word's first, its place in the sentence.
        word = pieces.value_rowids()
        first = tf.equal(tf.range(tf.size(word, out_type=tf.int64)), tf.gather(pieces.row_starts(), word))
        sentence_of_word = words.value_rowids()
        word_in_sentence = tf.gather(
            tf.range(tf.size(sentence_of_word, out_type=tf.int64)) - tf.gather(words.row_starts(), sentence_of_word),
            word,
        )
        label = tf.gather(tag_ids.flat_values, word)
        sentence = sentence_pieces.value_rowids()
        position = tf.range(tf.size(sentence, out_type=tf.int64)) - tf.gather(sentence_pieces.row_starts(), sentence)
        length = sentence_pieces.row_lengths()  # [S]
        num_windows = 1 + tf.maximum(length - self.budget + self.stride - 1, 0) // self.stride  # [S]
        owner = _owner_windows(
            position, tf.gather(length, sentence), tf.gather(num_windows, sentence), self.budget, self.stride
        )

        # Windows [N]: pieces [k * stride, k * stride + budget) of their sentence.
        window_sentence = tf.repeat(tf.range(tf.size(length, out_type=tf.int64)), num_windows)
        window_number = tf.ragged.range(num_windows).flat_values
        base = tf.gather(sentence_pieces.row_starts(), window_sentence) + window_number * self.stride
        end = tf.gather(sentence_pieces.row_starts() + length, window_sentence)
        take = tf.ragged.range(base, tf.minimum(base + self.budget, end))  # [N, (n)] flat piece indices
        flat_take = take.flat_values
        labelled = tf.logical_and(
            tf.gather(first, flat_take),
            tf.equal(tf.gather(owner, flat_take), tf.gather(window_number, take.value_rowids())),
        )
        inside = lambda values: take.with_flat_values(values)  # noqa: E731
        features = self.packer(inside(tf.gather(sentence_pieces.flat_values, flat_take)))
        labels = tf.where(labelled, tf.gather(label, flat_take), 0)
        word_index = tf.where(labelled, tf.gather(word_in_sentence, flat_take), -1)
        return dict(
            features,
            labels=self._pad(inside(labels), 0),
            weights=tf.cast(self._pad(inside(tf.cast(labelled, tf.int32)), 0), tf.float32),
            word_index=self._pad(inside(tf.cast(word_index, tf.int32)), -1),
            sentence_index=tf.cast(tf.gather(index, window_sentence), tf.int32),
        )

    def _pad(self, values, fill):
        """Ragged int32 `[N, (n)]` laid out as packed tokens `[N, T]`: fill at [CLS], [SEP], padding."""
        values = tf.cast(values, tf.int32)
        head = tf.fill([values.nrows(), 1], fill)
        return tf.concat([head, values], axis=1).to_tensor(fill, shape=[None, self.max_seq_length])


def make_dataset(
    sentences,
    tags,
    tokenizer,
    label_names,
    max_seq_length,
    batch_size,
    shuffle=False,
    seed=0,
    repeat=False,
    stride=None,
    max_position_embeddings=None,
    drop_remainder=False,
    with_word_index=False,
    shuffle_buffer=10_000,
    sentences_per_map=128,
):
    """Batches of windows with first-piece word labels (see the module docstring).

    Args:
        sentences: list of word lists.
        tags: list of tag lists (same lengths), or None for prediction.
        tokenizer: a `bert_tf.text.BertTokenizer`.
        label_names: tags in id order (`ConllData.label_names` of the
            training file); an unknown tag is an error.
        max_seq_length: T.
        batch_size: B, windows per batch.
        shuffle: shuffle windows (seeded buffer, a new order every pass).
        seed: shuffle seed.
        repeat: repeat forever.
        stride: pieces between window starts in a long sentence; None (no
            overlap) is `max_seq_length - 2`. Smaller values give overlapping
            windows, each word still labelled once.
        max_position_embeddings: the model's positions; a longer `max_seq_length` is
            refused.
        drop_remainder: drop a last partial batch (then some words get no
            prediction).
        with_word_index: also yield the word index map for `word_predictions`.
        shuffle_buffer: windows in the shuffle buffer.
        sentences_per_map: sentences tokenized together.

    Returns:
        `tf.data.Dataset` of `(features, labels, sample_weights)`: features
        dict `token_ids`, `segment_ids`, `padding_mask` int32 `[B, T]`;
        labels int32 `[B, T]` (the word's tag id on its first piece, else 0);
        sample weights float32 `[B, T]` (1 on first pieces of the words this
        window labels, else 0). Without tags, the features alone. With
        `with_word_index`, a last element dict `sentence_index` int32 `[B]`
        and `word_index` int32 `[B, T]` (the word a labelled token stands
        for, -1 elsewhere).
    """
    if batch_size <= 0:
        raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
    if max_seq_length < 3:
        raise ValueError(f"`max_seq_length` must be at least 3. Received: max_seq_length={max_seq_length}")
    stride = stride or max_seq_length - 2
    if not 0 < stride <= max_seq_length - 2:
        raise ValueError(
            f"`stride` must be in [1, max_seq_length - 2 = {max_seq_length - 2}]. Received: stride={stride}"
        )
    lengths = np.asarray([len(words) for words in sentences], np.int64)
    flat_words = [word for words in sentences for word in words]
    if tags is not None:
        if len(tags) != len(sentences):
            raise ValueError(
                f"`tags` must have one list per sentence. Received: {len(tags)} tag lists for "
                f"{len(sentences)} sentences"
            )
        flat_tags = _tag_ids(sentences, tags, label_names)
    else:
        flat_tags = np.zeros([len(flat_words)], np.int32)
    columns = (
        tf.range(len(sentences), dtype=tf.int64),
        tf.RaggedTensor.from_row_lengths(tf.constant(flat_words, tf.string, shape=[len(flat_words)]), lengths),
        tf.RaggedTensor.from_row_lengths(tf.constant(flat_tags, tf.int32), lengths),
    )
    windower = _Windower(tokenizer, max_seq_length, stride, max_position_embeddings)
    dataset = tf.data.Dataset.from_tensor_slices(columns).ragged_batch(sentences_per_map)
    dataset = dataset.map(windower, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch()
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)

    def split(batch):
        features = {k: batch[k] for k in ("token_ids", "segment_ids", "padding_mask")}
        element = (features,) if tags is None else (features, batch["labels"], batch["weights"])
        if with_word_index:
            element += ({"sentence_index": batch["sentence_index"], "word_index": batch["word_index"]},)
        return element[0] if len(element) == 1 else element

    return dataset.map(split).prefetch(tf.data.AUTOTUNE)


def _concat(parts):
    if isinstance(parts, (list, tuple)):
        return np.concatenate([np.asarray(p) for p in parts], axis=0)
    return np.asarray(parts)


def word_predictions(predictions, word_index, label_names=None, num_words=None):
    """Maps token predictions back to words.

    Args:
        predictions: logits `[N, T, C]` or predicted ids `[N, T]` (numpy or
            tensors), or a list of such batches.
        word_index: the matching `with_word_index` dict(s) of `make_dataset`
            (`sentence_index` `[N]`, `word_index` `[N, T]`), or a list of them.
        label_names: if given, tags are returned as names, else as ids.
        num_words: optional words per sentence; it fixes the number and length
            of the returned lists (else the largest indices seen do).

    Returns:
        list, per sentence (by sentence number), of per-word tags; a word no
        window predicted (only when batches were dropped) is None.
    """
    if isinstance(word_index, dict):
        word_index = [word_index]
    sentence = _concat([w["sentence_index"] for w in word_index]).astype(np.int64)  # [N]
    words = _concat([w["word_index"] for w in word_index]).astype(np.int64)  # [N, T]
    predictions = _concat(predictions)
    if predictions.ndim == 3:
        predictions = predictions.argmax(-1)
    if predictions.shape != words.shape:
        raise ValueError(
            f"`predictions` must match `word_index` [N, T]. Received: predictions.shape="
            f"{predictions.shape}, word_index.shape={words.shape}"
        )
    rows, cols = np.nonzero(words >= 0)
    sentence_of = sentence[rows]
    word_of = words[rows, cols]
    predicted = predictions[rows, cols]
    if num_words is None:
        num_sentences = int(sentence.max()) + 1 if sentence.size else 0
        num_words = np.zeros([num_sentences], np.int64)
        np.maximum.at(num_words, sentence_of, word_of + 1)
    result = [[None] * int(n) for n in num_words]
    for s, w, p in zip(sentence_of.tolist(), word_of.tolist(), predicted.tolist()):
        result[s][w] = label_names[p] if label_names is not None else p
    return result
