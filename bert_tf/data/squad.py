"""Extractive QA data: SQuAD v1.1/v2.0 JSON to windows, tf.data batches and answers.

Questions and contexts are tokenized in-graph (`BertTokenizer.tokenize` and
`tokenize_with_offsets`, in batches, each distinct context once); windows are
built in Python/numpy over the token arrays, as google-research/bert
`run_squad.py` does:

    [CLS] question (at most max_query_length pieces) [SEP] context window [SEP]

Context windows start every `doc_stride` pieces until one reaches the end of
the context. Each window records, for each context token, the CHARACTER
start/end offsets of the text it came from in the original context (the
tokenizer's UTF-8 byte offsets converted to Python string indices), so an
answer is always an exact slice `context[start:end]` of the original text,
accents, case and multi-byte characters included.

Labels: the start/end token of the (first) gold answer when it lies wholly
inside the window, else index 0 (`[CLS]`), which also labels unanswerable
(v2.0) questions.

Shapes: N windows, B batch, T max_seq_length.
"""

import collections
import dataclasses
import json

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.text import pair_separators


@dataclasses.dataclass
class SquadExample:
    """One question.

    Attributes:
        id: the question id.
        question: question text.
        context: the paragraph.
        answers: list of {"text", "answer_start"} (character offsets into
            `context`); empty for unanswerable questions.
        is_impossible: SQuAD v2.0 unanswerable question.
        plausible_answers: v2.0 plausible (wrong) answers of an unanswerable
            question, same form as `answers`.
        title: the article title.
    """

    id: str
    question: str
    context: str
    answers: list
    is_impossible: bool = False
    plausible_answers: list = dataclasses.field(default_factory=list)
    title: str = ""


@dataclasses.dataclass
class SquadWindows:
    """Packed windows and what maps them back to examples and characters.

    Attributes:
        token_ids, segment_ids, padding_mask: int32 `[N, T]` encoder inputs.
        start_positions, end_positions: int32 `[N]` answer token labels (0 =
            `[CLS]`: no answer in this window).
        example_index: int32 `[N]`, index into `examples`.
        char_starts, char_ends: int64 `[N, T]` character offsets into the
            example's context of each context token; -1 on question, special
            and padding tokens.
        max_context: bool `[N, T]`, whether this window gives the token its
            most context (of all windows holding it).
        examples: the `SquadExample`s.
        unmapped: ids of answerable examples whose answer covers no context
            token (e.g. only whitespace); they are labelled at `[CLS]`.
    """

    token_ids: np.ndarray
    segment_ids: np.ndarray
    padding_mask: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    char_starts: np.ndarray
    char_ends: np.ndarray
    max_context: np.ndarray
    examples: list
    unmapped: list = dataclasses.field(default_factory=list)

    def __len__(self):
        return len(self.token_ids)


# === Reading ===


def _answers(raw, context, qid, mismatches):
    answers = []
    for answer in raw or []:
        text, start = answer["text"], int(answer["answer_start"])
        if context[start : start + len(text)] != text:
            mismatches.append(f"{qid}: answer {text!r} at {start}, context has {context[start : start + len(text)]!r}")
        answers.append({"text": text, "answer_start": start})
    return answers


def make_examples(questions, where, strict=True):
    """`SquadExample`s from question records, with the checks of `read_squad`.

    Question ids must be unique, and every answer and plausible answer must
    be the context's text at its offset:
    `context[answer_start:answer_start + len(text)]` must equal `text`.

    Args:
        questions: iterable of `(position, fields)`: `fields` a dict of
            `SquadExample` keywords (`answers` and `plausible_answers` lists
            of {"text", "answer_start"}, or None for none), `position` what
            `where` turns into the location of an error.
        where: function of a position, or of None for the whole input,
            giving the location errors name (e.g. the file).
        strict: raise `ValueError` listing the ids of mismatched answers; if
            False, log them and keep the answers as given (their character
            offsets still define the labels).

    Returns:
        list of `SquadExample`, in the order of `questions`.

    Raises:
        ValueError: a duplicate question id (when it is met), or, if
            `strict`, answers that do not match their context (after all
            questions).
    """
    examples, mismatches, seen = [], [], set()
    for position, fields in questions:
        qid = fields["id"]
        if qid in seen:
            raise ValueError(f"{where(position)}: duplicate question id {qid!r}")
        seen.add(qid)
        context = fields["context"]
        examples.append(
            SquadExample(
                **dict(
                    fields,
                    answers=_answers(fields.get("answers"), context, qid, mismatches),
                    plausible_answers=_answers(fields.get("plausible_answers"), context, qid, mismatches),
                )
            )
        )
    if mismatches:
        message = (
            f"{where(None)}: {len(mismatches)} answers do not match their context at answer_start: "
            + "; ".join(mismatches[:10])
            + (" ..." if len(mismatches) > 10 else "")
        )
        if strict:
            raise ValueError(message)
        logging.warning(message)
    return examples


