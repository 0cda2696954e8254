"""TaggerModule: named entities with character offsets from raw strings.

Shape legend: B inputs, N windows, T tokens, C labels, P pieces and W words
(flat over the batch), E entities (per input, padded).
"""

import numpy as np
import tensorflow as tf

from bert_tf.serving import graph_ops
from bert_tf.serving.serving_module import IDS, TEXT, ServingModule


def entity_scheme(labels):
    """(types, type_of_label, begins) of BIO label names.

    "B-X" begins an entity of type X, "I-X" continues one (or begins it after
    an "O" or another type); "O" is outside; a label without a B-/I- prefix
    other than "O" is an entity type of its own (IO scheme).

    Returns:
        types: entity type names in first-seen order.
        type_of_label: per label, its index in `types` or -1 for "O".
        begins: per label, whether it is a "B-" label.
    """
    types, type_of_label, begins = [], [], []
    for label in labels:
        if label == "O":
            type_of_label.append(-1)
            begins.append(False)
            continue
        prefix, kind = (
            (label[0], label[2:]) if len(label) > 2 and label[1] == "-" and label[0] in "BI" else (None, label)
        )
        if kind not in types:
            types.append(kind)
        type_of_label.append(types.index(kind))
        begins.append(prefix == "B")
    return types, type_of_label, begins


