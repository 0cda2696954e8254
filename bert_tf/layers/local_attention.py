"""Attention that fits long sequences: sliding-window attention in blocks, global attention in query chunks.

Shapes: B batch, N heads, Q queries, T tokens (keys), D head size, C block size, K blocks.

ModernBERT's sliding-window layers let token i attend to token j when
`|i - j| <= local_attention // 2` (Hugging Face transformers' bidirectional
sliding-window mask, inclusive on both sides: a window of `local_attention`
tokens plus the token itself).

`sliding_window_context` never builds the `[T, T]` scores: the queries are cut
into blocks of `C = local_attention // 2` tokens, and block k sees only the keys
of blocks k - 1, k and k + 1 (`3C` keys, which hold its whole window). Its
scores are `[B, N, K, C, 3C]`, memory growing with `T x 1.5 local_attention`,
and a fixed `[C, 3C]` mask marks the window inside them. Padded keys, and the
blocks' own padding at both ends, are masked like padding.

`global_context` is plain attention over every key, but at inference, when the
`[B, N, T, T]` scores would pass `GLOBAL_SCORES_BUDGET` elements, it runs the
queries in chunks (`tf.map_fn`, `CHUNKS_AT_ONCE` chunks in flight), so no more
than that many scores exist at once. In training the whole matrix is built: the
backward pass keeps every chunk's probabilities anyway, so chunks would save
nothing but add a loop.

Both are exact: each query's softmax runs over the same keys with the same
masks as the full `[T, T]` form (masked scores add 0 after the exponential).
"""

import tensorflow as tf

from bert_tf.layers.bert_self_attention import MASK_BIAS

# The most float32 attention scores (elements) a global layer materialises at once at inference: 2^24, 64 MiB.
# A batch of 32 x 128 tokens x 12 heads (6.3M) or 1 x 1,024 (12.6M) runs in one piece; 8,192 tokens run in chunks
# of 85 queries, two at a time.
GLOBAL_SCORES_BUDGET = 2**24
# Chunks in flight at once (the loop's parallel_iterations), each of half the budget: two chunks side by side keep
# both cores of a small machine busy where one chunk's softmax and matmuls leave one idle (ModernBERT-base's global
# layer at 8,192 tokens, 2-core AMD EPYC: 8.0 s per layer against 15.5 s one chunk of the whole budget at a time).
CHUNKS_AT_ONCE = 2


def in_window(query_positions, key_positions, local_attention):
    """bool `[Q, T]`: whether each query position sees each key position (`|i - j| <= local_attention // 2`)."""
    distance = tf.abs(query_positions[:, None] - key_positions[None, :])
    return distance <= local_attention // 2