def _file_questions(data):
    """Yields `(None, fields)` for `make_examples` per question of a SQuAD file's JSON."""
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                yield (
                    None,
                    dict(
                        id=str(qa["id"]),
                        question=qa["question"],
                        context=context,
                        answers=qa.get("answers"),
                        is_impossible=bool(qa.get("is_impossible", False)),
                        plausible_answers=qa.get("plausible_answers"),
                        title=article.get("title", ""),
                    ),
                )


def read_squad(path, strict=True):
    """Reads a SQuAD v1.1 or v2.0 JSON file.

    Every answer is checked: `context[answer_start:answer_start + len(text)]`
    must equal `text`.

    Args:
        path: the file (any `tf.io.gfile` path).
        strict: raise `ValueError` listing the ids of mismatched answers; if
            False, log them and keep the answers as given (their character
            offsets still define the labels).

    Returns:
        list of `SquadExample`, in file order.
    """
    with tf.io.gfile.GFile(path, "rb") as f:
        text = f.read().decode("utf-8-sig", errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{path}:{e.lineno}:{e.colno}: not valid JSON ({e.msg}; truncated or not a JSON file?)"
        ) from None
    if not isinstance(data, dict) or "data" not in data:
        raise ValueError(f"{path}: not a SQuAD file: no top-level 'data' list")
    return make_examples(_file_questions(data), lambda position: path, strict=strict)


# === Tokenization ===


def _encode(text):
    # surrogatepass: a lone surrogate (legal in JSON) stays one character.
    return text.encode("utf-8", "surrogatepass")


def _char_index(encoded):
    """int64 `[bytes + 1]`: characters before each byte offset of UTF-8 bytes."""
    lead = (np.frombuffer(encoded, np.uint8) & 0xC0) != 0x80
    return np.concatenate([[0], np.cumsum(lead)]).astype(np.int64)


def _split_rows(ragged):
    """A ragged `[n, (k)]` tensor -> list of n numpy arrays."""
    values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
    return [values[a:b] for a, b in zip(splits[:-1], splits[1:])]


def _tokenize_questions(tokenizer, questions, batch_size):
    ids = []
    for i in range(0, len(questions), batch_size):
        batch = tf.constant([_encode(q) for q in questions[i : i + batch_size]], tf.string)
        ids.extend(_split_rows(tokenizer.tokenize(batch)))
    return ids


def _tokenize_contexts(tokenizer, contexts, batch_size):
    """Per context: (ids, char_starts, char_ends) numpy arrays."""
    out = []
    for i in range(0, len(contexts), batch_size):
        encoded = [_encode(c) for c in contexts[i : i + batch_size]]
        ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(encoded, tf.string))
        for text, row_ids, row_starts, row_ends in zip(
            encoded, _split_rows(ids), _split_rows(starts), _split_rows(ends)
        ):
            chars = _char_index(text)
            out.append((row_ids, chars[row_starts], chars[row_ends]))
    return out


# === Windows ===


def _answer_tokens(example, starts, ends):
    """(first, last) context token of the first answer, or None."""
    if example.is_impossible or not example.answers:
        return None
    answer = example.answers[0]
    begin = answer["answer_start"]
    end = begin + len(answer["text"])
    first = int(np.searchsorted(ends, begin, side="right"))  # first token ending after the answer begins
    last = int(np.searchsorted(starts, end, side="left")) - 1  # last token starting before it ends
    if first >= len(starts) or last < first:
        return None
    return first, last


def _window_spans(length, budget, stride):
    """[(start, length)] of the context windows, as run_squad.py."""
    spans, start = [], 0
    while True:
        size = min(length - start, budget)
        spans.append((start, size))
        if start + size >= length:
            return spans
        start += min(size, stride)


def _max_context_window(spans, length):
    """int `[length]`: the span giving each context token its most context (run_squad.py's score)."""
    starts = np.array([s for s, _ in spans])[:, None]  # [K, 1]
    sizes = np.array([n for _, n in spans])[:, None]
    index = np.arange(length)[None, :]  # [1, L]
    inside = (index >= starts) & (index < starts + sizes)
    score = np.minimum(index - starts, starts + sizes - 1 - index) + 0.01 * sizes  # [K, L]
    return np.argmax(np.where(inside, score, -1.0), axis=0)  # first best: the earliest span on ties


