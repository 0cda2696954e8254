"""call_unpadded: the padding-free inference path equals the padded model at real tokens."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import BertClassifier, BertPretrainer, BertSpanLabeler, BertTokenClassifier
from tests.helpers import random_inputs, tiny_encoder

LENGTHS = [9, 5, 1, 7]


def _batch():
    return random_inputs(batch=4, length=9, lengths=LENGTHS, seed=3)


def _short_batch():
    """Every row shorter than T = 12: the padding-free paths cut the batch to 5 columns (`trim_padding`)."""
    return random_inputs(batch=4, length=12, lengths=[5, 3, 1, 4], seed=7)


def _real(batch):
    return np.asarray(batch["padding_mask"], bool)


@pytest.mark.parametrize("make_batch", [_batch, _short_batch], ids=["a-full-row", "all-rows-short"])
@pytest.mark.parametrize("pre_layer_norm", [False, True])
@pytest.mark.parametrize("jit", [False, True])
def test_encoder_equals_padded_at_real_tokens_and_is_zero_at_padding(pre_layer_norm, jit, make_batch):
    encoder = tiny_encoder(pre_layer_norm=pre_layer_norm, dropout=0.0, attention_dropout=0.0)
    batch = make_batch()
    padded = encoder(batch, training=False)
    unpadded = tf.function(encoder.call_unpadded, jit_compile=jit)(batch)
    assert unpadded["sequence_output"].shape == padded["sequence_output"].shape
    real = _real(batch)
    for name in ("sequence_output",):
        np.testing.assert_allclose(unpadded[name].numpy()[real], padded[name].numpy()[real], atol=1e-5)
        assert not np.any(unpadded[name].numpy()[~real])
    for ours, theirs in zip(unpadded["encoder_outputs"], padded["encoder_outputs"]):
        np.testing.assert_allclose(ours.numpy()[real], theirs.numpy()[real], atol=1e-5)
    np.testing.assert_allclose(unpadded["pooled_output"], padded["pooled_output"], atol=1e-5)
    assert unpadded["sequence_output"].dtype == tf.float32


def test_encoder_unpadded_under_mixed_bfloat16_is_close_and_float32():
    encoder = tiny_encoder(dropout=0.0, attention_dropout=0.0, dtype="mixed_bfloat16")
    batch = _batch()
    padded = encoder(batch, training=False)
    unpadded = encoder.call_unpadded(batch)
    real = _real(batch)
    assert unpadded["sequence_output"].dtype == tf.float32
    np.testing.assert_allclose(
        unpadded["sequence_output"].numpy()[real], padded["sequence_output"].numpy()[real], atol=0.05
    )


def test_encoder_unpadded_handles_a_batch_of_only_padding_rows_and_an_empty_batch():
    encoder = tiny_encoder(dropout=0.0, attention_dropout=0.0)
    batch = {k: np.zeros((2, 5), np.int32) for k in ("token_ids", "segment_ids", "padding_mask")}
    outputs = encoder.call_unpadded(batch)
    assert outputs["sequence_output"].shape == (2, 5, encoder.hidden_dim)
    assert not np.any(outputs["sequence_output"].numpy())
    empty = {k: np.zeros((0, 5), np.int32) for k in batch}
    assert encoder.call_unpadded(empty)["pooled_output"].shape == (0, encoder.hidden_dim)


@pytest.mark.parametrize(
    "build",
    [
        lambda e: BertClassifier(e, num_classes=3, dropout=0.0),
        lambda e: BertTokenClassifier(e, num_classes=4, dropout=0.0),
        lambda e: BertSpanLabeler(e),
        lambda e: BertPretrainer(e),
    ],
    ids=["classifier", "tagger", "span", "pretrainer"],
)
def test_task_models_unpadded_equal_padded(build):
    model = build(tiny_encoder(dropout=0.0, attention_dropout=0.0))
    batch = _batch()
    if isinstance(model, BertPretrainer):
        batch["mask_positions"] = np.array([[1, 3], [2, 4], [0, 0], [6, 1]], np.int32)
    padded = tf.nest.map_structure(lambda t: t.numpy(), model.call_graph(batch, training=False))
    unpadded = tf.nest.map_structure(lambda t: t.numpy(), tf.function(model.call_unpadded)(batch))
    real = _real(batch)
    for ours, theirs in zip(tf.nest.flatten(unpadded), tf.nest.flatten(padded)):
        if ours.ndim >= 2 and ours.shape[:2] == real.shape:  # per-token outputs: compare real tokens
            ours, theirs = ours[real], theirs[real]
        np.testing.assert_allclose(ours, theirs, atol=1e-5)


@pytest.mark.parametrize("jit", [False, True])
def test_padding_columns_of_every_row_are_cut_before_the_layers(jit):
    """Rows all shorter than T: the cut is the longest row; `call_at` answers positions past it (padding everywhere).

    `call_unpadded` on such a batch: `test_encoder_equals_padded_at_real_tokens_and_is_zero_at_padding`."""
    from bert_tf.models.padding import trim_padding

    encoder = tiny_encoder(dropout=0.0, attention_dropout=0.0)
    batch = _short_batch()
    cut, length = trim_padding(batch)
    assert int(length) == 5 and cut["token_ids"].shape == (4, 5) and cut["padding_mask"].shape == (4, 5)
    holes = dict(batch, padding_mask=np.array(batch["padding_mask"]) * 0)
    holes["padding_mask"][1, 7] = 1  # a real token after padding: the cut keeps it
    assert int(trim_padding(holes)[1]) == 8
    assert int(trim_padding(dict(batch, padding_mask=np.zeros((4, 12), np.int32)))[1]) == 1

    padded = encoder(batch, training=False)
    positions = np.array([[4, 11], [2, 0], [0, 9], [3, 1]], np.int32)  # 11 and 9: past the cut, padding in all rows
    at = tf.function(lambda b, p: encoder.call_at(b, p, pooled=True, unpadded=True), jit_compile=jit)(batch, positions)
    assert at["selected_output"].shape == (4, 2, encoder.hidden_dim)
    expected = np.take_along_axis(padded["sequence_output"].numpy(), positions[:, :, None], axis=1)
    inside = positions < 5
    np.testing.assert_allclose(at["selected_output"].numpy()[inside], expected[inside], atol=1e-5)
    np.testing.assert_allclose(at["pooled_output"], padded["pooled_output"], atol=1e-5)


def test_nothing_is_cut_inside_an_xla_compilation():
    """Under `jit_compile` the batch keeps its length: a cut known only at run time would recompile every batch."""
    from bert_tf.models.padding import trim_padding

    batch = random_inputs(batch=2, length=12, lengths=[5, 3], seed=1)
    assert int(tf.function(lambda b: trim_padding(b)[1], jit_compile=True)(batch)) == 12
    assert int(tf.function(lambda b: trim_padding(b)[1])(batch)) == 5


def test_shape_buckets_are_few_and_close_above():
    from bert_tf.layers.token_matrix import shape_bucket

    lengths = [int(shape_bucket(n, 8)) for n in range(1, 513)]
    assert sorted(set(lengths)) == [
        8,
        16,
        24,
        32,
        40,
        48,
        56,
        64,
        80,
        96,
        112,
        128,
        160,
        192,
        224,
        256,
        320,
        384,
        448,
        512,
    ]
    for n, bucket in enumerate(lengths, start=1):
        assert n <= bucket <= max(n + 7, n * 1.25), (n, bucket)
    rows = {int(shape_bucket(n, 16, per_octave=16)) for n in range(1, 4097)}
    assert len(rows) == 80 and max(rows) == 4096 and sorted(rows)[15:18] == [256, 272, 288]
    assert int(shape_bucket(0, 8)) == 8 and int(shape_bucket(2**20 + 1, 16)) == 2**20 + 2**18


def test_padding_free_shapes_come_from_the_buckets_and_padding_is_added_where_needed():
    """`trim_padding(..., bucket_limit)` rounds the cut up to a bucket, padding columns past a short input, never
    past the limit; `bucketed_token_index` adds padding rows up to a bucket (or all positions)."""
    from bert_tf.models.padding import bucketed_token_index, trim_padding

    batch = random_inputs(batch=3, length=12, lengths=[11, 3, 5], seed=2)
    cut, length = trim_padding(batch, bucket_limit=32)
    assert int(length) == 16 and cut["token_ids"].shape == (3, 16)
    np.testing.assert_array_equal(cut["padding_mask"].numpy()[:, :12], batch["padding_mask"])
    assert not np.any(cut["padding_mask"].numpy()[:, 12:]) and not np.any(cut["token_ids"].numpy()[:, 12:])
    assert int(trim_padding(batch, bucket_limit=14)[1]) == 14  # the model takes no more positions
    long_input = random_inputs(batch=1, length=40, lengths=[3], seed=2)
    assert int(trim_padding(long_input, bucket_limit=32)[1]) == 8  # cut as usual

    token_index, count = bucketed_token_index(cut["padding_mask"])
    assert int(count) == 19 and token_index.shape == (32,)  # 3 x 16 positions
    real = np.flatnonzero(cut["padding_mask"].numpy().reshape(-1))
    np.testing.assert_array_equal(token_index.numpy()[:19], real)
    assert not np.any(cut["padding_mask"].numpy().reshape(-1)[token_index.numpy()[19:]])
    assert len(set(token_index.numpy())) == 32
    full, count = bucketed_token_index(np.ones((1, 5), np.int32))  # fewer positions than the bucket: all of them
    assert bucketed_token_index(cut["padding_mask"], bucket=False)[0].shape == (19,)  # training: the real tokens
    assert int(count) == 5 and full.shape == (5,)


@pytest.mark.parametrize("lengths", [[1], [3, 17], [20, 2, 9]])
def test_encoder_on_bucketed_shapes_equals_padded_for_many_lengths(lengths):
    """Inputs trimmed to their longest row (as the SavedModels pack them): the bucketing pads columns and rows."""
    encoder = tiny_encoder(dropout=0.0, attention_dropout=0.0)
    batch = random_inputs(batch=len(lengths), length=max(lengths), lengths=lengths, seed=5)
    padded = encoder(batch, training=False)
    unpadded = tf.function(encoder.call_unpadded)(batch)
    real = _real(batch)
    np.testing.assert_allclose(
        unpadded["sequence_output"].numpy()[real], padded["sequence_output"].numpy()[real], atol=1e-5
    )
    assert not np.any(unpadded["sequence_output"].numpy()[~real])
    np.testing.assert_allclose(unpadded["pooled_output"], padded["pooled_output"], atol=1e-5)