def sliding_window_context(query, key, value, padding_bias, local_attention, softmax):
    """Attention of every token over the keys within its sliding window, in blocks: `[B, N, T, D]`.

    Args:
        query: `[B, N, T, D]`, scaled by `1 / sqrt(D)` and rotated.
        key, value: `[B, N, T, D]`.
        padding_bias: float32 `[B, T]`, 0 at real keys and `MASK_BIAS` at padding.
        local_attention: the window's width (each side sees `local_attention // 2` tokens).
        softmax: `(scores float32 [B, N, Q, S], bias float32 [B, S]) -> probabilities [B, N, Q, S]` in the
            compute dtype (the caller's softmax, with its attention dropout); called with the blocks' scores
            flattened to `Q = K * C` queries over `S = 3C` keys and a zero bias (the masks are already added).
    """
    block = max(local_attention // 2, 1)  # C: a window's half fits in one block on either side
    batch, heads, length, depth = (tf.shape(query)[i] for i in range(4))
    blocks = (length + block - 1) // block  # K
    tail = blocks * block - length  # the last block's padding

    def split(t, before, after):  # [B, N, T, D] padded -> [B, N, K', C, D]
        t = tf.pad(t, [[0, 0], [0, 0], [before, after], [0, 0]])
        return tf.reshape(t, (batch, heads, -1, block, depth))

    def neighbours(t):  # [B, ..., K + 2, C, ...] -> [B, ..., K, 3C, ...]: blocks k - 1, k, k + 1 side by side
        return tf.concat([t[:, :, :-2], t[:, :, 1:-1], t[:, :, 2:]], axis=3)

    queries = split(query, 0, tail)  # [B, N, K, C, D]
    keys = neighbours(split(key, block, tail + block))  # [B, N, K, 3C, D]
    values = neighbours(split(value, block, tail + block))
    scores = tf.cast(tf.matmul(queries, keys, transpose_b=True), tf.float32)  # [B, N, K, C, 3C]
    # Query i of a block sits at offset C + i among its 3C keys: it sees offsets C + i - half .. C + i + half.
    offsets = tf.range(3 * block)[None, :] - block - tf.range(block)[:, None]  # [C, 3C]: key minus query position
    window_bias = tf.where(tf.abs(offsets) <= local_attention // 2, 0.0, MASK_BIAS)
    key_bias = tf.pad(padding_bias, [[0, 0], [block, tail + block]], constant_values=MASK_BIAS)  # [B, (K + 2) C]
    key_bias = tf.reshape(key_bias, (batch, 1, -1, 1, block))  # [B, 1, K + 2, 1, C]
    key_bias = tf.concat([key_bias[:, :, :-2], key_bias[:, :, 1:-1], key_bias[:, :, 2:]], axis=4)  # [B, 1, K, 1, 3C]
    scores = tf.reshape(scores + window_bias + key_bias, (batch, heads, -1, 3 * block))  # [B, N, K*C, 3C]
    probs = tf.reshape(softmax(scores, tf.zeros((batch, 3 * block))), (batch, heads, blocks, block, 3 * block))
    context = tf.reshape(tf.matmul(probs, values), (batch, heads, -1, depth))  # [B, N, K*C, D]
    return context[:, :, :length]


def global_context(query, key, value, padding_bias, softmax, training=False, budget=GLOBAL_SCORES_BUDGET):
    """Attention of every token over every key: `[B, N, T, D]`.

    Arguments as `sliding_window_context`'s (`softmax` gets `[B, N, Q, T]` scores and the `[B, T]` padding bias).
    At inference, scores larger than `budget` elements are computed a chunk of queries at a time; `budget` None
    builds the whole matrix always (a graph without the chunks' loop: the LiteRT export's, whose converter has no
    kernel for `tf.map_fn`'s TensorList ops).
    """

    def attend(q):  # [B, N, Q, D] -> [B, N, Q, D]
        scores = tf.cast(tf.matmul(q, key, transpose_b=True), tf.float32)  # [B, N, Q, T]
        return tf.matmul(softmax(scores, padding_bias), value)

    if training or budget is None:
        return attend(query)
    batch, heads, length, depth = (tf.shape(query)[i] for i in range(4))
    per_query = batch * heads * length  # scores one query row adds
    chunk = tf.maximum(budget // CHUNKS_AT_ONCE // tf.maximum(per_query, 1), 1)

    def in_chunks():
        chunks = (length + chunk - 1) // chunk
        queries = tf.pad(query, [[0, 0], [0, 0], [0, chunks * chunk - length], [0, 0]])
        queries = tf.transpose(tf.reshape(queries, (batch, heads, chunks, chunk, depth)), (2, 0, 1, 3, 4))
        contexts = tf.map_fn(attend, queries, parallel_iterations=CHUNKS_AT_ONCE, fn_output_signature=query.dtype)
        contexts = tf.reshape(tf.transpose(contexts, (1, 2, 0, 3, 4)), (batch, heads, -1, depth))
        return contexts[:, :, :length]

    return tf.cond(chunk >= length, lambda: attend(query), in_chunks)
