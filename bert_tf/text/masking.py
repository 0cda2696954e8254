"""Dynamic masked-LM masking in-graph, with stateless randomness.

Every random draw is a hash of `(seed, epoch, example index, position,
stream)`, so a batch is reproducible from its indices alone: the same seed
gives the same masks, each epoch masks differently (dynamic masking), and a
`tf.data` pipeline that uses it holds no random state, so its iterator can be
saved in a `tf.train.Checkpoint`.

Shapes: B batch, T tokens, P = max_predictions_per_seq.
"""

import tensorflow as tf

_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
# Random streams: which draw a hash is for.
_SELECT, _ACTION, _RANDOM_TOKEN = 1, 2, 3
_SPAN_LENGTH, _SPAN_START = 4, 5
# Salt of the keys of ELECTRA's generator-sample draws (`replacement_uniforms`): a stream apart from the masker's.
_REPLACEMENT_SALT = 0x454C454354524131
# Which tokens a masker selects: single pieces, whole words, or spans of whole words (SpanBERT).
MASKING_MODES = ("token", "whole_word", "span")


def _u64(value):
    return tf.cast(value, tf.uint64)


def _mix(x):
    """The splitmix64 finalizer: a bijective avalanche of uint64 values."""
    x = x + tf.constant(_GOLDEN, tf.uint64)
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u64(30))) * tf.constant(_MIX1, tf.uint64)
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u64(27))) * tf.constant(_MIX2, tf.uint64)
    return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u64(31)))


def example_keys(seed, epoch, example_index):
    """uint64 `[B]` keys from an int seed, the epoch and int `[B]` example indices."""
    key = _mix(_mix(_u64(seed)) ^ _u64(epoch))
    return _mix(key ^ _u64(example_index))


def uniform(keys, positions, stream):
    """float32 uniform `[0, 1)` of shape `[B, T]` from keys `[B]` and int positions `[B, T]`."""
    bits = _mix(keys[:, None] ^ _mix(_u64(positions) * _u64(4) + _u64(stream)))
    return tf.cast(tf.bitwise.right_shift(bits, _u64(40)), tf.float32) * (1.0 / (1 << 24))


def replacement_uniforms(seed, epoch, example_index, slots):
    """float32 uniform `[0, 1)` draws `[B, slots]`, one per masked-LM slot of each example: what ELECTRA's
    generator samples its replacement with (`bert_tf.models.sample_replacements`). A hash of `(seed, epoch,
    example index, slot)` like the masker's draws, on keys of their own."""
    keys = _mix(example_keys(seed, epoch, example_index) ^ tf.constant(_REPLACEMENT_SALT, tf.uint64))
    slot = tf.broadcast_to(tf.range(slots)[None, :], tf.stack([tf.shape(keys)[0], slots]))
    return uniform(keys, slot, 0)