class TaggerModule(ServingModule):
    """Serves a `BertTokenClassifier` (NER): entities with type, character span, text and score.

    Text longer than one window is cut into windows of `max_seq_length - 2`
    pieces without overlap (as fine-tuning does by default) and every piece is
    tagged. Words are BERT's words (whitespace and punctuation split, as
    Hugging Face's pipeline with `aggregation_strategy="first"`): a word's tag
    is its first piece's most probable label; BIO tags then join words into
    entities.

    Signatures:
        `serving_default`: `text` `[B]` -> `entity_type` string `[B, E]`,
            `entity_start`, `entity_end` int64 `[B, E]` (character offsets:
            `text[start:end]` in Python is the entity; -1 past `num_entities`),
            `entity_text` string `[B, E]` (the exact input bytes),
            `entity_score` float32 `[B, E]` (mean over the entity's words of
            their tag's probability), `num_entities` int32 `[B]`.
        `ids`: encoder inputs int32 `[B, T]` -> `logits` `[B, T, C]`,
            `probabilities` `[B, T, C]`, `label_id` int32 `[B, T]`, `label`
            string `[B, T]` per token.

    Args:
        model: the `BertTokenClassifier`.
        tokenizer: its `BertTokenizer`.
        max_seq_length: T.
        labels: label names in class order (BIO).
        max_input_bytes: see `ServingModule`.
    """

    def __init__(self, model, tokenizer, max_seq_length, labels, max_input_bytes=None, name=None):
        if len(labels) != model.num_classes:
            raise ValueError(
                f"The tagger has {model.num_classes} classes but {len(labels)} labels were given. "
                f"Received: labels={labels}"
            )
        super().__init__(model, tokenizer, max_seq_length, max_input_bytes=max_input_bytes, name=name)
        self.labels = tuple(labels)
        self.types, self.type_of_label, self.begins = (tuple(x) for x in entity_scheme(labels))
        # Pieces that continue a word (WordPiece's "##" pieces), one flag per id.
        self._continuation = np.zeros([tokenizer.vocab_size], bool)
        self._continuation[tokenizer.continuation_ids()] = True

    def signatures(self):
        return {"serving_default": self._function(self.tag_text, TEXT), "ids": self._function(self.tag_ids, *IDS)}

    def tag_ids(self, token_ids, segment_ids, padding_mask):
        logits = self._call_unpadded(self.model, self._ids(token_ids, segment_ids, padding_mask))  # [B, T, C]
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_id": label_id,
            "label": tf.gather(tf.constant(self.labels, tf.string), label_id),
        }

    def tag_text(self, text):
        (text,) = self._strings(text)
        batch = tf.shape(text, out_type=tf.int64)[0]
        ids, byte_starts, byte_ends = self.tokenizer.tokenize_with_offsets(text)  # [B, (P)]
        ids = ids.with_row_splits_dtype(tf.int64)
        words = self._words(ids, byte_starts.flat_values, byte_ends.flat_values)
        row, kind, byte_start, byte_end, score = self._entities(*words)  # [E'] (flat over the batch)

        pad = lambda values, default: graph_ops.pad_rows(values, row, batch, default)  # noqa: E731
        num_entities = tf.math.bincount(
            tf.cast(row, tf.int32), minlength=tf.cast(batch, tf.int32), maxlength=tf.cast(batch, tf.int32)
        )  # [B]
        byte_spans = pad(tf.stack([byte_start, byte_end], axis=1), tf.constant(0, tf.int64))  # [B, E, 2]
        width = tf.shape(byte_spans)[1]
        chars = graph_ops.byte_to_char_offsets(text, tf.concat([byte_spans[:, :, 0], byte_spans[:, :, 1]], 1))
        used = tf.sequence_mask(num_entities, width)  # [B, E]
        return {
            "entity_type": pad(tf.gather(tf.constant(self.types or ("",), tf.string), kind), ""),
            "entity_start": tf.where(used, chars[:, :width], -1),
            "entity_end": tf.where(used, chars[:, width:], -1),
            "entity_text": pad(tf.strings.substr(tf.gather(text, row), byte_start, byte_end - byte_start), ""),
            "entity_score": pad(score, 0.0),
            "num_entities": num_entities,
        }

    def _words(self, ids, byte_starts, byte_ends):
        """Tagged words (flat over the batch): a piece begins a word unless it is a "##" continuation.

        Args:
            ids: ragged int32 `[B, (P)]` pieces, int64 row splits.
            byte_starts, byte_ends: int64 `[P]`, each piece's bytes in its input.

        Returns:
            `(row, label, score, start, end)`, each `[W]`: the word's input row, its first piece's most
            probable label and that label's probability, and its bytes (first piece's start, last's end).
        """
        probabilities = self._piece_probabilities(ids)  # [P, C]
        piece_row = ids.value_rowids()
        piece_index = tf.range(tf.size(piece_row, out_type=tf.int64))
        first_in_row = tf.equal(piece_index, tf.gather(ids.row_starts(), piece_row))
        continuation = tf.gather(tf.constant(self._continuation), ids.flat_values)
        begins_word = tf.logical_or(first_in_row, tf.logical_not(continuation))  # [P]
        first = tf.where(begins_word)[:, 0]  # [W]
        word_of_piece = tf.cumsum(tf.cast(begins_word, tf.int64)) - 1
        last = tf.math.unsorted_segment_max(piece_index, word_of_piece, tf.size(first, out_type=tf.int64))
        word_probabilities = tf.gather(probabilities, first)  # [W, C]
        return (
            tf.gather(piece_row, first),
            tf.argmax(word_probabilities, axis=-1, output_type=tf.int32),
            tf.reduce_max(word_probabilities, axis=-1),
            tf.gather(byte_starts, first),
            tf.gather(byte_ends, last),
        )

    def _entities(self, word_row, word_label, word_score, word_start, word_end):
        """BIO decoding of tagged words `[W]` into entities `[E']` (flat over the batch, in row order).

        A word with an entity label begins an entity unless it continues the previous word's: same row, same
        type, and not a "B-" label.

        Returns:
            `(row, type index, byte start, byte end, score)`, each `[E']`; the score is the mean of the
            entity's word scores.
        """
        # A word without characters (a byte-level BPE piece of whitespace alone, as after a text's last word) is
        # in no entity, nor does it separate two words of one.
        keep = word_end > word_start
        word_row, word_label, word_score, word_start, word_end = (
            tf.boolean_mask(x, keep) for x in (word_row, word_label, word_score, word_start, word_end)
        )
        kind = tf.gather(tf.constant(self.type_of_label, tf.int32), word_label)  # [W], -1 outside
        begin = tf.gather(tf.constant(self.begins, tf.bool), word_label)
        previous_kind = tf.concat([tf.constant([-1], tf.int32), kind[:-1]], axis=0)
        previous_row = tf.concat([tf.constant([-1], tf.int64), word_row[:-1]], axis=0)
        inside = kind >= 0
        starts = inside & (begin | tf.not_equal(previous_kind, kind) | tf.not_equal(previous_row, word_row))
        entity_of_word = tf.cumsum(tf.cast(starts, tf.int64)) - 1
        members = tf.where(inside)[:, 0]  # words inside entities
        segment = tf.gather(entity_of_word, members)
        count = tf.reduce_sum(tf.cast(starts, tf.int64))
        first_words = tf.where(starts)[:, 0]  # [E']
        return (
            tf.gather(word_row, first_words),
            tf.gather(kind, first_words),
            tf.math.unsorted_segment_min(tf.gather(word_start, members), segment, count),
            tf.math.unsorted_segment_max(tf.gather(word_end, members), segment, count),
            tf.math.unsorted_segment_mean(tf.gather(word_score, members), segment, count),
        )

    def _piece_probabilities(self, ids):
        """Label probabilities of every piece `[P, C]`, over windows of `max_seq_length - 2` pieces."""
        budget = self.max_seq_length - 2
        lengths = ids.row_lengths()  # [B]
        row, start, size = graph_ops.window_spans(
            lengths, tf.fill(tf.shape(lengths), tf.cast(budget, tf.int64)), budget
        )
        features = self._pack(graph_ops.take_pieces(ids, row, start, size))  # [N, T]
        logits = self._call_unpadded(self.model, features)  # [N, T, C]
        # Piece k of a row is in the row's window k // budget, at token 1 + k % budget.
        windows_before = tf.cumsum(
            tf.math.bincount(
                tf.cast(row, tf.int32), minlength=tf.size(lengths), maxlength=tf.size(lengths), dtype=tf.int64
            ),
            exclusive=True,
        )
        piece_row = ids.value_rowids()
        in_row = tf.range(tf.size(piece_row, out_type=tf.int64)) - tf.gather(ids.row_starts(), piece_row)
        window = tf.gather(windows_before, piece_row) + in_row // budget
        position = 1 + in_row % budget
        return tf.nn.softmax(tf.gather_nd(logits, tf.stack([window, position], axis=1)), axis=-1)