def _pack_window(tokenizer, max_seq_length, question, context, start, size):
    """`[CLS] question [SEP] context[start:start + size] [SEP]` as `[T]` arrays, with character offsets."""
    ids, starts, ends = context
    separators = [tokenizer.sep_id] * pair_separators(tokenizer)
    tokens = np.concatenate([[tokenizer.cls_id], question, separators, ids[start : start + size], [tokenizer.sep_id]])
    offset = len(question) + 1 + len(separators)
    window = slice(offset, offset + size)
    char_starts = np.full([max_seq_length], -1, np.int64)
    char_ends = np.full([max_seq_length], -1, np.int64)
    char_starts[window], char_ends[window] = starts[start : start + size], ends[start : start + size]
    segment_ids = np.zeros([max_seq_length], np.int32)
    segment_ids[offset : len(tokens)] = 1
    return {
        "token_ids": np.pad(tokens, (0, max_seq_length - len(tokens)), constant_values=tokenizer.pad_id),
        "segment_ids": segment_ids,
        "padding_mask": np.arange(max_seq_length) < len(tokens),
        "char_starts": char_starts,
        "char_ends": char_ends,
        "max_context": np.zeros([max_seq_length], bool),
    }


def make_windows(examples, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64, tokenize_batch_size=256):
    """Splits examples into packed windows with answer labels (see the module docstring).

    Args:
        examples: list of `SquadExample`.
        tokenizer: a `bert_tf.text.BertTokenizer`.
        max_seq_length: T.
        doc_stride: context pieces between window starts.
        max_query_length: question pieces kept (the rest is cut).
        tokenize_batch_size: strings tokenized per in-graph call.

    Returns:
        `SquadWindows`.
    """
    extra = pair_separators(tokenizer) - 1  # RoBERTa: `<s> question </s></s> context </s>`
    budget = max_seq_length - 3 - extra - max_query_length
    if budget < 1 or doc_stride < 1:
        raise ValueError(
            "`max_seq_length` must leave room for the context after the question and 3 special tokens, "
            f"and `doc_stride` must be positive. Received: max_seq_length={max_seq_length}, "
            f"max_query_length={max_query_length}, doc_stride={doc_stride}"
        )
    questions = _tokenize_questions(tokenizer, [e.question for e in examples], tokenize_batch_size)
    distinct = list(dict.fromkeys(e.context for e in examples))
    tokenized = dict(zip(distinct, _tokenize_contexts(tokenizer, distinct, tokenize_batch_size)))
    rows = collections.defaultdict(list)
    unmapped = []
    for index, (example, question) in enumerate(zip(examples, questions)):
        question = question[:max_query_length]
        ids, starts, ends = tokenized[example.context]
        answer = _answer_tokens(example, starts, ends)
        if answer is None and example.answers and not example.is_impossible:
            unmapped.append(example.id)
        offset = len(question) + 2 + extra  # [CLS] question [SEP] (RoBERTa: a second separator)
        spans = _window_spans(len(ids), max_seq_length - 1 - offset, doc_stride)
        owner = _max_context_window(spans, len(ids))  # [L]
        for k, (start, size) in enumerate(spans):
            window = _pack_window(tokenizer, max_seq_length, question, (ids, starts, ends), start, size)
            window["max_context"][offset : offset + size] = owner[start : start + size] == k
            inside = answer is not None and start <= answer[0] and answer[1] < start + size
            window["start_positions"] = answer[0] - start + offset if inside else 0
            window["end_positions"] = answer[1] - start + offset if inside else 0
            window["example_index"] = index
            for key, value in window.items():
                rows[key].append(value)
    if unmapped:
        logging.warning("%d answers cover no context token and are labelled at [CLS]: %s", len(unmapped), unmapped[:10])
    int32 = ("token_ids", "segment_ids", "padding_mask", "start_positions", "end_positions", "example_index")
    arrays = {k: np.asarray(v, np.int32 if k in int32 else None) for k, v in rows.items()}
    if not examples:
        arrays = _empty_arrays(max_seq_length)
    return SquadWindows(examples=list(examples), unmapped=unmapped, **arrays)


def _empty_arrays(max_seq_length):
    matrix = lambda dtype: np.zeros([0, max_seq_length], dtype)  # noqa: E731
    vector = np.zeros([0], np.int32)
    return dict(
        token_ids=matrix(np.int32),
        segment_ids=matrix(np.int32),
        padding_mask=matrix(np.int32),
        start_positions=vector,
        end_positions=vector,
        example_index=vector,
        char_starts=matrix(np.int64),
        char_ends=matrix(np.int64),
        max_context=matrix(bool),
    )


