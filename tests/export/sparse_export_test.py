"""A converted SparseEncoder's SavedModel: `serving_default`'s sparse_indices/sparse_values within 1e-4 of
sentence-transformers' `SparseEncoder.encode` (max_active_dims too) served without bert_tf, sparse `search` over
an inverted index, hybrid dense + sparse search, and bad inputs refused naming the value."""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import ConfigError
from bert_tf.data import read_passages
from bert_tf.embeddings import SentenceEmbedder, SparseEmbedder
from bert_tf.export import export_saved_model, serving_module
from bert_tf.tasks import convert_checkpoint
from tests.checkpoints.references import SHARED
from tests.helpers import serve_blocked
from tests.sparse_encoders import dense, reference, sparse_folder

TOLERANCE = 1e-4
CAP = 40
DENSE_CONFIGS = os.path.join(os.path.dirname(__file__), "..", "data", "sentence_transformers", "tiny", "cls")
DENSE_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt")


def _rows(out):
    """The served `(indices, values)` of each row, its used slots only."""
    indices, values, active = (np.asarray(out[key]) for key in ("sparse_indices", "sparse_values", "active_dims"))
    return [[i[:a], v[:a]] for i, v, a in zip(indices, values, active)]


def _dense_folder(target):
    """A tiny dense sentence-transformers folder (CLS pooling + Normalize) on the shared BERT checkpoint."""
    shutil.copytree(DENSE_CONFIGS, target)
    for name in DENSE_FILES:
        shutil.copyfile(os.path.join(SHARED, "bert", name), os.path.join(target, name))
    return str(target)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("sparse_export")
    ref = reference()
    folder = sparse_folder("bert_max", root / "bert_max")
    converted = str(root / "converted")
    convert_checkpoint(folder, converted)
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(ref["texts"][:12]) + "\n", encoding="utf-8")
    saved = str(root / "saved")
    metadata = export_saved_model(converted, saved, max_active_dims=CAP, search_corpus=str(corpus))
    return dict(root=root, ref=ref, folder=folder, converted=converted, corpus=str(corpus), saved=saved, meta=metadata)


def test_export_metadata_records_the_sparse_model(built):
    meta = built["meta"]
    assert meta["kind"] == "sparse_embedding"
    assert meta["sparse"] == {"pooling": "max", "activation": "relu", "max_active_dims": CAP, "vocab_size": 2000}
    assert meta["search"]["corpus_size"] == 12
    assert meta["signatures"]["serving_default"]["outputs"] == ["active_dims", "sparse_indices", "sparse_values"]


def test_loaded_savedmodel_matches_sparse_encoder_and_searches(built):
    ref = built["ref"]
    loaded = tf.saved_model.load(built["saved"])
    out = loaded.signatures["serving_default"](text=tf.constant(ref["texts"]))
    want = ref["folders"]["bert_max"]["max_active_dims"][str(CAP)]
    np.testing.assert_allclose(dense(_rows(out), 2000), dense(want, 2000), atol=TOLERANCE)
    search = loaded.signatures["search"](query=tf.constant(ref["texts"][:2]), k=tf.constant(3))
    vectors = dense(want, 2000)
    scores = vectors[:2] @ vectors[:12].T
    np.testing.assert_allclose(search["scores"].numpy(), -np.sort(-scores, axis=1)[:, :3], rtol=1e-5)


