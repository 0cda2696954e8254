"""Quantized search in a SavedModel: binary sign bits searched by Hamming distance and rescored with int8 codes or
float32 vectors (`bert_tf.serving.corpus_index.CorpusIndex`), built from a corpus or from bert-tf-embed's output,
served in a process where bert_tf cannot be imported, and the settings it refuses.

The answers are checked against numpy on the SavedModel's own variables: its packed bits, int8 codes and ranges
(the equality of bert_tf's quantization with sentence-transformers' is tests/embeddings/quantization_test.py's).
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.embeddings import dequantize_embeddings, embed_file, quantization_ranges, quantize_embeddings
from bert_tf.export import SearchModule, export_saved_model, serving_module
from bert_tf.export.saved_model import op_names
from bert_tf.serving import corpus_index
from bert_tf.serving.corpus_index import CorpusIndex, pack_sign_words
from tests.helpers import serve_blocked, tiny_model_dir, write_text

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "runs", "john", "lives", "in", "paris", "."]
# 70 passages: two blocks of 64 (the second padded), every id a row number but the first.
CORPUS = [" ".join(WORDS[(i * j + 3) % len(WORDS)] for j in range(1 + i % 5)) for i in range(70)]
QUERIES = ["the cat", "where does john live ?", "dog", "mat on a cat", "paris"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("quantized_search")


@pytest.fixture(scope="module")
def model_dir(shared_artifact):
    build = lambda directory: tiny_model_dir(directory / "model", WORDS, max_position_embeddings=16)  # noqa: E731
    return shared_artifact("search_module_model_dir", build)[1]  # the model search_module_test.py uses


@pytest.fixture(scope="module")
def corpus_file(workdir):
    return write_text(workdir / "corpus.tsv", "id\ttext\n" + "".join(f"p{i}\t{t}\n" for i, t in enumerate(CORPUS)))


@pytest.fixture(scope="module")
def embeddings_dir(model_dir, corpus_file, workdir):
    output = str(workdir / "embedded")
    embed_file(model_dir, corpus_file, output, text_column="text", id_column="id", show_progress=False, log=lambda m: 0)
    return output


@pytest.fixture(scope="module")
def binary_int8(model_dir, corpus_file, embeddings_dir, workdir):
    """`(path, metadata, loaded)`: binary bits rescored with int8 (uint8) codes, built from bert-tf-embed's output, the
    texts from the corpus file."""
    path = str(workdir / "binary_int8")
    options = dict(search_text_column="text", search_id_column="id", search_embeddings=embeddings_dir)
    metadata = export_saved_model(
        model_dir, path, search_corpus=corpus_file, search_quantization="binary", search_rescore="int8",
        search_rescore_multiplier=2, **options,
    )  # fmt: skip
    return path, metadata, tf.saved_model.load(path)


def _search(loaded, queries, k):
    out = loaded.signatures["search"](query=tf.constant(queries, tf.string), k=tf.constant(k, tf.int32))
    return {key: value.numpy() for key, value in out.items()}


def _queries(loaded, queries):
    return loaded.signatures["serving_default"](text=tf.constant(queries))["sentence_embedding"].numpy()


def _unpacked(bits, dim):
    """int64 words `[W, N']` -> bool `[N', D]` (np.packbits's bytes, little-endian words)."""
    return np.unpackbits(np.ascontiguousarray(bits.T).view(np.uint8), axis=-1)[:, :dim].astype(bool)


def _expected(query, bits, vectors, k, multiplier):
    """numpy: the C = k x multiplier nearest by Hamming distance (ties: corpus order), rescored with `vectors`."""
    distances = (bits[None, : len(vectors)] != (query > 0)[:, None]).sum(-1)  # [B, N]
    candidates = np.argsort(distances, axis=1, kind="stable")[:, : min(k * multiplier, len(vectors))]
    scores = np.einsum("bd,bcd->bc", query, vectors[candidates])
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(candidates, order, 1), np.take_along_axis(scores, order, 1)


def test_binary_search_rescored_with_int8_codes(binary_int8):
    path, metadata, loaded = binary_int8
    assert metadata["search"] == {
        "corpus_size": 70, "embedding_dim": 16, "quantization": "binary", "rescore": "int8", "rescore_multiplier": 2,
        "texts": True,
    }  # fmt: skip
    assert metadata["signatures"]["search"] == {"inputs": ["query", "k"], "outputs": ["ids", "scores", "texts"]}
    index = loaded.index
    passages = _queries(loaded, CORPUS)  # the passages' embeddings, through the query path
    assert index.bits.shape == (1, 128) and index.codes.dtype == tf.uint8  # W = 1 word of 16 bits; N' = 2 x 64
    np.testing.assert_array_equal(_unpacked(index.bits.numpy(), 16)[:70], passages > 0)
    np.testing.assert_array_equal(index.bits.numpy()[:, 70:], np.repeat(index.bits.numpy()[:, 69:70], 58, axis=1))
    ranges = index.ranges.numpy()
    np.testing.assert_allclose(ranges, quantization_ranges(passages), atol=1e-6)
    assert np.abs(index.codes.numpy().astype(int) - quantize_embeddings(passages, "uint8", ranges=ranges)).max() <= 1
    dequantized = dequantize_embeddings(index.codes.numpy(), "uint8", ranges)  # ST int8 codes + 128
    query = _queries(loaded, QUERIES)
    for k in (1, 3, 70):
        got = _search(loaded, QUERIES, k)
        rows, scores = _expected(query, _unpacked(index.bits.numpy(), 16), dequantized, k, 2)
        np.testing.assert_array_equal(got["ids"].astype(str), np.array([f"p{i}" for i in range(70)])[rows])
        np.testing.assert_array_equal(got["texts"].astype(str), np.array(CORPUS)[rows])
        np.testing.assert_allclose(got["scores"], scores, atol=1e-5)
    assert {"PopulationCount", "BitwiseXor"} <= op_names(path)


@pytest.mark.slow  # over 10 s (the make test budget)
def test_served_where_bert_tf_cannot_be_imported(binary_int8, workdir):
    path, _, loaded = binary_int8
    requests = {
        "queries": (path, "search", {"query": np.array(QUERIES, object), "k": np.int32(4)}),
        "k_over_corpus": (path, "search", {"query": np.array([b"cat"], object), "k": np.int32(500)}),
        "empty_batch": (path, "search", {"query": np.array([], object), "k": np.int32(2)}),
        "k_zero": (path, "search", {"query": np.array([b"cat"], object), "k": np.int32(0)}),
    }
    result, responses = serve_blocked(requests, workdir, "quantized")
    assert result.returncode == 0, result.stdout[-500:] + result.stderr[-3000:]
    assert responses["k_zero"] == {"error": "InvalidArgumentError"}
    for name, k in (("queries", 4), ("k_over_corpus", 500)):
        queries = QUERIES if name == "queries" else ["cat"]
        expected = _search(loaded, queries, k)
        np.testing.assert_array_equal(responses[name]["ids"], expected["ids"], err_msg=name)
        np.testing.assert_allclose(responses[name]["scores"], expected["scores"], atol=1e-5, err_msg=name)
    assert responses["k_over_corpus"]["ids"].shape == (1, 70)
    assert responses["empty_batch"]["ids"].shape == (0, 2)


@pytest.mark.slow
def test_index_from_embed_output_ids_only(model_dir, embeddings_dir, workdir):
    """bert-tf-embed's output, no corpus file: ids only (empty texts), binary rescored with the float32 vectors."""
    path = str(workdir / "from_embeddings")
    metadata = export_saved_model(
        model_dir, path, search_embeddings=embeddings_dir, search_quantization="binary", search_rescore="float32"
    )
    assert metadata["search"]["texts"] is False and metadata["search"]["rescore"] == "float32"
    loaded = tf.saved_model.load(path)
    vectors = np.load(os.path.join(embeddings_dir, "embeddings.npy"))
    got = _search(loaded, QUERIES, 5)
    rows, scores = _expected(_queries(loaded, QUERIES), vectors > 0, vectors, 5, 4)
    np.testing.assert_array_equal(got["ids"].astype(str), np.array([f"p{i}" for i in range(70)])[rows])
    np.testing.assert_allclose(got["scores"], scores, atol=1e-5)
    assert (got["texts"] == b"").all() and not hasattr(loaded, "corpus_texts") or loaded.corpus_texts is None


def test_row_number_ids_are_made_in_the_graph_and_binary_alone(model_dir):
    module = serving_module(model_dir)
    vectors = _unit(np.random.default_rng(0).normal(size=(9, 16)))
    search = SearchModule(
        module.encoder, module.tokenizer, 16, [str(i) for i in range(9)], None, embeddings=vectors,
        quantization="binary",
    )  # fmt: skip
    assert search.corpus_ids is None and search.corpus_texts is None
    query = _unit(np.random.default_rng(1).normal(size=(2, 16))).astype(np.float32)
    indices, scores = search.retrieve(tf.constant(query), tf.constant(3))
    distances = ((vectors > 0)[None] != (query > 0)[:, None]).sum(-1)
    rows = np.argsort(distances, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(indices.numpy(), rows)
    np.testing.assert_array_equal(scores.numpy(), 16 - np.take_along_axis(distances, rows, 1))  # bits shared
    assert search.passage_ids(indices).numpy().astype(str).tolist() == rows.astype(str).tolist()


def _unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_scan_chunks_and_blocks_match_a_brute_force(monkeypatch):
    """Several scan chunks, blocks of 64 with ties everywhere (4 dimensions: 16 bit patterns), every setting."""
    monkeypatch.setattr(corpus_index, "SCAN_ROWS", 128)
    rng = np.random.default_rng(2)
    vectors, query = _unit(rng.normal(size=(300, 4))), _unit(rng.normal(size=(3, 4)))
    ranges = quantization_ranges(vectors)
    dequantized = dequantize_embeddings(quantize_embeddings(vectors, "int8", ranges=ranges), "int8", ranges)
    for quantization, rescore, reference in (
        ("binary", "int8", dequantized),
        ("binary", "float32", vectors),
        ("int8", "float32", vectors),
    ):
        index = CorpusIndex(vectors, quantization, rescore, rescore_multiplier=3)
        indices, scores = tf.function(index.retrieve)(tf.constant(query), tf.constant(7))
        if quantization == "binary":
            rows, expected = _expected(query, vectors > 0, reference, 7, 3)
        else:
            candidates = np.argsort(-(query @ dequantized.T), axis=1, kind="stable")[:, :21]
            rescored = np.einsum("bd,bcd->bc", query, vectors[candidates])
            order = np.argsort(-rescored, axis=1, kind="stable")[:, :7]
            rows, expected = np.take_along_axis(candidates, order, 1), np.take_along_axis(rescored, order, 1)
        np.testing.assert_array_equal(indices.numpy(), rows, err_msg=f"{quantization}+{rescore}")
        np.testing.assert_allclose(scores.numpy(), expected, atol=1e-5)
    np.testing.assert_array_equal(pack_sign_words(vectors[:2]), np.packbits(vectors[:2] > 0, axis=-1).astype(np.int64))


def test_bad_settings_are_refused_by_name(model_dir, corpus_file, embeddings_dir, tmp_path):
    output = str(tmp_path / "out")
    tsv = dict(search_text_column="text", search_id_column="id")
    cases = [
        (dict(search_quantization="binary"), "search_quantization describe a search corpus; pass search_corpus"),
        (dict(search_corpus=corpus_file, search_rescore="int8", **tsv), "quantization='none' rescores with one of"),
        (dict(search_corpus=corpus_file, search_quantization="int8", search_rescore="int8", **tsv), "rescore='int8'"),
        (dict(search_embeddings=str(tmp_path)), "not a bert-tf-embed output directory"),
        (dict(search_embeddings=embeddings_dir, truncate_dim=8), "truncate_dim: None there, 8 here"),
    ]
    other = write_text(tmp_path / "other.txt", "\n".join(CORPUS) + "\n")
    cases.append((dict(search_corpus=other, search_embeddings=embeddings_dir), "the first difference at row 0"))
    for options, message in cases:
        with pytest.raises(ValueError, match=message):
            export_saved_model(model_dir, output, **options)
    assert not os.path.exists(output)
    module = serving_module(model_dir)
    args = (module.encoder, module.tokenizer, 16, ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match=r"normalize=False.*quantization='binary' with rescore='none'"):
        SearchModule(*args, embeddings=np.ones([2, 16]), quantization="binary", normalize=False)
    with pytest.raises(ValueError, match=r"rescore_multiplier=0"):
        SearchModule(*args, embeddings=np.ones([2, 16]), quantization="binary", rescore="int8", rescore_multiplier=0)
    with pytest.raises(ValueError, match="ids-only corpus"):
        SearchModule(module.encoder, module.tokenizer, 16, ["a"], None)


def test_quantized_embed_output(model_dir, corpus_file, embeddings_dir, tmp_path):
    """bert-tf-embed --quantize: the codes of the float run's embeddings, the int8 ranges written beside them; a
    quantized directory is not an index's input."""
    floats = np.load(os.path.join(embeddings_dir, "embeddings.npy"))
    for quantize in ("int8",):
        output = str(tmp_path / quantize)
        manifest = embed_file(
            model_dir, corpus_file, output, text_column="text", id_column="id", quantize=quantize,
            show_progress=False, log=lambda m: 0,
        )  # fmt: skip
        assert manifest["quantize"] == quantize
        stored = np.load(os.path.join(output, "embeddings.npy"))
        if quantize == "int8":
            ranges = np.load(os.path.join(output, "quantization_ranges.npy"))
            np.testing.assert_array_equal(ranges, quantization_ranges(floats))
        np.testing.assert_array_equal(stored, quantize_embeddings(floats, quantize, ranges=ranges))
    with pytest.raises(ValueError, match="holds quantize='int8' codes"):
        export_saved_model(model_dir, str(tmp_path / "out"), search_embeddings=output)
    with pytest.raises(ValueError, match="output_format='tfrecord'"):
        embed_file(
            model_dir, corpus_file, str(tmp_path / "t"), text_column="text", quantize="int8", output_format="tfrecord"
        )
