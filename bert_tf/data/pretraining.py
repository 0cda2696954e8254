"""Pretraining data in tf.data: raw text to masked `(features, labels, sample_weights)` batches.

Everything runs in-graph: reading, document grouping, tokenization, pair
building with next-sentence labels, packing and dynamic masking. Randomness is
stateless (a hash of seed, epoch and indices) or a seeded shuffle buffer, so
runs are reproducible, masks change every epoch and the iterator can be saved
in a `tf.train.Checkpoint`.

Corpus formats:
- "lines": one sentence per line, a blank line between documents (the
  format of the original `create_pretraining_data.py`);
- "paragraphs": one paragraph (document) per line, split into sentences at
  `.`, `!` or `?` followed by whitespace.

Bounded memory on any input: a "sentence" longer than MAX_SENTENCE_BYTES is
split at sentence ends (then cut between characters); a document longer than
MAX_DOCUMENT_BYTES is cut into documents of consecutive sentences; a group ends
early when its documents reach MAX_GROUP_BYTES. Ordinary corpora are under all
three and pair exactly as without them; a single 10 MB line becomes forty
documents in five groups rather than one group the pair builder cannot hold.

How pairs are made (`packing="pairs"`), per group of `group_size` documents:
each document is cut into chunks of about `target` pieces (`target` is
`max_seq_length - 3`, or with probability `short_seq_prob` a shorter random
length, drawn per document); a chunk of m sentences splits at a random
sentence boundary into A and B (m = 1: in the middle of the sentence). NSP:
with probability 1/2 (when the group has another document) B is replaced by a
run of pieces from a random other document of the group, and the label is 1
("random next"). SOP (ALBERT): B always follows A in the document, and with
probability 1/2 the two are swapped, label 1 ("swapped", Hugging Face's
`sentence_order_label`). No sentence objective: the whole chunk is the one
segment. Pairs longer than the sequence are trimmed longest-first before
packing.

How sentence packings are made (`packing="full_sentences"` / `"doc_sentences"`,
RoBERTa's FULL-SENTENCES / DOC-SENTENCES, one segment, no sentence objective):
a group's sentences, in order, fill sequences of at most `max_seq_length - 2`
pieces greedily with whole sentences (a sentence longer than that is cut into
parts of that length, nothing dropped). full_sentences continues across the
documents of a group with one separator token (the tokenizer's `sep_id`)
between two documents; doc_sentences starts a new sequence at each document
(the last one of a document is shorter). A sequence never crosses a group
boundary (nor a document cut at MAX_DOCUMENT_BYTES in doc_sentences), so the
last sequence of a group may be shorter too.

Shapes: B batch, T max_seq_length, P max_predictions_per_seq.
"""

import math
import os

import tensorflow as tf

from bert_tf.text import MaskedLMMasker, expand_files, packer_for
from bert_tf.text.masking import MASKING_MODES, example_keys, replacement_uniforms, uniform

FORMATS = ("lines", "paragraphs")
# The sentence-level objective of a pretraining example: next-sentence prediction (BERT: B is A's continuation
# or a random segment), sentence-order prediction (ALBERT: A and B in order or swapped) or none (RoBERTa).
SENTENCE_OBJECTIVES = ("nsp", "sop", "none")
# How examples are cut from documents: segment pairs (BERT, ALBERT), or one segment filled with whole sentences
# that may cross document ends, with a separator there (RoBERTa's FULL-SENTENCES), or that stop at them
# (DOC-SENTENCES). The two sentence packings carry no sentence objective.
PACKINGS = ("pairs", "full_sentences", "doc_sentences")
# Which tokens are masked: single pieces (BERT), whole words (BERT's whole-word masking) or spans of whole
# words of geometric length (SpanBERT).
MASKINGS = MASKING_MODES
MAX_MASKING_RATE = 0.5
# The token-level objective: masked LM (BERT and the family), or ELECTRA's replaced-token detection, whose
# generator learns masked LM while a discriminator judges every token (`bert_tf.models.ElectraPretrainer`).
OBJECTIVES = ("mlm", "rtd")
# ELECTRA's masking of the generator's input: a selected token becomes [MASK] 85% of the time and stays itself
# otherwise (no random tokens: the generator's samples are the replacements).
RTD_MASK_TOKEN_RATE = 0.85
# Random streams of the pair builder (the masker uses 1-3).
_SPLIT, _RANDOM_NEXT, _OTHER_DOC, _OTHER_START, _SHORT, _SHORT_LENGTH, _SWAP = 11, 12, 13, 14, 15, 16, 17
_SENTENCE_END = r"([.!?][\"')\]]*)\s+"
# A "sentence" (a line of the lines format, a sentence of the paragraphs format) longer than
# MAX_SENTENCE_BYTES is split at sentence ends, and a part still longer is cut every PIECE_BYTES
# bytes (between UTF-8 characters), before tokenization: memory and work per example stay bounded.
MAX_SENTENCE_BYTES = 4096
PIECE_BYTES = 512
# A longer document is cut into documents of consecutive sentences of about this size (its random-next
# segments may then come from another part of it), and a group of documents ends early at MAX_GROUP_BYTES:
# the pair builder holds a group's pieces several times over (about 70 bytes per byte of text).
MAX_DOCUMENT_BYTES = 1 << 18
MAX_GROUP_BYTES = 1 << 21
# The shuffle buffer spans at most this many epochs of a corpus that gives few examples per epoch.
MAX_EPOCHS_IN_SHUFFLE_BUFFER = 100


