"""The sparse serving pieces without a model: `top_weights` (the served form), `capped`, `SparseIndex` (the
inverted index's dot products equal the dense ones) and the hybrid score's `min_max`."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.serving.sparse_module import SparseIndex, capped, min_max, top_weights


def _vectors(rows=6, vocabulary=50, seed=0):
    """Row i has i + 1 non-zero weights in (0.1, 2)."""
    rng = np.random.default_rng(seed)
    vectors = np.zeros((rows, vocabulary), np.float32)
    for i, row in enumerate(vectors):
        chosen = rng.choice(vocabulary, size=i + 1, replace=False)
        row[chosen] = rng.uniform(0.1, 2.0, size=len(chosen))
    return vectors


def test_top_weights_is_largest_first_zero_padded_and_capped():
    vectors = _vectors()
    indices, values, active = (t.numpy() for t in top_weights(tf.constant(vectors)))
    assert indices.shape == (6, 6) and active.tolist() == [1, 2, 3, 4, 5, 6]
    for row, (i, v, a) in enumerate(zip(indices, values, active)):
        np.testing.assert_array_equal(v[:a], vectors[row, i[:a]])
        assert np.all(np.diff(v[:a]) <= 0) and np.all(v[a:] == 0) and np.all(i[a:] == 0)
    indices, values, active = (t.numpy() for t in top_weights(tf.constant(vectors), max_active_dims=3))
    assert indices.shape == (6, 3) and active.tolist() == [1, 2, 3, 3, 3, 3]
    np.testing.assert_array_equal(values[5], -np.sort(-vectors[5])[:3])
    kept = capped(tf.constant(vectors), 3).numpy()
    assert np.count_nonzero(kept, axis=1).tolist() == [1, 2, 3, 3, 3, 3]
    np.testing.assert_array_equal(np.sort(kept[5])[-3:], np.sort(vectors[5])[-3:])


def test_cap_above_the_vocabulary_returns_every_column():
    indices, _, _ = top_weights(tf.constant(_vectors(rows=2, vocabulary=4)), max_active_dims=100)
    assert indices.shape == (2, 4)


def test_sparse_index_scores_are_the_dot_products():
    corpus, queries = _vectors(rows=9, seed=1), _vectors(rows=4, seed=2)
    rows = [(np.flatnonzero(r).astype(np.int32), r[np.flatnonzero(r)]) for r in corpus]
    index = SparseIndex(rows, corpus.shape[1])
    assert index.postings == np.count_nonzero(corpus)
    np.testing.assert_allclose(index.scores(tf.constant(queries)).numpy(), queries @ corpus.T, rtol=1e-6)
    assert index.scores(tf.zeros([0, corpus.shape[1]])).shape == (0, 9)


@pytest.mark.parametrize(
    "scores, expected",
    [([[1.0, 3.0, 2.0]], [[0.0, 1.0, 0.5]]), ([[2.0, 2.0]], [[0.0, 0.0]])],  # a constant row: all 0
)
def test_min_max(scores, expected):
    np.testing.assert_allclose(min_max(tf.constant(scores)).numpy(), expected)
