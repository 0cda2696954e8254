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


class MaskedLMMasker:
    """Chooses and corrupts masked-LM targets in a packed batch.

    Of the maskable tokens (not padding, not one of `special_ids`),
    `round(masking_rate * count)` are selected (at least 1, at most
    `max_predictions_per_seq`); each selected token becomes `[MASK]` with
    probability `mask_token_rate`, a uniformly random vocabulary id with
    probability `random_token_rate`, and stays unchanged otherwise.

    With `whole_word_masking`, a word (a piece plus the `##` pieces after it)
    is selected or left whole: words are drawn in random order and a word is
    taken while the pieces taken so far plus its own fit the budget.

    Args:
        vocab_size: V; random replacements are drawn from `[0, V)` minus specials.
        mask_id: id of `[MASK]`.
        special_ids: ids never selected (`[CLS]`, `[SEP]`, `[PAD]`, ...).
        continuation_ids: ids of `##` pieces (needed for whole-word masking).
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
        whole_word_masking=False,
        continuation_ids=None,
        seed=0,
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
        if whole_word_masking and continuation_ids is None:
            raise ValueError("`whole_word_masking=True` needs `continuation_ids` (the ids of '##' pieces).")
        self.vocab_size = vocab_size
        self.mask_id = mask_id
        self.special_ids = sorted(set(int(i) for i in special_ids))
        self.masking_rate = masking_rate
        self.max_predictions_per_seq = max_predictions_per_seq
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.whole_word_masking = whole_word_masking
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
        maskable = tf.logical_and(
            tf.cast(padding_mask, tf.bool), tf.logical_not(tf.gather(self._is_special, token_ids))
        )
        keys = example_keys(self.seed, epoch, example_index)
        count = tf.reduce_sum(tf.cast(maskable, tf.float32), axis=1)  # [B]
        budget = tf.minimum(
            tf.maximum(tf.round(count * self.masking_rate), tf.minimum(count, 1.0)), float(self.max_predictions_per_seq)
        )  # [B]
        if self.whole_word_masking:
            selected = self._select_words(token_ids, maskable, keys, budget)
        else:
            score = tf.where(maskable, uniform(keys, positions, _SELECT), 2.0)  # [B, T]
            rank = tf.argsort(tf.argsort(score, axis=1, stable=True), axis=1, stable=True)
            selected = tf.logical_and(maskable, tf.cast(rank, tf.float32) < budget[:, None])

        # Selected positions first, in position order; then unused slots.
        order = tf.argsort(tf.where(selected, positions, positions + length), axis=1, stable=True)
        slots = self.max_predictions_per_seq
        order = tf.pad(order, [[0, 0], [0, tf.maximum(slots - length, 0)]])[:, :slots]  # [B, P]
        num_selected = tf.reduce_sum(tf.cast(selected, tf.int32), axis=1)
        used = tf.range(slots)[None, :] < num_selected[:, None]  # [B, P]
        mask_positions = tf.where(used, order, 0)
        mask_ids = tf.where(used, tf.gather(token_ids, mask_positions, batch_dims=1), 0)

        action = uniform(keys, positions, _ACTION)
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

    def _select_words(self, token_ids, maskable, keys, budget):
        """Whole-word selection: bool `[B, T]`.

        Words are visited in a random order; a word is taken when the pieces
        taken so far plus its own fit the budget, else skipped (as the
        original `create_pretraining_data.py` does).
        """
        batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        starts = tf.logical_and(maskable, tf.logical_not(tf.gather(self._is_continuation, token_ids)))
        words = tf.cumsum(tf.cast(starts, tf.int32), axis=1)  # [B, T] word number of each piece
        segment = words + tf.range(batch)[:, None] * (length + 1)
        sizes = tf.math.unsorted_segment_sum(tf.cast(maskable, tf.float32), segment, batch * (length + 1))
        word_size = tf.gather(sizes, segment)  # [B, T] maskable pieces in this piece's word
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
