"""SparseEmbedder: sparse vectors within 1e-4 of sentence-transformers' `SparseEncoder.encode` on the tiny SPLADE
folders (max/relu, sum/log1p_relu with truncation and a folder max_active_dims, DistilBERT), the max_active_dims
caps, the (indices, values) form, similarity, bad inputs."""

import numpy as np
import pytest

from bert_tf.embeddings import SparseEmbedder
from bert_tf.embeddings.sparse_embedder import densify, sparse_rows
from tests.sparse_encoders import FOLDERS, dense, reference, sparse_folder

TOLERANCE = 1e-4
# DistilBERT's folder in the slow tier: each folder costs a model and a traced forward (~5 s on 2 cores).
CHEAP = [name if name != "distilbert_max" else pytest.param(name, marks=pytest.mark.slow) for name in FOLDERS]


class _Embedders(dict):
    """Each folder's SparseEmbedder, built when first asked for."""

    def __init__(self, root):
        super().__init__()
        self.root = root

    def __missing__(self, name):
        self[name] = SparseEmbedder(sparse_folder(name, self.root / name))
        return self[name]


@pytest.fixture(scope="module")
def embedders(tmp_path_factory):
    return _Embedders(tmp_path_factory.mktemp("sparse_folders"))


@pytest.fixture(scope="module")
def ref():
    return reference()


@pytest.mark.parametrize("name", CHEAP)
def test_encode_matches_sparse_encoder(embedders, ref, name):
    expected = ref["folders"][name]
    embedder = embedders[name]
    vectors = embedder.encode(ref["texts"], batch_size=4)
    want = dense(expected["sparse"], expected["vocab_size"])
    np.testing.assert_allclose(densify(vectors, embedder.vocabulary_size), want, atol=TOLERANCE)
    for (indices, values), (want_indices, _) in zip(vectors, expected["sparse"]):
        assert indices.dtype == np.int32 and values.dtype == np.float32
        assert np.all(np.diff(values) <= 0) and np.all(values > 0)  # largest first, only non-zero weights
        assert set(indices.tolist()) == set(want_indices)
    assert embedder.max_active_dims == expected["folder_max_active_dims"]
    truncated = sum(n > expected["max_seq_length"] for n in expected["pieces"])
    assert embedder.truncated_texts == truncated


@pytest.mark.parametrize("name", CHEAP)
def test_max_active_dims_keeps_the_largest_weights(embedders, ref, name):
    for cap, rows in ref["folders"][name]["max_active_dims"].items():
        got = embedders[name].encode(ref["texts"], max_active_dims=int(cap))
        for (indices, values), (want_indices, want_values) in zip(got, rows):
            assert len(indices) <= int(cap)
            assert indices.tolist() == want_indices  # the same weights, in the same order
            np.testing.assert_allclose(values, want_values, atol=TOLERANCE)


def test_single_text_dense_output_and_similarity(embedders, ref):
    embedder = embedders["bert_max"]
    indices, values = embedder.encode(ref["texts"][0])
    vector = embedder.encode(ref["texts"][0], convert_to_dense=True)
    assert vector.shape == (embedder.vocabulary_size,)
    np.testing.assert_array_equal(vector[indices], values)
    rows = embedder.encode(ref["texts"][:3], max_active_dims=5)
    scores = embedder.similarity(rows, rows)
    want = dense([[i, v] for i, v in rows], embedder.vocabulary_size)
    np.testing.assert_allclose(scores, want @ want.T, rtol=1e-6)
    assert embedder.encode([]) == []


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8"])
def test_bad_max_active_dims_is_refused_naming_the_value(embedders, bad):
    with pytest.raises(ValueError, match=f"max_active_dims={bad!r}"):
        embedders["bert_max"].encode(["a text"], max_active_dims=bad)


def test_bad_texts_and_non_sparse_directories_are_refused(embedders, ref, tmp_path):
    with pytest.raises(ValueError, match=r"item 1 is int"):
        embedders["bert_max"].encode(["a", 3])
    folder = sparse_folder("bert_max", tmp_path / "f")
    with pytest.raises(ValueError, match=r"max_active_dims=0"):
        SparseEmbedder(folder, max_active_dims=0)


def test_sparse_rows_breaks_ties_by_index():
    rows = sparse_rows(np.array([[0.0, 2.0, 1.0, 2.0, 0.0]], np.float32), max_active_dims=2)
    assert rows[0][0].tolist() == [1, 3] and rows[0][1].tolist() == [2.0, 2.0]