def make_dataset(windows, batch_size, shuffle=False, seed=0, repeat=False, drop_remainder=False, labels=True):
    """Batches of windows.

    Args:
        windows: `SquadWindows`.
        batch_size: B.
        shuffle: shuffle windows (full buffer, seeded, a new order every pass).
        seed: shuffle seed.
        repeat: repeat forever.
        drop_remainder: drop a last partial batch.
        labels: yield labels (training); False yields features only, in
            window order, for `extract_answers`.

    Returns:
        `tf.data.Dataset` of `(features, {"start_logits": int32 [B],
        "end_logits": int32 [B]})` (the keys of `BertSpanLabeler`'s outputs),
        features dict `token_ids`, `segment_ids`, `padding_mask` int32
        `[B, T]`.
    """
    if batch_size <= 0:
        raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
    features = {k: getattr(windows, k) for k in ("token_ids", "segment_ids", "padding_mask")}
    if labels:
        element = (features, {"start_logits": windows.start_positions, "end_logits": windows.end_positions})
    else:
        element = features
    dataset = tf.data.Dataset.from_tensor_slices(element)
    if shuffle:
        dataset = dataset.shuffle(max(len(windows), 1), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    return dataset.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


# === Answers ===


def _best_span(start, end, start_ok, end_ok, n_best, max_answer_length):
    """(score, first, last) of the best span of one window, or None.

    Args:
        start, end: float `[T]` logits.
        start_ok, end_ok: bool `[T]`, tokens a span may start at / end at.
    """
    start_candidates, end_candidates = np.flatnonzero(start_ok), np.flatnonzero(end_ok)
    if start_candidates.size == 0 or end_candidates.size == 0:
        return None
    starts = start_candidates[np.argsort(-start[start_candidates], kind="stable")[:n_best]]  # [n]
    ends = end_candidates[np.argsort(-end[end_candidates], kind="stable")[:n_best]]  # [n]
    length = ends[None, :] - starts[:, None] + 1  # [n, n]
    ok = (length >= 1) & (length <= max_answer_length)
    if not ok.any():
        return None
    scores = np.where(ok, start[starts][:, None] + end[ends][None, :], -np.inf)
    i, j = np.unravel_index(np.argmax(scores), scores.shape)
    return float(scores[i, j]), int(starts[i]), int(ends[j])


def extract_answers(
    windows, start_logits, end_logits, n_best=20, max_answer_length=30, null_threshold=None, require_max_context=False
):
    """Best answer text per example from window logits.

    For every window, the `n_best` highest start and end logits over context
    tokens form candidate spans (end >= start, at most `max_answer_length`
    tokens); the best-scoring span (start + end logit) over all windows of an
    example wins and is returned as the exact context characters it covers.

    Args:
        windows: `SquadWindows` (in the same order as the logits).
        start_logits, end_logits: float `[N, T]` (numpy or tensors).
        n_best: start and end candidates per window.
        max_answer_length: longest answer, in tokens.
        null_threshold: SQuAD v2.0: answer "" when the null score (the
            smallest `[CLS]` start + end logit over the example's windows)
            exceeds the best span score by more than this. None (v1.1) always
            answers with a span.
        require_max_context: only start spans at tokens whose window gives
            them their most context (run_squad.py's rule).

    Returns:
        dict id -> answer text ("" when no span is valid or null wins).
    """
    start_logits = np.asarray(start_logits, np.float64)
    end_logits = np.asarray(end_logits, np.float64)
    if start_logits.shape != windows.token_ids.shape or end_logits.shape != windows.token_ids.shape:
        raise ValueError(
            f"Logits must be [N, T] = {windows.token_ids.shape}. Received: start_logits.shape="
            f"{start_logits.shape}, end_logits.shape={end_logits.shape}"
        )
    best = {}  # example index -> (score, window, first, last)
    null = {}
    for n in range(len(windows)):
        example = int(windows.example_index[n])
        null_score = start_logits[n, 0] + end_logits[n, 0]
        null[example] = min(null.get(example, np.inf), null_score)
        valid = windows.char_starts[n] >= 0  # context tokens
        start_ok = valid & windows.max_context[n] if require_max_context else valid
        span = _best_span(start_logits[n], end_logits[n], start_ok, valid, n_best, max_answer_length)
        if span is not None and (example not in best or span[0] > best[example][0]):
            best[example] = (span[0], n) + span[1:]
    answers = {}
    for index, example in enumerate(windows.examples):
        if index not in best:
            answers[example.id] = ""
            continue
        score, n, first, last = best[index]
        if null_threshold is not None and null[index] - score > null_threshold:
            answers[example.id] = ""
        else:
            answers[example.id] = example.context[windows.char_starts[n, first] : windows.char_ends[n, last]]
    return answers