class MaskedLMMasker:
    """Chooses and corrupts masked-LM targets in a packed batch.

    Of the maskable tokens (not padding, not one of `special_ids`),
    `round(masking_rate * count)` are selected (at least 1, at most
    `max_predictions_per_seq`); each selected token becomes `[MASK]` with
    probability `mask_token_rate`, a uniformly random vocabulary id with
    probability `random_token_rate`, and stays unchanged otherwise.

    With `masking="whole_word"` (or the legacy `whole_word_masking=True`), a
    word (a piece plus the continuation pieces after it: `##` pieces, or for
    byte-level BPE and SentencePiece the pieces that do not start a word) is
    selected or left whole: words are drawn in random order and a word is
    taken while the pieces taken so far plus its own fit the budget.

    With `masking="span"` (SpanBERT), spans of whole words are selected until
    the budget is met (or no free word fits what is left of it): each round draws a span length L in words from a
    geometric distribution with `span_geometric_p` (support 1, 2, ...),
    clipped at `max_span_length`, and a start word uniformly among the words
    not yet selected whose pieces fit the budget left (the same as redrawing
    a start that is taken or does not fit); the span is words start ..
    start + L - 1, SHORTENED (never skipped) at the first word already
    selected (spans do not overlap), at the end of the sequence, and to the
    whole words that fit the budget left. Each round so takes at least one
    word, and selection ends when no free word fits the budget left, within
    `max_predictions_per_seq` rounds. The shortening makes the kept spans
    somewhat shorter than the drawn lengths (more so at high rates, where
    free runs of words are short); the drawn lengths follow the clipped
    geometric distribution exactly. The 80/10/10 replacement is drawn once
    per span: all its tokens become `[MASK]`, or all random ids, or all stay.
    Words are numbered over the whole sequence, skipping special tokens, so a
    span may continue past a `[SEP]` (which itself is never masked).

    Args:
        vocab_size: V; random replacements are drawn from `[0, V)` minus specials.
        mask_id: id of `[MASK]`.
        special_ids: ids never selected (`[CLS]`, `[SEP]`, `[PAD]`, ...).
        continuation_ids: ids of `##` pieces (needed for whole-word and span masking).
        masking: one of `MASKING_MODES`; None: "whole_word" when
            `whole_word_masking`, else "token".
        span_geometric_p: p of span masking's geometric length distribution, in (0, 1].
        max_span_length: longest span in words (a positive int).
    """

    def __init__(
        self,
        vocab_size,
        mask_id,
        special_ids,
        masking_rate=0.15,
        max_predictions_per_seq=20,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        whole_word_masking=None,
        continuation_ids=None,
        seed=0,
        masking=None,
        span_geometric_p=0.2,
        max_span_length=10,
    ):
        if not 0.0 < masking_rate <= 1.0:
            raise ValueError(f"`masking_rate` must be in (0, 1]. Received: masking_rate={masking_rate}")
        if max_predictions_per_seq <= 0:
            raise ValueError(
                "`max_predictions_per_seq` must be positive. "
                f"Received: max_predictions_per_seq={max_predictions_per_seq}"
            )
        if mask_token_rate < 0 or random_token_rate < 0 or mask_token_rate + random_token_rate > 1.0:
            raise ValueError(
                "`mask_token_rate` and `random_token_rate` must be >= 0 and sum to <= 1. "
                f"Received: mask_token_rate={mask_token_rate}, random_token_rate={random_token_rate}"
            )
        if masking is None:
            masking = "whole_word" if whole_word_masking else "token"
        elif masking not in MASKING_MODES:
            raise ValueError(f"`masking` must be one of {MASKING_MODES}. Received: masking={masking!r}")
        elif whole_word_masking is not None and bool(whole_word_masking) != (masking == "whole_word"):
            raise ValueError(
                f"`whole_word_masking={whole_word_masking}` contradicts `masking={masking!r}`: set only `masking`."
            )
        if masking != "token" and continuation_ids is None:
            raise ValueError(f"`masking={masking!r}` needs `continuation_ids` (the ids of '##' pieces).")
        if not 0.0 < span_geometric_p <= 1.0:
            raise ValueError(f"`span_geometric_p` must be in (0, 1]. Received: span_geometric_p={span_geometric_p}")
        if isinstance(max_span_length, bool) or int(max_span_length) != max_span_length or max_span_length < 1:
            raise ValueError(
                f"`max_span_length` must be a positive integer. Received: max_span_length={max_span_length}"
            )
        self.vocab_size = vocab_size
        self.mask_id = mask_id
        self.special_ids = sorted(set(int(i) for i in special_ids))
        self.masking_rate = masking_rate
        self.max_predictions_per_seq = max_predictions_per_seq
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.masking = masking
        self.whole_word_masking = masking == "whole_word"
        self.span_geometric_p = float(span_geometric_p)
        self.max_span_length = int(max_span_length)
        self.seed = seed
        continuation = [False] * vocab_size
        for i in continuation_ids or ():
            continuation[int(i)] = True
        self._is_continuation = tf.constant(continuation, tf.bool)
        special = [False] * vocab_size
        for i in self.special_ids:
            special[i] = True
        self._is_special = tf.constant(special, tf.bool)
        # Random replacements are drawn from the non-special ids.
        self._replacement_ids = tf.constant([i for i in range(vocab_size) if not special[i]], tf.int32)

    def __call__(self, token_ids, padding_mask, example_index, epoch=0):
        """Masks a packed batch.

        Args:
            token_ids: int32 `[B, T]`.
            padding_mask: int `[B, T]`, 1 on real tokens.
            example_index: int `[B]`, the global index of each example in its epoch.
            epoch: int scalar, or int `[B]` (the epoch of each example).
        Returns:
            dict: `token_ids` `[B, T]` (corrupted), `mask_positions` `[B, P]`,
            `mask_ids` `[B, P]` (original ids, the labels), `mask_weights`
            float32 `[B, P]` (0 on unused slots).
        """
        token_ids = tf.convert_to_tensor(token_ids, tf.int32)
        length = tf.shape(token_ids)[1]
        positions = tf.broadcast_to(tf.range(length)[None, :], tf.shape(token_ids))  # [B, T]
        keys = example_keys(self.seed, epoch, example_index)
        selection = self.select(token_ids, padding_mask, example_index, epoch)
        selected = selection["selected"]

        # Selected positions first, in position order; then unused slots.
        order = tf.argsort(tf.where(selected, positions, positions + length), axis=1, stable=True)
        slots = self.max_predictions_per_seq
        order = tf.pad(order, [[0, 0], [0, tf.maximum(slots - length, 0)]])[:, :slots]  # [B, P]
        num_selected = tf.reduce_sum(tf.cast(selected, tf.int32), axis=1)
        used = tf.range(slots)[None, :] < num_selected[:, None]  # [B, P]
        mask_positions = tf.where(used, order, 0)
        mask_ids = tf.where(used, tf.gather(token_ids, mask_positions, batch_dims=1), 0)

        # One action per token, or per span (all of a span's tokens masked, random or kept together).
        action_positions = positions if self.masking != "span" else length + selection["span"]
        action = uniform(keys, action_positions, _ACTION)
        pick = tf.cast(
            uniform(keys, positions, _RANDOM_TOKEN) * tf.cast(tf.size(self._replacement_ids), tf.float32), tf.int32
        )
        random_ids = tf.gather(self._replacement_ids, tf.minimum(pick, tf.size(self._replacement_ids) - 1))
        corrupted = tf.where(
            action < self.mask_token_rate,
            self.mask_id,
            tf.where(action < self.mask_token_rate + self.random_token_rate, random_ids, token_ids),
        )
        return {
            "token_ids": tf.where(selected, corrupted, token_ids),
            "mask_positions": mask_positions,
            "mask_ids": mask_ids,
            "mask_weights": tf.cast(used, tf.float32),
        }

    def select(self, token_ids, padding_mask, example_index, epoch=0):
        """Which tokens `__call__` masks, without corrupting them.

        Args: as `__call__`.
        Returns:
            dict: `selected` bool `[B, T]`; `span` int32 `[B, T]`, the span
            number (1, 2, ... in the order drawn) of each selected token with
            span masking, else 0; `drawn_lengths` int32 `[B, P]`, with span
            masking the span length in words drawn in each round (0 after the
            last round), else zeros.
        """
        token_ids = tf.convert_to_tensor(token_ids, tf.int32)
        length = tf.shape(token_ids)[1]
        positions = tf.broadcast_to(tf.range(length)[None, :], tf.shape(token_ids))  # [B, T]
        maskable = tf.logical_and(
            tf.cast(padding_mask, tf.bool), tf.logical_not(tf.gather(self._is_special, token_ids))
        )
        keys = example_keys(self.seed, epoch, example_index)
        count = tf.reduce_sum(tf.cast(maskable, tf.float32), axis=1)  # [B]
        budget = tf.minimum(
            tf.maximum(tf.round(count * self.masking_rate), tf.minimum(count, 1.0)), float(self.max_predictions_per_seq)
        )  # [B]
        span = tf.zeros_like(token_ids)
        drawn = tf.zeros([tf.shape(token_ids)[0], self.max_predictions_per_seq], tf.int32)
        if self.masking == "span":
            selected, span, drawn = self._select_spans(token_ids, maskable, keys, budget)
        elif self.masking == "whole_word":
            selected = self._select_words(token_ids, maskable, keys, budget)
        else:
            score = tf.where(maskable, uniform(keys, positions, _SELECT), 2.0)  # [B, T]
            rank = tf.argsort(tf.argsort(score, axis=1, stable=True), axis=1, stable=True)
            selected = tf.logical_and(maskable, tf.cast(rank, tf.float32) < budget[:, None])
        return {"selected": selected, "span": span, "drawn_lengths": drawn}

    def span_lengths(self, uniforms):
        """Span lengths in words from uniform `[0, 1)` draws: geometric (support 1, 2, ...) clipped at the maximum.

        Args:
            uniforms: float32 `[...]`.
        Returns:
            int32 `[...]`: `floor(log(1 - u) / log(1 - p)) + 1`, at most `max_span_length`.
        """
        if self.span_geometric_p >= 1.0:
            return tf.ones_like(uniforms, tf.int32)
        drawn = tf.floor(tf.math.log1p(-uniforms) / tf.math.log1p(-self.span_geometric_p)) + 1.0
        return tf.cast(tf.minimum(drawn, float(self.max_span_length)), tf.int32)

    def _words(self, token_ids, maskable):
        """Word number of each piece `[B, T]` (0 before the first word start) and maskable pieces per word `[B, T + 1]`."""
        batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        starts = tf.logical_and(maskable, tf.logical_not(tf.gather(self._is_continuation, token_ids)))
        words = tf.cumsum(tf.cast(starts, tf.int32), axis=1)  # [B, T]
        segment = words + tf.range(batch)[:, None] * (length + 1)
        sizes = tf.math.unsorted_segment_sum(tf.cast(maskable, tf.float32), segment, batch * (length + 1))
        return words, tf.reshape(sizes, [batch, length + 1])

    def _select_spans(self, token_ids, maskable, keys, budget):
        """Span selection (see the class docstring): selected bool `[B, T]`, span int32 `[B, T]`, drawn int32 `[B, P]`.

        One round per iteration of a bounded loop (at most P rounds), vectorized over the batch and over words.
        """
        batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        rounds = self.max_predictions_per_seq
        words, word_size = self._words(token_ids, maskable)  # [B, T], [B, W] with W = T + 1
        width = length + 1
        index = tf.range(width)[None, :]  # [1, W]
        exists = word_size > 0.0

        def free_words(taken, remaining):
            free = tf.logical_and(exists, tf.logical_not(taken))
            return free, tf.logical_and(free, word_size <= remaining[:, None])

        def body(step, _, taken, span_of_word, remaining, drawn):
            free, candidate = free_words(taken, remaining)
            count = tf.reduce_sum(tf.cast(candidate, tf.int32), axis=1)  # [B]
            active = count > 0
            at_step = tf.fill([batch, 1], step)
            span_length = self.span_lengths(uniform(keys, at_step, _SPAN_LENGTH)[:, 0])  # [B]
            pick = tf.cast(uniform(keys, at_step, _SPAN_START)[:, 0] * tf.cast(count, tf.float32), tf.int32)
            pick = tf.minimum(pick, tf.maximum(count - 1, 0))
            rank = tf.cumsum(tf.cast(candidate, tf.int32), axis=1) - 1
            start = tf.argmax(tf.cast(tf.logical_and(candidate, rank == pick[:, None]), tf.int32), axis=1)
            start = tf.cast(start, tf.int32)[:, None]  # [B, 1]
            blocked = tf.logical_and(index > start, tf.logical_not(free))
            first_blocked = tf.reduce_min(tf.where(blocked, index, width), axis=1, keepdims=True)
            end = tf.minimum(start + span_length[:, None], first_blocked)
            in_span = tf.logical_and(index >= start, index < end)
            filled = tf.cumsum(tf.where(in_span, word_size, 0.0), axis=1)
            keep = tf.logical_and(tf.logical_and(in_span, filled <= remaining[:, None]), active[:, None])
            taken = tf.logical_or(taken, keep)
            span_of_word = tf.where(keep, step + 1, span_of_word)
            remaining = remaining - tf.reduce_sum(tf.where(keep, word_size, 0.0), axis=1)
            drawn = (
                drawn + tf.one_hot(step, rounds, dtype=tf.int32)[None, :] * tf.where(active, span_length, 0)[:, None]
            )
            _, candidate = free_words(taken, remaining)
            shaped = [
                tf.ensure_shape(new, old.shape) for new, old in zip((taken, span_of_word, remaining, drawn), state[2:])
            ]
            return (step + 1, tf.reduce_any(candidate), *shaped)

        state = (
            tf.constant(0),
            tf.constant(True),
            tf.zeros([batch, width], tf.bool),
            tf.zeros([batch, width], tf.int32),
            budget,
            tf.zeros([batch, rounds], tf.int32),
        )
        _, _, taken, span_of_word, _, drawn = tf.while_loop(
            lambda step, more, *_: tf.logical_and(step < rounds, more), body, state, maximum_iterations=rounds
        )
        selected = tf.logical_and(maskable, tf.gather(taken, words, batch_dims=1))
        span = tf.where(selected, tf.gather(span_of_word, words, batch_dims=1), 0)
        return selected, span, drawn

    def _select_words(self, token_ids, maskable, keys, budget):
        """Whole-word selection: bool `[B, T]`.

        Words are visited in a random order; a word is taken when the pieces
        taken so far plus its own fit the budget, else skipped (as the
        original `create_pretraining_data.py` does).
        """
        batch = tf.shape(token_ids)[0]
        words, sizes = self._words(token_ids, maskable)  # [B, T] word number of each piece, [B, T + 1]
        word_size = tf.gather(sizes, words, batch_dims=1)  # [B, T] maskable pieces in this piece's word
        score = tf.where(maskable, uniform(keys, words, _SELECT), 2.0)  # equal within a word
        order = tf.argsort(score, axis=1, stable=True)  # a word's pieces stay contiguous
        sorted_words = tf.gather(words, order, batch_dims=1)
        new_word = tf.concat([tf.ones([batch, 1], tf.bool), sorted_words[:, 1:] != sorted_words[:, :-1]], axis=1)
        sorted_maskable = tf.gather(maskable, order, batch_dims=1)
        sorted_size = tf.gather(word_size, order, batch_dims=1)

        # No bool (or integer) Transpose, which TensorFlow's oneDNN build logs at ERROR level ("oneDNN supports
        # DT_BOOL only on platforms with AVX-512"): the columns are transposed, and `take` carried, as float32
        # (a Cast next to a Transpose would be moved by grappler to make the Transpose bool again).
        def step(carry, column):
            taken, take = carry  # take: 1.0 or 0.0
            is_new, can_mask, size = column
            fits = tf.cast(tf.logical_and(can_mask > 0.0, taken + size <= budget), tf.float32)
            take = tf.where(is_new > 0.0, fits, take)
            taken = taken + tf.where(tf.logical_and(is_new > 0.0, take > 0.0), size, 0.0)
            return taken, take

        columns = tf.stack([tf.cast(new_word, tf.float32), tf.cast(sorted_maskable, tf.float32), sorted_size])
        columns = tf.transpose(columns, [0, 2, 1])  # [3, T, B]
        _, take = tf.scan(
            step, (columns[0], columns[1], columns[2]), initializer=(tf.zeros([batch]), tf.zeros([batch]))
        )
        take = tf.logical_and(tf.transpose(take) > 0.0, sorted_maskable)  # [B, T] in sorted order
        inverse = tf.argsort(order, axis=1, stable=True)
        return tf.gather(take, inverse, batch_dims=1)
