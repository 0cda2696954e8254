"""A tokenizer batch cut into row shards that TensorFlow runs side by side on the CPU's cores.

Each op of a tokenizer (regex passes, normalization, WordPiece) runs on one
thread, so one batch keeps one core busy while the others wait. Inside a graph
(`tf.function`, `tf.data`, a SavedModel), `in_row_shards` gives each shard of
the rows its own copy of the ops, which TensorFlow's executor may run at the same
time on its inter-op threads. It hands an op to another thread only when several
expensive ops are ready together, so the gain varies between processes (1.0-1.8x
on 2 cores, docs/results/2026-11-27-tokenizer-throughput.md). The shards are cut by bytes, not
rows, so each holds about the same work; their results are concatenated back in
row order, so the outputs are those of the whole batch at once.

`BERT_TF_TOKENIZER_SHARDS` sets the shard count: `auto` (the default) is one per
inter-op thread (`tf.config.threading`, else the CPUs this process may use), at
most `MAX_SHARDS`; `1` turns sharding off. Batches under `MIN_SHARD_ROWS` rows a
shard, and eager calls, run whole.
"""

import os

import tensorflow as tf

ENV_VAR = "BERT_TF_TOKENIZER_SHARDS"
# Every shard is a copy of the tokenizer's ops in the graph: more cost trace time and SavedModel size.
MAX_SHARDS = 8
# Batches with fewer rows a shard than this (serving requests, small batches) run whole, on one copy of the ops.
MIN_SHARD_ROWS = 16


def shard_count():
    """Row shards of a tokenizer batch, from `BERT_TF_TOKENIZER_SHARDS` (read when a graph is traced)."""
    setting = os.environ.get(ENV_VAR, "auto").strip().lower()
    if setting == "auto":
        threads = tf.config.threading.get_inter_op_parallelism_threads() or len(os.sched_getaffinity(0))
        return max(1, min(threads, MAX_SHARDS))
    try:
        shards = int(setting)
    except ValueError:
        shards = 0
    if shards < 1:
        raise ValueError(f"{ENV_VAR} must be auto or a whole number >= 1. Received: {ENV_VAR}={setting!r}")
    return shards


def in_row_shards(tokenize, strings):
    """`tokenize(strings)` for tf.string `[N]`, its rows cut into shards that run in parallel in a graph.

    Args:
        tokenize: tf.string `[n]` -> a tuple of tensors or ragged tensors whose
            rows follow the input rows' order (one per row, or one per row of
            a subset, such as the rows a path takes). It is traced once a
            shard, plus once for a whole batch too small to cut.
        strings: tf.string `[N]`.

    Returns:
        `tokenize`'s tuple for all `N` rows: each item the shards' items
        concatenated in order.
    """
    shards = shard_count()
    if shards == 1 or tf.executing_eagerly():
        return tokenize(strings)
    rows = tf.size(strings, out_type=tf.int64)

    def sharded():
        # Shard i ends at the first row whose bytes up to it reach i+1 shares of the total.
        ends = tf.cumsum(tf.cast(tf.strings.length(strings), tf.int64) + 1)
        shares = ends[-1] * tf.range(1, shards, dtype=tf.int64) // shards
        bounds = tf.concat([[0], tf.searchsorted(ends, shares, side="right", out_type=tf.int64), [rows]], 0)
        # One op makes every shard at once: TensorFlow's executor hands ops to another thread when several
        # expensive ones are ready together (slices cut one after another often ran one after another).
        outputs = [tokenize(piece) for piece in tf.split(strings, bounds[1:] - bounds[:-1], num=shards)]
        return tuple(tf.concat(parts, axis=0) for parts in zip(*outputs))

    return tf.cond(rows >= shards * MIN_SHARD_ROWS, sharded, lambda: tokenize(strings))
