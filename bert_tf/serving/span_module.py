"""SpanModule: extractive question answering from raw question and context strings.

Shape legend: B questions, N windows, T tokens, A max_answer_length.
"""

import tensorflow as tf

from bert_tf.serving import graph_ops
from bert_tf.serving.serving_module import IDS, ServingModule
from bert_tf.text import pair_separators

QUESTION = tf.TensorSpec([None], tf.string, name="question")
CONTEXT = tf.TensorSpec([None], tf.string, name="context")


class SpanModule(ServingModule):
    """Serves a `BertSpanLabeler`: the best answer span of each context, over doc-stride windows.

    Windows are built in-graph as in google-research/bert `run_squad.py` (and
    `bert_tf.data.squad`): `[CLS] question [SEP] context window [SEP]`, the
    question cut to `max_query_length` pieces, windows starting every
    `doc_stride` pieces. The answer is the span of context tokens with the
    highest start + end logit over all windows (at most `max_answer_length`
    tokens, exhaustive search), returned as the exact context characters it
    covers.

    Signatures:
        `serving_default`: `question`, `context` `[B]` -> `answer` string
            `[B]`, `start`, `end` int64 `[B]` (character offsets into the
            context: `context[start:end]` in Python is the answer),
            `score` float32 `[B]` (start + end logit), `no_answer_score`
            float32 `[B]` (the smallest `[CLS]` start + end logit over the
            windows, for SQuAD 2.0-style thresholds: answer "" when it exceeds
            `score` by your threshold), `num_windows` int32 `[B]`. A context
            with no token answers "" with start = end = -1 and score -inf.
        `ids`: encoder inputs int32 `[B, T]` -> `start_logits`, `end_logits`
            float32 `[B, T]`.

    Args:
        model: the `BertSpanLabeler`.
        tokenizer: its `BertTokenizer`.
        max_seq_length: T.
        doc_stride: context pieces between window starts.
        max_query_length: question pieces kept.
        max_answer_length: longest answer, in tokens.
        max_input_bytes: see `ServingModule`.
    """

    def __init__(
        self,
        model,
        tokenizer,
        max_seq_length,
        doc_stride=128,
        max_query_length=64,
        max_answer_length=30,
        max_input_bytes=None,
        name=None,
    ):
        if max_seq_length - 3 - max_query_length < 1:
            raise ValueError(
                "`max_seq_length` must leave room for a context piece after the question and 3 special "
                f"tokens. Received: max_seq_length={max_seq_length}, max_query_length={max_query_length}"
            )
        for arg, value in (
            ("doc_stride", doc_stride),
            ("max_query_length", max_query_length),
            ("max_answer_length", max_answer_length),
        ):
            if value < 1:
                raise ValueError(f"`{arg}` must be positive. Received: {arg}={value}")
        super().__init__(
            model, tokenizer, max_seq_length, max_input_bytes=max_input_bytes, truncation="round_robin", name=name
        )
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length
        self.max_answer_length = max_answer_length

    def signatures(self):
        return {
            "serving_default": self._function(self.answer, QUESTION, CONTEXT),
            "ids": self._function(self.span_ids, *IDS),
        }

    def span_ids(self, token_ids, segment_ids, padding_mask):
        outputs = self._call_unpadded(self.model, self._ids(token_ids, segment_ids, padding_mask))
        return {"start_logits": outputs["start_logits"], "end_logits": outputs["end_logits"]}

    def answer(self, question, context):
        question, context = self._strings(question, context)
        batch = tf.shape(context, out_type=tf.int64)[0]
        query = self._tokenize(question).with_row_splits_dtype(tf.int64)[:, : self.max_query_length]
        pieces, byte_starts, byte_ends = self.tokenizer.tokenize_with_offsets(context)  # [B, (L)]
        pieces = pieces.with_row_splits_dtype(tf.int64)
        query_length = query.row_lengths()  # [B]
        extra = pair_separators(self.tokenizer) - 1  # RoBERTa's second separator
        budgets = self.max_seq_length - 3 - extra - query_length
        row, start, size = graph_ops.window_spans(pieces.row_lengths(), budgets, self.doc_stride)  # [N]
        features = self._pack(tf.gather(query, row), graph_ops.take_pieces(pieces, row, start, size))
        outputs = self._call_unpadded(self.model, features)
        start_logits, end_logits = outputs["start_logits"], outputs["end_logits"]  # [N, T]

        # Context tokens of each window: [offset, offset + size), after [CLS] question [SEP].
        offset = tf.gather(query_length, row) + 2 + extra  # [N]
        position = tf.range(tf.shape(start_logits, out_type=tf.int64)[1])[None, :]  # [1, T]
        in_context = tf.logical_and(position >= offset[:, None], position < (offset + size)[:, None])  # [N, T]
        span_score, first, last = _best_spans(start_logits, end_logits, in_context, self.max_answer_length)

        found, best_score, window = _best_windows(span_score, row, batch)  # [B]
        # Window tokens -> pieces of the context -> bytes.
        base = pieces.row_starts() + tf.gather(start, window) - tf.gather(offset, window)
        # Questions without an answer point at a padding piece (the batch may have no piece at all).
        total = tf.size(pieces.flat_values, out_type=tf.int64)
        first_piece = tf.where(found, base + tf.gather(first, window), total)
        last_piece = tf.where(found, base + tf.gather(last, window), total)
        zero = tf.zeros([1], tf.int64)
        byte_start = tf.gather(tf.concat([byte_starts.flat_values, zero], 0), first_piece)
        byte_end = tf.gather(tf.concat([byte_ends.flat_values, zero], 0), last_piece)
        chars = graph_ops.byte_to_char_offsets(context, tf.stack([byte_start, byte_end], axis=1))  # [B, 2]
        null_score = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], row, batch)
        return {
            "answer": tf.strings.substr(context, byte_start, byte_end - byte_start),
            "start": tf.where(found, chars[:, 0], -1),
            "end": tf.where(found, chars[:, 1], -1),
            "score": best_score,
            "no_answer_score": null_score,
            "num_windows": tf.math.bincount(
                tf.cast(row, tf.int32), minlength=tf.cast(batch, tf.int32), maxlength=tf.cast(batch, tf.int32)
            ),
        }


