"""Dynamic masked-LM masking: exact cases, statistics, whole words, stateless randomness."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.text.masking import MaskedLMMasker

V, PAD, UNK, CLS, SEP, MASK = 1000, 0, 1, 2, 3, 4
SPECIALS = [PAD, UNK, CLS, SEP, MASK]
CONTINUATION = list(range(700, 1000))  # ids standing for '##' pieces


def _batch(batch=64, length=128, seed=0, continuation_share=0.0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 700, (batch, length)).astype("int32")
    if continuation_share:
        is_cont = rng.random((batch, length)) < continuation_share
        ids = np.where(is_cont, rng.integers(700, 1000, (batch, length)), ids).astype("int32")
    lengths = rng.integers(length // 4, length + 1, batch)
    mask = (np.arange(length)[None] < lengths[:, None]).astype("int32")
    ids[:, 0] = CLS
    ids[np.arange(batch), lengths - 1] = SEP
    ids[mask == 0] = PAD
    return ids, mask


def _mask(masker, ids, mask, epoch=0, first_index=0):
    index = tf.range(first_index, first_index + ids.shape[0], dtype=tf.int64)
    return {k: v.numpy() for k, v in masker(ids, mask, index, tf.constant(epoch)).items()}


def _selected(out, shape):
    selected = np.zeros(shape, bool)
    for row in range(shape[0]):
        used = out["mask_weights"][row] > 0
        selected[row, out["mask_positions"][row][used]] = True
    return selected


def test_rates_one_one_zero_give_every_token_masked():
    ids, mask = _batch(batch=8, length=16)
    masker = MaskedLMMasker(
        V, MASK, SPECIALS, masking_rate=1.0, max_predictions_per_seq=16, mask_token_rate=1.0, random_token_rate=0.0
    )
    out = _mask(masker, ids, mask)
    maskable = (mask == 1) & ~np.isin(ids, SPECIALS)
    assert np.array_equal(_selected(out, ids.shape), maskable)
    assert np.array_equal(out["token_ids"], np.where(maskable, MASK, ids))
    for row in range(8):
        used = out["mask_weights"][row] > 0
        positions = out["mask_positions"][row][used]
        assert list(positions) == sorted(positions)
        np.testing.assert_array_equal(out["mask_ids"][row][used], ids[row][positions])
        assert not out["mask_ids"][row][~used].any() and not out["mask_positions"][row][~used].any()


def test_statistics_on_over_100k_tokens():
    ids, mask = _batch(batch=1536, length=128, seed=3)
    maskable = (mask == 1) & ~np.isin(ids, SPECIALS)
    assert maskable.sum() >= 100_000
    masker = MaskedLMMasker(V, MASK, SPECIALS, max_predictions_per_seq=128, seed=11)
    out = _mask(masker, ids, mask)
    selected = _selected(out, ids.shape)
    assert not (selected & ~maskable).any(), "a special or padding token was selected"
    assert abs(selected.sum() / maskable.sum() - 0.15) <= 0.01
    changed_to_mask = selected & (out["token_ids"] == MASK)
    unchanged = selected & (out["token_ids"] == ids)
    random = selected & ~changed_to_mask & ~unchanged
    n = selected.sum()
    assert abs(changed_to_mask.sum() / n - 0.8) <= 0.01
    # A random replacement can draw the original id (1 in 995): count those as "random".
    assert abs((random.sum() + unchanged.sum() / 995) / n - 0.1) <= 0.01
    assert abs(unchanged.sum() / n - 0.1) <= 0.01
    assert not np.isin(out["token_ids"][random], SPECIALS).any()
    np.testing.assert_array_equal(out["token_ids"][~selected], ids[~selected])


def test_max_predictions_caps_selection():
    ids, mask = _batch(batch=16, length=128)
    masker = MaskedLMMasker(V, MASK, SPECIALS, masking_rate=0.5, max_predictions_per_seq=5)
    out = _mask(masker, ids, mask)
    assert out["mask_positions"].shape == (16, 5)
    np.testing.assert_array_equal(out["mask_weights"].sum(axis=1), 5)


def test_budget_is_rounded_share_of_maskable_tokens():
    ids, mask = _batch(batch=32, length=64, seed=5)
    masker = MaskedLMMasker(V, MASK, SPECIALS, max_predictions_per_seq=64)
    out = _mask(masker, ids, mask)
    maskable = ((mask == 1) & ~np.isin(ids, SPECIALS)).sum(axis=1)
    np.testing.assert_array_equal(out["mask_weights"].sum(axis=1), np.maximum(np.round(maskable * 0.15), 1))


def test_whole_word_masking_keeps_words_whole():
    ids, mask = _batch(batch=256, length=128, seed=7, continuation_share=0.4)
    masker = MaskedLMMasker(
        V, MASK, SPECIALS, max_predictions_per_seq=20, whole_word_masking=True, continuation_ids=CONTINUATION, seed=2
    )
    out = _mask(masker, ids, mask)
    selected = _selected(out, ids.shape)
    maskable = (mask == 1) & ~np.isin(ids, SPECIALS)
    assert not (selected & ~maskable).any()
    whole = 0
    for row in range(ids.shape[0]):
        words, current = [], []
        for pos in range(ids.shape[1]):
            if not maskable[row, pos]:
                continue
            if ids[row, pos] >= 700 and current:
                current.append(pos)
            else:
                current = [pos]
                words.append(current)
        for word in words:
            states = {bool(selected[row, p]) for p in word}
            assert len(states) == 1, f"row {row}: word {word} partly masked"
            whole += states == {True}
        budget = min(max(round(maskable[row].sum() * 0.15), 1), 20)
        assert selected[row].sum() <= budget
    assert abs(selected.sum() / maskable.sum() - 0.15) < 0.03
    assert whole > 1000


def test_whole_word_masking_needs_continuation_ids():
    with pytest.raises(ValueError, match="continuation_ids"):
        MaskedLMMasker(V, MASK, SPECIALS, whole_word_masking=True)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"masking_rate": 0.0}, "masking_rate"),
        ({"max_predictions_per_seq": 0}, "max_predictions_per_seq"),
        ({"mask_token_rate": 0.95}, "mask_token_rate"),
    ],
)
def test_bad_rates_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MaskedLMMasker(V, MASK, SPECIALS, **kwargs)


def test_stateless_same_seed_same_masks_new_epoch_new_masks():
    ids, mask = _batch(batch=32, length=64)
    masker = MaskedLMMasker(V, MASK, SPECIALS, seed=1)
    first = _mask(masker, ids, mask, epoch=0)
    again = _mask(MaskedLMMasker(V, MASK, SPECIALS, seed=1), ids, mask, epoch=0)
    next_epoch = _mask(masker, ids, mask, epoch=1)
    other_seed = _mask(MaskedLMMasker(V, MASK, SPECIALS, seed=2), ids, mask, epoch=0)
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    assert not np.array_equal(first["mask_positions"], next_epoch["mask_positions"])
    assert not np.array_equal(first["mask_positions"], other_seed["mask_positions"])


def test_masks_depend_on_example_index_not_batch_layout():
    ids, mask = _batch(batch=8, length=32)
    masker = MaskedLMMasker(V, MASK, SPECIALS, seed=4)
    whole = _mask(masker, ids, mask, first_index=100)
    halves = [_mask(masker, ids[:4], mask[:4], first_index=100), _mask(masker, ids[4:], mask[4:], first_index=104)]
    for key in whole:
        np.testing.assert_array_equal(whole[key], np.concatenate([h[key] for h in halves]))


def test_runs_in_tf_data_and_the_iterator_is_checkpointable(tmp_path):
    ids, mask = _batch(batch=40, length=32)
    masker = MaskedLMMasker(V, MASK, SPECIALS, seed=9)
    dataset = (
        tf.data.Dataset.from_tensor_slices((ids, mask))
        .enumerate()
        .batch(4)
        .map(lambda index, x: masker(x[0], x[1], index, 0))
    )
    iterator = iter(dataset)
    for _ in range(3):
        next(iterator)
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    path = checkpoint.write(str(tmp_path / "ckpt"))
    expected = [next(iterator)["mask_positions"].numpy() for _ in range(2)]
    restored_iterator = iter(dataset)
    tf.train.Checkpoint(iterator=restored_iterator).read(path).assert_consumed()
    for want in expected:
        np.testing.assert_array_equal(next(restored_iterator)["mask_positions"].numpy(), want)


def test_whole_word_masking_logs_no_onednn_error():
    import subprocess
    import sys

    code = (
        "import tensorflow as tf; from bert_tf.text.masking import MaskedLMMasker; "
        "m = MaskedLMMasker(100, 4, [0, 1, 2, 3, 4], whole_word_masking=True, continuation_ids=list(range(50, 100))); "
        "args = (tf.constant([[7, 60, 8, 9]] * 2), tf.ones([2, 4], tf.int32), tf.range(2)); "
        "m(*args); tf.function(m.__call__)(*args); "
        "s = MaskedLMMasker(100, 4, [0, 1, 2, 3, 4], masking='span', continuation_ids=list(range(50, 100))); "
        "s(*args); tf.function(s.__call__)(*args)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    # TensorFlow's E line for a bool/integer Transpose (in a graph, grappler may move a Cast after one).
    assert "oneDNN supports" not in result.stderr


# Masking modes (issue 20): rates up to 0.5, whole words, SpanBERT spans, 80/10/10 per token or per span.
MODES_BATCH = 2000
GEOMETRIC_P, MAX_SPAN = 0.2, 10


@pytest.fixture(scope="module")
def big_batch():
    """2,000 sequences of 128 (CLS, pieces, SEP, padding), 30% continuation pieces: 1,000 words of 1-5 pieces."""
    return _batch(batch=MODES_BATCH, length=128, seed=21, continuation_share=0.3)


def _modes_masker(masking, rate, **kwargs):
    return MaskedLMMasker(
        V,
        MASK,
        SPECIALS,
        masking_rate=rate,
        max_predictions_per_seq=int(np.ceil(rate * 128)),
        masking=masking,
        continuation_ids=CONTINUATION,
        span_geometric_p=GEOMETRIC_P,
        max_span_length=MAX_SPAN,
        seed=5,
        **kwargs,
    )


def _words(ids, mask):
    """Word number of each maskable piece (-1 elsewhere): a piece plus the continuation pieces after it."""
    maskable = (mask == 1) & ~np.isin(ids, SPECIALS)
    starts = maskable & (ids < 700)
    words = np.cumsum(starts, axis=1)
    return np.where(maskable, words, -1), maskable


def _clipped_geometric_pmf():
    pmf = GEOMETRIC_P * (1 - GEOMETRIC_P) ** np.arange(MAX_SPAN - 1)
    return np.append(pmf, (1 - GEOMETRIC_P) ** (MAX_SPAN - 1))  # lengths 1..9, then P(L >= 10)


@pytest.mark.parametrize("masking", ["token", "whole_word", "span"])
@pytest.mark.parametrize("rate", [0.15, 0.3, 0.5])
def test_each_mode_masks_the_rate_and_keeps_words_whole(big_batch, masking, rate):
    ids, mask = big_batch
    masker = _modes_masker(masking, rate)
    index = tf.range(MODES_BATCH, dtype=tf.int64)
    selection = masker.select(ids, mask, index, tf.constant(0))
    selected = selection["selected"].numpy()
    out = _mask(masker, ids, mask)
    np.testing.assert_array_equal(_selected(out, ids.shape), selected)  # select() is what __call__ masks
    words, maskable = _words(ids, mask)
    assert not (selected & ~maskable).any()
    assert abs(selected.sum() / maskable.sum() - rate) <= 0.01, selected.sum() / maskable.sum()
    if masking == "token":
        return
    rows = np.repeat(np.arange(ids.shape[0])[:, None], ids.shape[1], axis=1)[maskable]
    keys = rows * 1000 + words[maskable]  # one bin per word
    size = np.bincount(keys)
    taken = np.bincount(keys, weights=selected[maskable])
    assert ((taken == 0) | (taken == size)).all(), "a word was partly masked"


@pytest.mark.parametrize("rate", [0.15, 0.5])
def test_span_lengths_follow_the_clipped_geometric_distribution(big_batch, rate):
    """The drawn lengths follow the pmf (chi-square, 10 bins); the kept spans are the drawn ones shortened.

    The bias of shortening (at a taken word, the sequence end or the budget) is stated, not hidden: kept spans
    are never longer than drawn, and on average shorter, more so at the higher rate.
    """
    ids, mask = big_batch
    masker = _modes_masker("span", rate)
    selection = masker.select(ids, mask, tf.range(MODES_BATCH, dtype=tf.int64), tf.constant(0))
    drawn = selection["drawn_lengths"].numpy()
    lengths = drawn[drawn > 0]
    assert len(lengths) > 5000 and lengths.max() <= MAX_SPAN
    observed = np.bincount(lengths, minlength=MAX_SPAN + 1)[1:]
    expected = _clipped_geometric_pmf() * len(lengths)
    chi_square = ((observed - expected) ** 2 / expected).sum()
    assert chi_square < 27.9, (chi_square, observed, expected.round())  # 9 degrees of freedom, p = 0.001
    np.testing.assert_allclose(observed / len(lengths), _clipped_geometric_pmf(), atol=0.015)

    # Kept spans: contiguous runs of whole words, at most the drawn length, numbered in drawing order.
    words, _ = _words(ids, mask)
    span = selection["span"].numpy()
    kept = []
    for row in range(0, MODES_BATCH, 4):
        for number in np.unique(span[row][span[row] > 0]):
            span_words = np.unique(words[row][span[row] == number])
            assert (np.diff(span_words) == 1).all(), f"row {row}: span {number} is not contiguous"
            assert len(span_words) <= drawn[row, number - 1]
            kept.append((len(span_words), drawn[row, number - 1]))
    kept = np.array(kept)
    assert kept[:, 0].mean() < kept[:, 1].mean()


def test_span_replacement_is_drawn_once_per_span_at_80_10_10(big_batch):
    ids, mask = big_batch
    masker = _modes_masker("span", 0.3)
    selection = masker.select(ids, mask, tf.range(MODES_BATCH, dtype=tf.int64), tf.constant(0))
    span = selection["span"].numpy()
    corrupted = _mask(masker, ids, mask)["token_ids"]
    selected = span > 0
    is_mask = selected & (corrupted == MASK)
    kept = selected & (corrupted == ids)
    replaced = selected & ~is_mask & ~kept
    n = selected.sum()
    assert abs(is_mask.sum() / n - 0.8) <= 0.02 and abs(kept.sum() / n - 0.1) <= 0.02
    assert abs(replaced.sum() / n - 0.1) <= 0.02
    spans = mixed_random = 0
    actions = {"mask": 0, "random": 0, "kept": 0}
    for row in range(MODES_BATCH):
        for number in np.unique(span[row][span[row] > 0]):
            at = span[row] == number
            spans += 1
            masked = is_mask[row][at]
            assert masked.all() or not masked.any(), f"row {row}: span {number} partly [MASK]"
            if masked.all():
                actions["mask"] += 1
            elif replaced[row][at].any():
                actions["random"] += 1
                mixed_random += kept[row][at].any()  # only when a random id drew the original (1 in 995 per token)
            else:
                actions["kept"] += 1
    assert mixed_random <= 0.01 * spans
    assert abs(actions["mask"] / spans - 0.8) <= 0.02
    assert abs(actions["random"] / spans - 0.1) <= 0.02 and abs(actions["kept"] / spans - 0.1) <= 0.02


def test_span_masking_is_stateless_and_changes_with_the_epoch():
    ids, mask = _batch(batch=32, length=64, seed=2, continuation_share=0.3)
    first = _mask(_modes_masker("span", 0.3), ids, mask, epoch=0)
    again = _mask(_modes_masker("span", 0.3), ids, mask, epoch=0)
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    assert not np.array_equal(
        first["mask_positions"], _mask(_modes_masker("span", 0.3), ids, mask, epoch=1)["mask_positions"]
    )


def test_span_probability_one_gives_one_word_spans():
    ids, mask = _batch(batch=64, length=64, seed=3, continuation_share=0.3)
    masker = MaskedLMMasker(V, MASK, SPECIALS, masking="span", span_geometric_p=1.0, continuation_ids=CONTINUATION)
    selection = masker.select(ids, mask, tf.range(64), 0)
    drawn = selection["drawn_lengths"].numpy()
    assert set(np.unique(drawn[drawn > 0])) == {1}


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"masking": "spans", "continuation_ids": CONTINUATION}, "masking"),
        ({"masking": "span"}, "continuation_ids"),
        ({"masking": "span", "continuation_ids": CONTINUATION, "span_geometric_p": 0.0}, "span_geometric_p"),
        ({"masking": "span", "continuation_ids": CONTINUATION, "span_geometric_p": 1.5}, "span_geometric_p"),
        ({"masking": "span", "continuation_ids": CONTINUATION, "max_span_length": 0}, "max_span_length"),
        ({"masking": "span", "continuation_ids": CONTINUATION, "max_span_length": 2.5}, "max_span_length"),
        ({"masking": "token", "whole_word_masking": True, "continuation_ids": CONTINUATION}, "whole_word_masking"),
    ],
)
def test_bad_masking_settings_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MaskedLMMasker(V, MASK, SPECIALS, **kwargs)