@pytest.mark.slow
def test_served_without_bert_tf_matches_sparse_encoder(built):
    ref = built["ref"]
    texts = np.array(ref["texts"], dtype=object)
    queries = np.array(ref["texts"][:3], dtype=object)
    requests = {
        "a_vectors": (built["saved"], "serving_default", {"text": texts}),
        "b_search": (built["saved"], "search", {"query": queries, "k": np.int32(4)}),
        "c_k_zero": (built["saved"], "search", {"query": queries, "k": np.int32(0)}),
        "d_rank_zero": (built["saved"], "serving_default", {"text": np.array("one text", dtype=object)}),
        "e_empty": (built["saved"], "serving_default", {"text": np.array([], dtype=object)}),
    }
    result, responses = serve_blocked(requests, str(built["root"]), "sparse")
    assert result.returncode == 0, result.stderr[-2000:]
    out = responses["a_vectors"]
    assert out["sparse_indices"].dtype == np.int32 and out["sparse_values"].dtype == np.float32
    assert out["sparse_indices"].shape == (len(texts), CAP)
    want = ref["folders"]["bert_max"]["max_active_dims"][str(CAP)]
    np.testing.assert_allclose(dense(_rows(out), 2000), dense(want, 2000), atol=TOLERANCE)
    # search: the exact dot products of the capped vectors, best first
    vectors = dense(want, 2000)
    scores = vectors[:3] @ vectors[:12].T  # [3, 12]
    order = np.argsort(-scores, axis=1, kind="stable")[:, :4]
    search = responses["b_search"]
    np.testing.assert_array_equal(search["ids"].astype(str), order.astype(str))
    np.testing.assert_allclose(search["scores"], np.take_along_axis(scores, order, axis=1), rtol=1e-5)
    assert search["texts"][0, 0].decode("utf-8") == ref["texts"][0]
    assert responses["c_k_zero"]["error"] == "InvalidArgumentError"
    assert responses["d_rank_zero"]["error"] == "InvalidArgumentError"
    assert responses["e_empty"]["sparse_indices"].shape == (0, CAP)


@pytest.mark.slow
def test_without_a_cap_every_active_weight_is_returned(built):
    ref = built["ref"]
    module = serving_module(built["folder"])  # the folder itself, no cap: m = the batch's largest active count
    out = module.encode_text(tf.constant(ref["texts"][:4]))
    want = ref["folders"]["bert_max"]["sparse"][:4]
    assert out["sparse_indices"].shape[1] == max(len(row[0]) for row in want)
    np.testing.assert_allclose(dense(_rows(out), 2000), dense(want, 2000), atol=TOLERANCE)


@pytest.mark.slow
def test_hybrid_search_mixes_normalized_dense_and_sparse_scores(built):
    ref = built["ref"]
    dense_dir = _dense_folder(built["root"] / "dense")
    texts = ref["texts"][:12]
    module = serving_module(
        dense_dir,
        passages=read_passages(built["corpus"]),
        search_sparse_model=built["converted"],
        search_hybrid_weight=0.3,
        max_active_dims=CAP,
    )
    out = module.search(tf.constant(texts[:3]), tf.constant(len(texts)))  # every passage, ranked
    order = out["ids"].numpy().astype(int)  # the ids are the corpus's line numbers
    dense_vectors = SentenceEmbedder(dense_dir).encode(texts)
    sparse_vectors = SparseEmbedder(built["converted"], max_active_dims=CAP).encode(texts, convert_to_dense=True)
    dense_scores = np.take_along_axis(dense_vectors[:3] @ dense_vectors.T, order, axis=1)
    sparse_scores = np.take_along_axis(sparse_vectors[:3] @ sparse_vectors.T, order, axis=1)
    np.testing.assert_allclose(out["dense_scores"].numpy(), dense_scores, atol=1e-5)
    np.testing.assert_allclose(out["sparse_scores"].numpy(), sparse_scores, rtol=1e-5)

    def min_max(x):
        return (x - x.min(axis=1, keepdims=True)) / (x.max(axis=1, keepdims=True) - x.min(axis=1, keepdims=True))

    # The tiny model's dense cosines all lie within 1e-4 of 1: the mix is computed from the served raw scores, whose
    # own exactness is checked above.
    mixed = 0.7 * min_max(out["dense_scores"].numpy()) + 0.3 * min_max(out["sparse_scores"].numpy())
    np.testing.assert_allclose(out["scores"].numpy(), mixed, atol=1e-6)
    assert np.all(np.diff(out["scores"].numpy(), axis=1) <= 0)  # best first
    assert out["texts"].numpy()[0, 0].decode("utf-8") == texts[order[0, 0]]
    assert set(module.signatures()) >= {"search", "sparse", "serving_default"}


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"max_active_dims": 0}, ValueError, "max_active_dims=0"),
        ({"search_sparse_model": "SELF", "search_hybrid_weight": 1.5}, ConfigError, "search_hybrid_weight=1.5"),
        ({"search_sparse_model": "SELF"}, ConfigError, "needs a search corpus"),
    ],
)
def test_bad_export_options_are_refused_naming_the_value(built, tmp_path, options, error, message):
    options = {k: (built["converted"] if v == "SELF" else v) for k, v in options.items()}
    with pytest.raises(error, match=message):
        export_saved_model(built["converted"], str(tmp_path / "out"), **options)
    assert not os.path.exists(tmp_path / "out")
