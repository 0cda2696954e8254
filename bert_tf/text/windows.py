"""Long texts: the `long_text` setting and the windows a text longer than `max_seq_length` is cut into.

"truncate" keeps a text's first `max_seq_length - 2` pieces (room for `[CLS]` and `[SEP]`, RoBERTa's `<s>` and
`</s>`). "windows" cuts it into windows of that many pieces starting every `window_stride` pieces, until one
reaches the end of the text (at most `max_windows`); the model runs on every window and the text's answer is the
mean of its windows' (logits for classification and regression, embeddings for sentence embeddings). The
exported SavedModels do it in-graph (`bert_tf.serving.ServingModule`), `SentenceEmbedder` on the host; both
count windows the same way (`window_starts`); fine-tuning trains on the windows and evaluates their mean
(`bert_tf.data.classification.make_dataset`). `windows_of` cuts ragged pieces into windows in-graph (the
SavedModel's and the training data's); `window_spans` and `take_pieces` are its steps, which NER and QA's
doc-stride windows use too.
"""

import tensorflow as tf

LONG_TEXT = ("truncate", "windows")
# Windows of one text at most: 64 windows of 126 pieces 63 apart cover 4,095 pieces.
MAX_WINDOWS = 64
# Special tokens a packed single text holds: `[CLS] A [SEP]`, RoBERTa's `<s> A </s>`.
SINGLE_SPECIALS = 2
# Bytes kept of each input string per piece it may use, before tokenizing (the SavedModel's and
# SentenceEmbedder's cap), so a megabyte string costs no more than the pieces that are kept.
BYTES_PER_TOKEN = 100


def check_long_text(long_text, window_stride, max_windows, max_seq_length):
    """The window stride `long_text` uses (None for "truncate"); ValueError naming the setting that cannot work.

    `window_stride` None means half a window. A stride of a whole window or more would skip pieces between
    windows, so it must be less than `max_seq_length` and at most the pieces one window holds.
    """
    if long_text not in LONG_TEXT:
        raise ValueError(f"`long_text` must be one of {LONG_TEXT}. Received: long_text={long_text!r}")
    if long_text == "truncate":
        if window_stride is not None:
            raise ValueError(
                f"`window_stride` applies to long_text='windows'. Received: long_text='truncate', "
                f"window_stride={window_stride}"
            )
        return None
    budget = max_seq_length - SINGLE_SPECIALS
    if window_stride is None:
        window_stride = max(1, budget // 2)
    if not 1 <= window_stride < max_seq_length or window_stride > budget:
        raise ValueError(
            f"`window_stride` must be in [1, {budget}]: less than max_seq_length ({max_seq_length}) and at most "
            f"the {budget} pieces a window holds, or windows would skip text. Received: window_stride={window_stride}"
        )
    if max_windows < 1:
        raise ValueError(f"`max_windows` must be positive. Received: max_windows={max_windows}")
    return window_stride


def max_pieces(max_seq_length, window_stride=None, max_windows=MAX_WINDOWS):
    """Pieces of one text the model sees at most: one window's, or `max_windows` windows' with a stride."""
    budget = max_seq_length - SINGLE_SPECIALS
    return budget if not window_stride else budget + window_stride * (max_windows - 1)


def window_starts(length, max_seq_length, window_stride, max_windows=MAX_WINDOWS):
    """The first piece of each window of a text of `length` pieces: 0, stride, 2 * stride, ... until a window
    reaches the end (one window when the text fits, an empty one included), at most `max_windows`."""
    budget = max_seq_length - SINGLE_SPECIALS
    count = 1 + max(0, -(-(length - budget) // window_stride))
    return [window_stride * number for number in range(min(count, max_windows))]


def window_spans(lengths, budgets, stride):
    """Doc-stride windows over rows of pieces, as google-research/bert `run_squad.py`.

    Windows start every `min(stride, budget)` pieces until one reaches the
    end of its row; an empty row has one empty window.

    Args:
        lengths: int64 `[B]`, pieces per row.
        budgets: int64 `[B]`, pieces a window of the row holds (>= 1).
        stride: Python int >= 1.

    Returns:
        `(row, start, size)`: int64 `[N]` each: the row of each window, its
        first piece (within the row) and its number of pieces.
    """
    step = tf.minimum(tf.cast(stride, tf.int64), budgets)  # [B]
    extra = tf.maximum(lengths - budgets, 0)
    count = 1 + (extra + step - 1) // step  # [B]
    row = tf.repeat(tf.range(tf.size(lengths, out_type=tf.int64)), count)  # [N]
    number = tf.ragged.range(count).flat_values  # [N], window number within its row
    start = number * tf.gather(step, row)
    size = tf.minimum(tf.gather(lengths, row) - start, tf.gather(budgets, row))
    return row, start, size


def take_pieces(pieces, row, start, size):
    """Ragged `[N, (size)]` of `pieces[row][start:start + size]` for each window of a ragged `[B, (L)]`."""
    base = tf.gather(pieces.row_starts(), row) + start
    index = tf.ragged.range(base, base + size)  # [N, (n)] flat piece indices
    return index.with_flat_values(tf.gather(pieces.flat_values, index.flat_values))


def windows_of(pieces, max_seq_length, window_stride, max_windows=MAX_WINDOWS):
    """Ragged pieces `[B, (P)]` -> `(windows, row, count)`: every text's windows `[N, (W)]` of at most
    `max_seq_length - 2` pieces, `window_stride` apart (as `window_starts`, at most `max_windows` per text), the text
    each window belongs to (int64 `[N]`, in order) and the windows per text (int32 `[B]`)."""
    lengths = pieces.row_lengths()
    budgets = tf.fill(tf.shape(lengths), tf.constant(max_seq_length - SINGLE_SPECIALS, tf.int64))
    row, start, size = window_spans(lengths, budgets, window_stride)
    keep = start < window_stride * max_windows  # the window's number < max_windows
    row, start, size = (tf.boolean_mask(x, keep) for x in (row, start, size))
    count = tf.math.unsorted_segment_sum(tf.ones_like(row, tf.int32), row, tf.size(lengths))
    return take_pieces(pieces, row, start, size), row, count
