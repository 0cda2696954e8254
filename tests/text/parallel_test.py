"""Row shards of a tokenizer batch (bert_tf.text.parallel): same ids as the whole batch, the shard setting."""

import os

import pytest
import tensorflow as tf

from bert_tf.text import BertTokenizer, parallel
from tests.text.edge_cases import EDGE_CASES


def _traced_ids(tokenizer, strings, monkeypatch, shards):
    monkeypatch.setenv(parallel.ENV_VAR, str(shards))
    fn = tf.function(lambda x: tokenizer.tokenize(x), input_signature=[tf.TensorSpec([None], tf.string)])
    return fn(tf.constant(strings)).to_list()


@pytest.mark.parametrize("setting, expected", [("1", 1), ("3", 3), (" 2 ", 2)])
def test_shard_count_setting(monkeypatch, setting, expected):
    monkeypatch.setenv(parallel.ENV_VAR, setting)
    assert parallel.shard_count() == expected


@pytest.mark.parametrize("setting", ["auto", "AUTO"])
@pytest.mark.parametrize("inter_op, expected", [(3, 3), (1, 1), (20, parallel.MAX_SHARDS), (0, None)])
def test_auto_shard_count_follows_inter_op_threads(monkeypatch, setting, inter_op, expected):
    # One shard per inter-op thread (the CPUs this process may use when that is unset), at most MAX_SHARDS.
    monkeypatch.setenv(parallel.ENV_VAR, setting)
    monkeypatch.setattr(tf.config.threading, "get_inter_op_parallelism_threads", lambda: inter_op)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4})
    assert parallel.shard_count() == (5 if expected is None else expected)


@pytest.mark.parametrize("setting", ["0", "-2", "two", ""])
def test_bad_shard_count_names_the_variable(monkeypatch, setting):
    monkeypatch.setenv(parallel.ENV_VAR, setting)
    with pytest.raises(ValueError, match=f"{parallel.ENV_VAR}.*{setting!r}"):
        parallel.shard_count()


@pytest.mark.slow
def test_sharded_ids_equal_the_whole_batch(minilm_vocab, monkeypatch):
    # Every kind of row (fast, general path, kept special tokens, invalid UTF-8, NUL, empty, CJK, words too
    # long), in an order where each shard holds a different mix; then one row holding most bytes (shards
    # left empty); then a batch too small to cut.
    tokenizer = BertTokenizer(minilm_vocab)
    mixed = [EDGE_CASES[(i * 7) % len(EDGE_CASES)] for i in range(12 * parallel.MIN_SHARD_ROWS)]
    lopsided = [b"a " * 5000 + "caf\u00e9 \u4e2d\u6587".encode()] + [b"", b"x"] * (2 * parallel.MIN_SHARD_ROWS)
    small = EDGE_CASES[:5]
    for batch in (mixed, lopsided, small):
        whole = tokenizer.tokenize(tf.constant(batch)).to_list()  # eager: never sharded
        for shards in (1, 2, 3, 5):
            assert _traced_ids(tokenizer, batch, monkeypatch, shards) == whole, shards


def test_sharded_tokenizer_in_tf_data(minilm_vocab, monkeypatch):
    monkeypatch.setenv(parallel.ENV_VAR, "3")
    tokenizer = BertTokenizer(minilm_vocab)
    lines = [f"Sentence number {i}, with caf\u00e9 and \u4e2d\u6587 text.".encode() for i in range(200)]
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(100).map(lambda x: tokenizer.tokenize(x).to_tensor())
    got = [row for batch in dataset for row in batch.numpy().tolist()]
    want = tokenizer.tokenize(tf.constant(lines)).to_tensor().numpy().tolist()
    assert [[i for i in row if i] for row in got] == [[i for i in row if i] for row in want]