def _best_windows(span_score, row, batch):
    """The best window of each question (the first one on ties).

    Args:
        span_score: float32 `[N]`, each window's best span score (-inf: none).
        row: int64 `[N]`, each window's question.
        batch: B.

    Returns:
        `(found, score, window)`, `[B]` each: whether a window has a span, the best score (-inf when not
        found) and the window giving it (0 when not found).
    """
    # unsorted_segment_max starts from the lowest finite float, not -inf: "found" is counted apart.
    found = tf.math.unsorted_segment_max(tf.cast(tf.math.is_finite(span_score), tf.int32), row, batch) > 0
    score = tf.where(found, tf.math.unsorted_segment_max(span_score, row, batch), float("-inf"))
    index = tf.range(tf.size(row, out_type=tf.int64))
    is_best = tf.equal(span_score, tf.gather(score, row))
    window = tf.math.unsorted_segment_min(tf.where(is_best, index, tf.int64.max), row, batch)
    return found, score, tf.where(found, window, 0)


def _best_spans(start_logits, end_logits, allowed, max_answer_length):
    """The best span of each window: `(score, first, last)`, float32 `[N]`, int64 `[N]`, int64 `[N]`.

    A span runs from token `first` to `last` (inclusive), both `allowed`,
    `first <= last < first + max_answer_length`; its score is
    `start_logits[first] + end_logits[last]`. A window with no allowed
    token scores -inf.
    """
    length = tf.shape(start_logits)[1]

    def after(values):  # [N, T] -> [N, T, A]: values[:, i + d] (0 past the end)
        padded = tf.pad(values, [[0, 0], [0, max_answer_length - 1]])
        return tf.signal.frame(padded, max_answer_length, 1, axis=1)[:, :length]

    ok = tf.logical_and(allowed[:, :, None], after(tf.cast(allowed, start_logits.dtype)) > 0)  # [N, T, A]
    # Finite values only through `frame`, then -inf where not allowed.
    scores = tf.where(ok, start_logits[:, :, None] + after(end_logits), float("-inf"))
    flat = tf.reshape(scores, [tf.shape(scores)[0], -1])  # [N, T * A]
    best = tf.argmax(flat, axis=1)  # [N]
    first = best // max_answer_length
    return tf.reduce_max(flat, axis=1), first, first + best % max_answer_length