class EmptyCorpusError(ValueError):
    """The corpus (or the asked split of it) gives no examples."""


def _file_lines(path):
    """Lines of one file with a trailing blank line, so its last document always ends."""
    return tf.data.TextLineDataset(path).concatenate(tf.data.Dataset.from_tensors(tf.constant("")))


def _document_groups(
    lines,
    corpus_format,
    group_size,
    max_document_bytes=MAX_DOCUMENT_BYTES,
    max_group_bytes=MAX_GROUP_BYTES,
    max_sentence_bytes=MAX_SENTENCE_BYTES,
):
    """Groups of documents: tf.string ragged `[D, (S)]` sentences, up to `group_size` documents each.

    Sentences over `max_sentence_bytes` are split (`split_long_sentences`), documents over
    `max_document_bytes` cut and groups ended at `max_group_bytes` (see the module docstring).
    """

    def bounded_documents(documents):  # [D, (S)] -> [D', (S')], vectorized over a batch of documents
        documents = documents.with_row_splits_dtype(tf.int64)
        sentences = split_long_sentences(documents.values, max_sentence_bytes, min(PIECE_BYTES, max_sentence_bytes))
        documents = documents.with_values(sentences).merge_dims(1, 2)
        return _cut_rows(documents, tf.cast(tf.strings.length(documents), tf.int64), max_document_bytes)

    def bounded_groups(group):  # [D, (S)] -> [G, (D'), (S)]
        return _cut_rows(group, tf.reduce_sum(tf.cast(tf.strings.length(group), tf.int64), axis=1), max_group_bytes)

    documents = _documents(lines, corpus_format, group_size)
    documents = documents.map(bounded_documents, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    groups = documents.unbatch().ragged_batch(group_size, row_splits_dtype=tf.int64)
    groups = groups.map(bounded_groups, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return groups.unbatch()


def _cut_rows(rows, sizes, max_size):
    """Splits each row of ragged `[R, (n), ...]` into consecutive parts of at most about `max_size`.

    `sizes` `[R, (n)]` (or `[n]` for a single row split into groups of rows) are item sizes; a part
    starts at each item whose start offset crosses a multiple of `max_size`, so a part holds at most
    `max_size` plus one item. Returns ragged `[R', (n'), ...]` (`[G, (n'), ...]` for one row).
    """
    if isinstance(sizes, tf.RaggedTensor):  # every row of `rows` on its own: [R, (n)] -> [R', (n')]
        offsets = tf.cumsum(sizes.flat_values, exclusive=True)
        starts = offsets - tf.gather(offsets, tf.gather(sizes.row_starts(), sizes.value_rowids()))  # within its row
        part = sizes.value_rowids() * (1 << 40) + starts // max_size
        _, part = tf.unique(part, out_idx=tf.int64)
        return tf.RaggedTensor.from_value_rowids(rows.values, part)
    starts = tf.cumsum(sizes, exclusive=True)
    _, part = tf.unique(starts // max_size, out_idx=tf.int64)
    return tf.RaggedTensor.from_value_rowids(rows, part)


def _documents(lines, corpus_format, group_size):
    """Batches of documents: tf.string ragged `[D, (S)]` sentences, as they come (none empty)."""
    if corpus_format == "paragraphs":

        def split(batch):  # vectorized over a batch of lines
            paragraphs = tf.boolean_mask(batch, tf.logical_not(tf.strings.regex_full_match(batch, r"\s*")))
            return tf.strings.split(
                tf.strings.regex_replace(tf.strings.strip(paragraphs), _SENTENCE_END, "\\1\n"), "\n"
            )

        return lines.batch(group_size).map(split, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

    def step(leftover, batch):
        """Complete documents of `leftover + batch` lines, and the lines of the unfinished one."""
        lines = tf.concat([leftover, batch], 0)
        blank = tf.strings.regex_full_match(lines, r"\s*")
        positions = tf.range(tf.size(lines))
        last_blank = tf.reduce_max(tf.concat([[-1], tf.boolean_mask(positions, blank)], 0))
        keep = tf.logical_and(positions < last_blank, tf.logical_not(blank))
        document = tf.cumsum(tf.cast(blank, tf.int64), exclusive=True)  # a blank line ends a document
        documents = tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(lines, keep), tf.boolean_mask(document, keep), nrows=tf.reduce_sum(tf.cast(blank, tf.int64))
        )
        documents = tf.ragged.boolean_mask(documents, documents.row_lengths() > 0)  # runs of blank lines
        return lines[last_blank + 1 :], documents

    # Lines in batches: one scan step per 1024 lines, not per line.
    return lines.batch(1024).scan(tf.zeros([0], tf.string), step)


def split_long_sentences(sentences, max_bytes=MAX_SENTENCE_BYTES, piece_bytes=PIECE_BYTES):
    """Each sentence as a list of pieces: itself when at most `max_bytes` long, else sentence-sized pieces.

    A longer one is split at sentence ends (`.`, `!` or `?` followed by
    whitespace, the whitespace dropped); a part still longer than `max_bytes`
    is cut every `piece_bytes` bytes, moved back to the start of a UTF-8
    character (so pieces hold `piece_bytes - 3` to `piece_bytes + 3` bytes;
    bytes that are not UTF-8 are cut anyway, none is lost).

    Args:
        sentences: tf.string `[N]`.
    Returns:
        tf.string ragged `[N, (k)]`, int64 row splits.
    """
    if piece_bytes < 4 or max_bytes < piece_bytes:
        raise ValueError(
            "`piece_bytes` must be at least 4 and at most `max_bytes`. "
            f"Received: max_bytes={max_bytes}, piece_bytes={piece_bytes}"
        )
    sentences = tf.convert_to_tensor(sentences, tf.string)

    def at_sentence_ends(long):
        parts = tf.strings.split(tf.strings.regex_replace(long, _SENTENCE_END, "\\1\n"), "\n")
        return tf.ragged.boolean_mask(parts, tf.strings.length(parts) > 0).with_row_splits_dtype(tf.int64)

    def cut(long):
        pieces = tf.map_fn(
            lambda text: _cut_between_characters(text, piece_bytes),
            long,
            fn_output_signature=tf.RaggedTensorSpec([None], tf.string, row_splits_dtype=tf.int64),
        )
        return pieces.with_row_splits_dtype(tf.int64)

    parts = _expand_where(sentences, max_bytes, at_sentence_ends)  # [N, (p)]
    return parts.with_values(_expand_where(parts.values, max_bytes, cut)).merge_dims(1, 2)


def _expand_where(strings, max_bytes, expand):
    """Ragged `[N, (k)]`: `[s]` for strings of at most `max_bytes`, `expand(longer ones)` rows for the others."""
    long = tf.strings.length(strings) > max_bytes
    alone = tf.RaggedTensor.from_row_lengths(strings, tf.ones(tf.shape(strings, tf.int64), tf.int64))

    def mixed():
        rows = tf.concat([expand(tf.boolean_mask(strings, long)), tf.ragged.boolean_mask(alone, ~long)], 0)
        source = tf.concat([tf.where(long)[:, 0], tf.where(~long)[:, 0]], 0)
        return tf.gather(rows, tf.argsort(source))

    return tf.cond(tf.reduce_any(long), mixed, lambda: alone)


def _cut_between_characters(text, piece_bytes):
    """A scalar string in pieces of about `piece_bytes`, each cut moved back to a UTF-8 character start."""
    size = tf.strings.length(text)
    grid = tf.range(piece_bytes, size, piece_bytes)  # [K] nominal cuts, all inside the text
    window = tf.io.decode_raw(tf.strings.substr(text, grid - 3, tf.fill(tf.shape(grid), 4)), tf.uint8)  # [K, 4]
    starts_character = tf.not_equal(tf.bitwise.bitwise_and(window, 0xC0), 0x80)  # not a continuation byte
    # The last character start in the window (the cut itself when none: not UTF-8 there).
    back = tf.argmax(tf.cast(tf.reverse(starts_character, [1]), tf.int32), axis=1, output_type=tf.int32)
    back = tf.where(tf.reduce_any(starts_character, axis=1), back, 0)
    cuts = grid - back
    begin = tf.concat([[0], cuts], 0)
    end = tf.concat([cuts, [size]], 0)
    return tf.strings.substr(text, begin, end - begin)


class PairBuilder:
    """Turns a group of tokenized documents into NSP or SOP sentence pairs (see the module docstring).

    `sentence_objective` "nsp", "sop" or "none" (one segment per chunk); None
    takes it from the legacy `nsp` switch.
    """

    def __init__(self, max_seq_length, short_seq_prob=0.1, nsp=True, seed=0, sentence_objective=None):
        if not 0.0 <= short_seq_prob <= 1.0:
            raise ValueError(f"`short_seq_prob` must be in [0, 1]. Received: short_seq_prob={short_seq_prob}")
        if sentence_objective is None:
            sentence_objective = "nsp" if nsp else "none"
        if sentence_objective not in SENTENCE_OBJECTIVES:
            raise ValueError(
                f"`sentence_objective` must be one of {SENTENCE_OBJECTIVES}. Received: {sentence_objective!r}"
            )
        self.max_tokens = max_seq_length - 3
        self.short_seq_prob = short_seq_prob
        self.sentence_objective = sentence_objective
        self.nsp = sentence_objective == "nsp"
        self.pairs = sentence_objective != "none"  # two segments per example
        self.seed = seed

    def __call__(self, documents, group_index, epoch):
        """Pairs from one group.

        Args:
            documents: int ragged `[D, (S), (n)]` pieces per sentence per document.
            group_index: int64 scalar, the group's number in the epoch.
            epoch: int64 scalar.
        Returns:
            `(first, second, label)`: ragged `[C, (a)]`, ragged `[C, (b)]`, int32 `[C]`
            (NSP: 1 = random next; SOP: 1 = swapped; none: 0, `second` empty).
        """
        documents = documents.with_row_splits_dtype(tf.int64)
        num_docs = documents.nrows()
        nonempty = documents.values.row_lengths() > 0  # blank lines carry no sentence
        sentences = tf.ragged.boolean_mask(documents.values, nonempty)  # [N, (n)]
        doc_of_sentence = tf.boolean_mask(documents.value_rowids(), nonempty)  # [N]
        lengths = sentences.row_lengths()  # [N]
        keys = example_keys(self.seed, epoch, group_index * 1_000_003 + tf.range(num_docs))  # per doc
        doc_positions = tf.zeros([num_docs, 1], tf.int64)
        short = uniform(keys, doc_positions, _SHORT)[:, 0] < self.short_seq_prob
        short_length = 2 + tf.cast(uniform(keys, doc_positions, _SHORT_LENGTH)[:, 0] * (self.max_tokens - 1), tf.int64)
        target = tf.where(short, tf.minimum(short_length, self.max_tokens), self.max_tokens)  # [D]

        # Chunks: sentences whose start offset in the document falls in the same multiple of target.
        ends = tf.cumsum(lengths)
        doc_first = tf.math.unsorted_segment_min(tf.range(tf.size(lengths), dtype=tf.int64), doc_of_sentence, num_docs)
        doc_base = tf.gather(ends - lengths, tf.maximum(doc_first, 0))  # offset of each doc's first sentence
        offset = ends - lengths - tf.gather(doc_base, doc_of_sentence)  # [N] start offset within its document
        chunk_key = doc_of_sentence * (1 << 32) + offset // tf.gather(target, doc_of_sentence)
        _, chunk = tf.unique(chunk_key)  # [N] chunk number, in order
        chunk = tf.cast(chunk, tf.int64)
        num_chunks = tf.reduce_max(tf.concat([chunk, [-1]], 0)) + 1
        chunk_size = tf.math.bincount(chunk, minlength=num_chunks, maxlength=num_chunks, dtype=tf.int64)  # [C]
        chunk_first = tf.cumsum(chunk_size, exclusive=True)
        index_in_chunk = tf.range(tf.size(chunk), dtype=tf.int64) - tf.gather(chunk_first, chunk)
        chunk_doc = tf.gather(doc_of_sentence, chunk_first)  # [C]

        chunk_keys = example_keys(self.seed, epoch, group_index * 1_000_003 + 500_000 + tf.range(num_chunks))
        at_zero = tf.zeros([num_chunks, 1], tf.int64)
        draw = lambda stream: uniform(chunk_keys, at_zero, stream)[:, 0]  # noqa: E731
        split = 1 + tf.cast(draw(_SPLIT) * tf.cast(tf.maximum(chunk_size - 1, 1), tf.float32), tf.int64)
        split = tf.minimum(split, tf.maximum(chunk_size - 1, 1))  # [C] sentences in A
        if self.nsp:
            random_next = tf.logical_and(draw(_RANDOM_NEXT) < 0.5, num_docs > 1)  # needs another document
        else:
            random_next = tf.zeros([num_chunks], tf.bool)
        if not self.pairs:
            split = chunk_size  # one segment: the whole chunk
        in_first = index_in_chunk < tf.gather(split, chunk)
        first = _concat_rows(sentences, chunk, in_first, num_chunks)
        second = _concat_rows(sentences, chunk, tf.logical_not(in_first), num_chunks)
        if self.pairs:
            # A one-sentence chunk with a true next segment splits mid-sentence.
            whole = _concat_rows(sentences, chunk, tf.ones_like(in_first), num_chunks)
            half = whole.row_lengths() // 2
            one_sentence = tf.logical_and(chunk_size == 1, tf.logical_not(random_next))
            first = _choose_rows(one_sentence, _slice_rows(whole, tf.zeros_like(half), half), first)
            second = _choose_rows(one_sentence, _slice_rows(whole, half, whole.row_lengths()), second)

        # Random next: a run of pieces from another document, from a random sentence on.
        doc_tokens = documents.merge_dims(1, 2)  # [D, (tokens)]
        other = (
            chunk_doc + 1 + tf.cast(draw(_OTHER_DOC) * tf.cast(tf.maximum(num_docs - 1, 1), tf.float32), tf.int64)
        ) % num_docs
        other_sentences = tf.gather(documents.row_lengths(), other)  # sentences in that doc (incl. empty)
        start_sentence = tf.cast(draw(_OTHER_START) * tf.cast(other_sentences, tf.float32), tf.int64)
        sentence_offsets = tf.cumsum(documents.values.row_lengths(), exclusive=True)  # flat offset of each sentence
        start = tf.gather(sentence_offsets, tf.gather(documents.row_splits, other) + start_sentence)
        other_end = doc_tokens.row_splits[1:]
        want = tf.maximum(tf.gather(target, chunk_doc) - first.row_lengths(), 1)
        stop = tf.minimum(start + want, tf.gather(other_end, other))
        stop = tf.where(random_next, stop, start)
        random_second = tf.RaggedTensor.from_row_lengths(
            tf.gather(doc_tokens.values, tf.ragged.range(start, stop).values), stop - start
        )
        second = _choose_rows(random_next, random_second, second)
        label = tf.cast(random_next, tf.int32)
        if self.sentence_objective == "sop":  # the two consecutive segments in order, or swapped (label 1)
            swapped = draw(_SWAP) < 0.5
            first, second = _choose_rows(swapped, second, first), _choose_rows(swapped, first, second)
            label = tf.cast(swapped, tf.int32)
        keep = (
            tf.logical_and(first.row_lengths() > 0, second.row_lengths() > 0) if self.pairs else first.row_lengths() > 0
        )
        return (tf.ragged.boolean_mask(first, keep), tf.ragged.boolean_mask(second, keep), tf.boolean_mask(label, keep))


class SentencePacker:
    """Packs a group of tokenized documents into one-segment examples of whole sentences (see the module docstring).

    Args:
        max_seq_length: T; sequences hold at most `T - 2` pieces (room for the family's two special tokens).
        packing: "full_sentences" or "doc_sentences".
        separator_id: the token between two documents (full_sentences; the tokenizer's `sep_id`).
    """

    def __init__(self, max_seq_length, packing="full_sentences", separator_id=None):
        if packing not in ("full_sentences", "doc_sentences"):
            raise ValueError(
                f"`packing` must be 'full_sentences' or 'doc_sentences' for a SentencePacker. Received: {packing!r}"
            )
        if packing == "full_sentences" and separator_id is None:
            raise ValueError("`packing='full_sentences'` needs `separator_id` (the token between documents).")
        if max_seq_length < 3:
            raise ValueError(f"`max_seq_length` must be at least 3. Received: max_seq_length={max_seq_length}")
        self.room = max_seq_length - 2
        self.packing = packing
        self.separator_id = separator_id

    def __call__(self, documents, group_index, epoch):
        """Sequences from one group (deterministic: `group_index` and `epoch` are not used).

        Args:
            documents: int ragged `[D, (S), (n)]` pieces per sentence per document.
        Returns:
            `(first, second, label)` as `PairBuilder` gives them: ragged `[C, (n)]`
            sequences, an empty ragged `[C, (0)]` and int32 zeros `[C]`.
        """
        documents = documents.with_row_splits_dtype(tf.int64)
        nonempty = documents.values.row_lengths() > 0
        sentences = tf.ragged.boolean_mask(documents.values, nonempty)  # [N, (n)]
        doc_of_sentence = tf.boolean_mask(documents.value_rowids(), nonempty)  # [N]
        num = tf.size(doc_of_sentence, out_type=tf.int64)
        starts_doc = tf.concat([tf.ones([1], tf.bool), doc_of_sentence[1:] != doc_of_sentence[:-1]], 0)[:num]
        if self.packing == "full_sentences":
            # A one-piece separator row before each document but the group's first.
            separator_before = tf.logical_and(starts_doc, tf.range(num) > 0)
            count = tf.reduce_sum(tf.cast(separator_before, tf.int64))
            separators = tf.RaggedTensor.from_row_lengths(
                tf.fill([count], tf.cast(self.separator_id, sentences.dtype)), tf.ones([count], tf.int64)
            )
            rows = tf.concat([sentences, separators], 0)
            place = tf.concat([2 * tf.range(num) + 1, 2 * tf.where(separator_before)[:, 0]], 0)
            rows = tf.gather(rows, tf.argsort(place))
            forced_rows = tf.zeros([tf.size(place)], tf.bool)  # only the group's start
        else:
            rows, forced_rows = sentences, starts_doc
        # Units: rows cut into parts of at most `room` pieces.
        row_of_piece = rows.value_rowids()
        in_row = tf.range(tf.size(row_of_piece, out_type=tf.int64)) - tf.gather(rows.row_starts(), row_of_piece)
        _, unit = tf.unique(row_of_piece * (1 << 32) + in_row // self.room, out_idx=tf.int64)  # [pieces]
        num_units = tf.reduce_max(tf.concat([unit, [-1]], 0)) + 1
        unit_length = tf.math.bincount(unit, minlength=num_units, maxlength=num_units, dtype=tf.int64)
        unit_first = tf.cumsum(unit_length, exclusive=True)
        forced = tf.logical_and(
            tf.gather(forced_rows, tf.gather(row_of_piece, unit_first)), tf.equal(tf.gather(in_row, unit_first), 0)
        )
        # Greedy filling: the sequence starting at unit s ends before the first unit that would overflow it or
        # that must start a new one; one loop step per sequence.
        offsets = tf.concat([unit_first, [tf.reduce_sum(unit_length)]], 0)  # [U + 1]
        fits = tf.searchsorted(offsets, offsets[:-1] + self.room, side="right", out_type=tf.int64) - 1  # [U]
        forced_at = tf.concat([tf.where(forced)[:, 0], [num_units]], 0)
        next_forced = tf.gather(forced_at, tf.searchsorted(forced_at, tf.range(num_units), side="right"))
        following = tf.minimum(fits, next_forced)  # [U] first unit of the next sequence

        def step(unit_index, starts):
            return tf.gather(following, unit_index), starts.write(starts.size(), unit_index)

        _, starts = tf.while_loop(
            lambda unit_index, _: unit_index < num_units,
            step,
            (tf.constant(0, tf.int64), tf.TensorArray(tf.int64, size=0, dynamic_size=True, element_shape=[])),
        )
        starts = starts.stack()
        is_start = tf.scatter_nd(starts[:, None], tf.ones_like(starts, tf.int32), [num_units])
        sequence = tf.cast(tf.cumsum(is_start), tf.int64) - 1  # [U]
        num_sequences = tf.size(starts, out_type=tf.int64)
        first = tf.RaggedTensor.from_value_rowids(rows.values, tf.gather(sequence, unit), nrows=num_sequences)
        second = tf.RaggedTensor.from_row_lengths(tf.zeros([0], rows.dtype), tf.zeros([num_sequences], tf.int64))
        return first, second, tf.zeros([num_sequences], tf.int32)


def _concat_rows(sentences, chunk, selected, num_chunks):
    """Concatenates the selected sentences of each chunk: ragged `[C, (pieces)]`."""
    rows = tf.ragged.boolean_mask(sentences, selected)  # [N', (n)]
    row_chunk = tf.boolean_mask(chunk, selected)
    lengths = tf.math.unsorted_segment_sum(rows.row_lengths(), row_chunk, num_chunks)
    return tf.RaggedTensor.from_row_lengths(rows.values, lengths)


def _slice_rows(rows, begin, end):
    """`rows[i, begin[i]:end[i]]` for a ragged `[C, (n)]`."""
    offsets = rows.row_starts()
    index = tf.ragged.range(offsets + begin, offsets + end)
    return tf.RaggedTensor.from_row_lengths(tf.gather(rows.values, index.values), end - begin)


def _choose_rows(condition, if_true, if_false):
    """Row-wise choice between two ragged `[C, (n)]` tensors by a bool `[C]`."""
    rows = tf.concat(
        [tf.ragged.boolean_mask(if_true, condition), tf.ragged.boolean_mask(if_false, tf.logical_not(condition))], 0
    )
    source = tf.concat([tf.where(condition)[:, 0], tf.where(tf.logical_not(condition))[:, 0]], 0)
    return tf.gather(rows, tf.argsort(source))


def pretraining_dataset(
    corpus,
    tokenizer,
    max_seq_length=128,
    max_predictions_per_seq=None,
    masking_rate=0.15,
    whole_word_masking=None,
    nsp=None,
    short_seq_prob=0.1,
    batch_size=32,
    seed=0,
    corpus_format="lines",
    group_size=64,
    shuffle_buffer=10_000,
    epochs=None,
    input_context=None,
    max_position_embeddings=None,
    split="all",
    sentence_objective=None,
    packing="pairs",
    masking=None,
    span_geometric_p=0.2,
    max_span_length=10,
    objective="mlm",
):
    """Masked `(features, labels, sample_weights)` pretraining batches from raw text files.

    Args:
        corpus: text files or globs (a list or one comma-separated string).
        tokenizer: a `bert_tf.text.BertTokenizer`.
        max_seq_length: T, tokens per packed pair.
        max_predictions_per_seq: P, masked-LM slots per sequence; None:
            `default_max_predictions(masking_rate, max_seq_length)`.
        batch_size: examples per batch (per input pipeline when sharded).
        corpus_format: "lines" or "paragraphs" (see the module docstring).
        group_size: documents per pair-building group (random next sentences
            come from the same group; a sentence packing's sequence never
            crosses a group boundary).
        epochs: number of passes; None repeats forever. Each pass reads the
            files in a new order, pairs and masks anew.
        input_context: a `tf.distribute.InputContext`; files are sharded by
            input pipeline when there are enough of them, else examples are.
        max_position_embeddings: the model's positions; a longer `max_seq_length`
            is refused.
        split: "all"; "train" skips and "eval" keeps only every
            `HOLDOUT_EVERY`-th group of documents (a held-out slice).
        sentence_objective: one of `SENTENCE_OBJECTIVES`; None: from `nsp`
            ("nsp" when `nsp` is True or None, else "none").
        packing: one of `PACKINGS`; the sentence packings need
            `sentence_objective="none"`.
        masking: one of `MASKINGS`; None: from `whole_word_masking`
            ("whole_word" when True, else "token").
        masking_rate: share of the maskable tokens masked, in (0, MAX_MASKING_RATE].
        span_geometric_p, max_span_length: span masking's length distribution
            in words (geometric with this p, clipped at this length).
        objective: one of `OBJECTIVES`: "mlm", or "rtd" (ELECTRA: the
            masking of `RTD_MASK_TOKEN_RATE`, and the inputs and weights of
            `ElectraPretrainer` added).
    Returns:
        A `tf.data.Dataset` of `(features, labels, sample_weights)`: features
        `token_ids`, `segment_ids`, `padding_mask` `[B, T]` and
        `mask_positions` `[B, P]`; labels `mlm` `[B, P]` and, with a sentence
        objective, `nsp` or `sop` (its name) `[B]`; weights `mlm` `[B, P]`
        (0 on unused slots) and `nsp`/`sop` `[B]`. With `objective="rtd"`
        the features also hold `mask_ids` int32 and `mask_weights` float32
        `[B, P]` (the labels and weights of `mlm`) and `replacement_uniforms`
        float32 `[B, P]` (`text.masking.replacement_uniforms`), and the
        weights `rtd` float32 `[B, T]` (the padding mask: the discriminator's
        loss covers every real token; its labels are the model's own).
    """
    _check_documents(corpus_format, group_size)
    sentence_objective, masking = resolve_objectives(
        sentence_objective, packing, masking, nsp=nsp, whole_word_masking=whole_word_masking, masking_rate=masking_rate
    )
    # Absolute paths: the saved iterator position names the files, and a resumed run may start elsewhere.
    files = [f if "://" in f else os.path.abspath(f) for f in expand_files(corpus)]
    files, input_context = shard_files(files, input_context)
    if packing == "pairs":
        builder = PairBuilder(
            max_seq_length, short_seq_prob=short_seq_prob, seed=seed, sentence_objective=sentence_objective
        )
    else:
        builder = SentencePacker(max_seq_length, packing=packing, separator_id=tokenizer.sep_id)

    def one_epoch(epoch):
        return document_pairs(
            files_in_epoch_order(files, seed, epoch), tokenizer, builder, corpus_format, group_size, epoch, split
        )

    return masked_batches(
        one_epoch,
        tokenizer,
        max_seq_length=max_seq_length,
        max_predictions_per_seq=max_predictions_per_seq,
        masking_rate=masking_rate,
        masking=masking,
        sentence_objective=sentence_objective,
        span_geometric_p=span_geometric_p,
        max_span_length=max_span_length,
        batch_size=batch_size,
        seed=seed,
        shuffle_buffer=shuffle_buffer,
        epochs=epochs,
        input_context=input_context,
        max_position_embeddings=max_position_embeddings,
        corpus_name=_describe(files),
        objective=objective,
    )


def resolve_objectives(
    sentence_objective, packing, masking, nsp=None, whole_word_masking=None, masking_rate=0.15, flag_names=False
):
    """`(sentence_objective, masking)` with the legacy `nsp` / `whole_word_masking` switches folded in.

    Raises ValueError naming both settings for a combination that cannot be
    built (a sentence packing with a sentence objective, a legacy switch that
    contradicts the new setting) and for a value out of range. `flag_names`
    writes them as `--flags` (the app's words) instead of arguments.
    """
    name = (lambda n: f"--{n}") if flag_names else (lambda n: f"`{n}`")
    if sentence_objective is None:
        sentence_objective = "none" if nsp is False else "nsp"
    elif nsp is not None and nsp != (sentence_objective == "nsp"):
        raise ValueError(
            f"{name('nsp')}={nsp} contradicts {name('sentence_objective')}={sentence_objective!r}: set only "
            f"{name('sentence_objective')}."
        )
    if masking is None:
        masking = "whole_word" if whole_word_masking else "token"
    elif whole_word_masking is not None and whole_word_masking != (masking == "whole_word"):
        raise ValueError(
            f"{name('whole_word_masking')}={whole_word_masking} contradicts {name('masking')}={masking!r}: set only "
            f"{name('masking')}."
        )
    for key, value, choices in (
        ("sentence_objective", sentence_objective, SENTENCE_OBJECTIVES),
        ("packing", packing, PACKINGS),
        ("masking", masking, MASKINGS),
    ):
        if value not in choices:
            raise ValueError(f"{name(key)} must be one of {choices}. Received: {key}={value!r}")
    if packing != "pairs" and sentence_objective != "none":
        raise ValueError(
            f"{name('packing')}={packing} fills one segment per example and has no sentence pairs for "
            f"{name('sentence_objective')}={sentence_objective}: use {name('sentence_objective')}=none with it, or "
            f"{name('packing')}=pairs."
        )
    if not 0.0 < masking_rate <= MAX_MASKING_RATE:
        raise ValueError(f"{name('masking_rate')} must be in (0, {MAX_MASKING_RATE}]. Received: {masking_rate}")
    return sentence_objective, masking


def default_max_predictions(masking_rate, max_seq_length):
    """Masked-LM slots that follow the rate: `ceil(masking_rate * max_seq_length)` (20 at 0.15 x 128, as BERT)."""
    if not 0.0 < masking_rate <= 1.0 or max_seq_length <= 0:
        raise ValueError(
            "`masking_rate` must be in (0, 1] and `max_seq_length` positive. "
            f"Received: masking_rate={masking_rate}, max_seq_length={max_seq_length}"
        )
    return max(1, math.ceil(masking_rate * max_seq_length - 1e-9))


def _describe(files):
    """The corpus files for a message: all of them, or the first three and how many more."""
    more = f" and {len(files) - 3} more files" if len(files) > 3 else ""
    return ", ".join(files[:3]) + more


def _check_documents(corpus_format, group_size):
    if corpus_format not in FORMATS:
        raise ValueError(f"`corpus_format` must be one of {FORMATS}. Received: corpus_format={corpus_format!r}")
    if group_size <= 0:
        raise ValueError(f"`group_size` must be positive. Received: group_size={group_size}")


SPLITS = ("all", "train", "eval")
# With split="train"/"eval", every HOLDOUT_EVERY-th group of documents (the 20th, 40th, ...) is held
# out for evaluation; a corpus of fewer groups has no held-out slice.
HOLDOUT_EVERY = 20


def document_pairs(file_names, tokenizer, builder, corpus_format, group_size, epoch, split="all"):
    """`(first, second, label)` pairs from a dataset of file names, in file order.

    Args:
        file_names: a dataset of tf.string file names.
        builder: a `PairBuilder`.
        epoch: int64 scalar; the pairing is drawn from it.
        split: "all", or "train"/"eval" to drop/keep only the held-out groups.
    """
    _check_documents(corpus_format, group_size)
    if split not in SPLITS:
        raise ValueError(f"`split` must be one of {SPLITS}. Received: split={split!r}")
    lines = file_names.flat_map(_file_lines)
    groups = _document_groups(lines, corpus_format, group_size).enumerate()
    if split != "all":
        held_out = split == "eval"
        groups = groups.filter(lambda index, _: tf.equal(index % HOLDOUT_EVERY == HOLDOUT_EVERY - 1, held_out))

    def pairs_of_group(index, docs):
        return builder(docs.with_flat_values(tokenizer.tokenize(docs.flat_values)), index, epoch)

    pairs = groups.map(pairs_of_group, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return pairs.unbatch()


def shard_files(files, input_context):
    """Files of this input pipeline, and the context left for example sharding (None if files were sharded)."""
    if input_context is None or len(files) < input_context.num_input_pipelines:
        return files, input_context
    return files[input_context.input_pipeline_id :: input_context.num_input_pipelines], None


def _first_epoch(examples, numbered):
    """Epoch 0 of `examples` (`epochs.flat_map(numbered)`), through the graph its flat_map already traced.

    Tracing `numbered` (file reading, tokenization, pair building) takes seconds; the probe that counts the
    first epoch calls the traced function instead of tracing it again. The call op in it would stop an
    iterator's checkpoint, so only the probe, never the checkpointed pipeline, is built this way.
    """
    traced = getattr(examples, "_map_func", None)  # tf.data's FlatMapDataset: its function and output structure
    spec = getattr(getattr(traced, "output_structure", None), "element_spec", None)
    if traced is None or spec is None:
        return numbered(tf.constant(0, tf.int64))
    function = traced.function
    return tf.data.Dataset.range(1).flat_map(lambda epoch: tf.data.experimental.from_variant(function(epoch)[0], spec))


def files_in_epoch_order(files, seed, epoch):
    """A dataset of file names in an order drawn from `(seed, epoch)`."""
    names = tf.constant(files)
    keys = example_keys(seed, epoch, tf.zeros([1], tf.int64))
    order = tf.argsort(uniform(keys, tf.range(tf.size(names))[None, :], _SPLIT)[0])
    return tf.data.Dataset.from_tensor_slices(tf.gather(names, order))


def masked_batches(
    epoch_examples,
    tokenizer,
    max_seq_length=128,
    max_predictions_per_seq=None,
    masking_rate=0.15,
    masking="token",
    sentence_objective="nsp",
    span_geometric_p=0.2,
    max_span_length=10,
    batch_size=32,
    seed=0,
    shuffle_buffer=10_000,
    epochs=None,
    input_context=None,
    max_position_embeddings=None,
    corpus_name="The corpus",
    objective="mlm",
):
    """Shuffles, batches, packs and masks `(first, second, label)` examples.

    Args:
        epoch_examples: a function of the epoch (int64 scalar tensor) returning
            a dataset of `(first int ragged [(a)], second int ragged [(b)],
            label int32)` for that epoch.
        input_context: shard examples by input pipeline (None: no sharding).
        shuffle_buffer: examples shuffled together; when an epoch has fewer than
            `shuffle_buffer / MAX_EPOCHS_IN_SHUFFLE_BUFFER` examples, at most
            `MAX_EPOCHS_IN_SHUFFLE_BUFFER` epochs of them.
        corpus_name: names the corpus in the error for an empty one.
        Other args as in `pretraining_dataset`.
    Returns:
        The dataset of `pretraining_dataset`.
    """
    if batch_size <= 0:
        raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
    if objective not in OBJECTIVES:
        raise ValueError(f"`objective` must be one of {OBJECTIVES}. Received: objective={objective!r}")
    rtd = objective == "rtd"
    if max_predictions_per_seq is None:
        max_predictions_per_seq = default_max_predictions(masking_rate, max_seq_length)
    packer = packer_for(
        tokenizer,
        max_seq_length,
        truncation="longest_first",
        max_position_embeddings=max_position_embeddings,
    )
    specials = [tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id]
    masker = MaskedLMMasker(
        tokenizer.vocab_size,
        tokenizer.mask_id,
        specials,
        masking_rate=masking_rate,
        max_predictions_per_seq=max_predictions_per_seq,
        masking=masking,
        span_geometric_p=span_geometric_p,
        max_span_length=max_span_length,
        continuation_ids=tokenizer.continuation_ids() if masking != "token" else None,
        seed=seed,
        **({"mask_token_rate": RTD_MASK_TOKEN_RATE, "random_token_rate": 0.0} if rtd else {}),
    )

    def numbered(epoch):
        examples = epoch_examples(epoch).enumerate()
        if input_context is not None:
            examples = examples.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        return examples.map(lambda index, example: (epoch, index, example))

    epoch_numbers = tf.data.Dataset.range(epochs) if epochs is not None else tf.data.Dataset.range(1 << 62)
    # The shuffle sits outside flat_map: a shuffle inside it cannot be saved in a checkpoint.
    examples = epoch_numbers.flat_map(numbered)
    # An empty epoch would make the endless epoch loop spin forever: refuse it up front. A corpus of few
    # examples per epoch would be read (and tokenized) epoch after epoch to fill the shuffle buffer: the
    # buffer spans at most MAX_EPOCHS_IN_SHUFFLE_BUFFER epochs of this input pipeline's examples.
    probe = -(-shuffle_buffer // MAX_EPOCHS_IN_SHUFFLE_BUFFER) if shuffle_buffer > 1 else 1
    count = int(_first_epoch(examples, numbered).take(probe).reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))
    if count == 0:
        pipeline = (
            f" for input pipeline {input_context.input_pipeline_id} of {input_context.num_input_pipelines}"
            if input_context is not None and input_context.num_input_pipelines > 1
            else ""
        )
        raise EmptyCorpusError(
            f"{corpus_name} gives no pretraining examples{pipeline} (for a held-out split: it has fewer "
            f"than {HOLDOUT_EVERY} groups of documents)."
        )
    if count < probe:
        shuffle_buffer = min(shuffle_buffer, count * MAX_EPOCHS_IN_SHUFFLE_BUFFER)

    def to_batch(epoch, index, first, second, label):
        inputs = packer(first, second) if sentence_objective != "none" else packer(first)
        masked = masker(inputs["token_ids"], inputs["padding_mask"], index, epoch)
        features = dict(inputs, token_ids=masked["token_ids"], mask_positions=masked["mask_positions"])
        labels, weights = {"mlm": masked["mask_ids"]}, {"mlm": masked["mask_weights"]}
        if rtd:
            features.update(
                mask_ids=masked["mask_ids"],
                mask_weights=masked["mask_weights"],
                replacement_uniforms=replacement_uniforms(seed, epoch, index, max_predictions_per_seq),
            )
            weights["rtd"] = tf.cast(inputs["padding_mask"], tf.float32)
        if sentence_objective != "none":
            labels[sentence_objective] = label
            weights[sentence_objective] = tf.ones_like(label, tf.float32)
        return features, labels, weights

    if shuffle_buffer > 1:
        examples = examples.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=False)
    batches = examples.ragged_batch(batch_size, drop_remainder=True)
    return batches.map(
        lambda epoch, index, example: to_batch(epoch, index, *example),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    ).prefetch(tf.data.AUTOTUNE)
