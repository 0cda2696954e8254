"""SearchModule: a SavedModel holding a corpus, its `search` signature, and the corpus inputs it refuses.

The search answers are checked against a brute-force ranking of the same SavedModel's `sentence_embedding`
outputs, and served in a process where bert_tf cannot be imported (`tests.helpers.serve_blocked`).
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import ConfigError
from bert_tf.data import read_passages
from bert_tf.export import METADATA_FILE, SearchModule, export_saved_model, serving_module
from tests.helpers import serve_blocked, tiny_classifier_dir, tiny_model_dir, write_text

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "runs", "john", "lives", "in", "paris", "."]
# Line 2 is blank: it is skipped, and the passages keep their 0-based line numbers as ids.
CORPUS = ["the cat sat on the mat .", "a dog runs", "", "john lives in paris .", "the mat", "cat", "dog dog dog"]
CORPUS_IDS = [str(i) for i, text in enumerate(CORPUS) if text]
CORPUS_TEXTS = [text for text in CORPUS if text]
QUERIES = ["the cat", "where does john live ?", "dog", "mat on a cat"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("search")


def _build_model_dir(directory):
    return tiny_model_dir(directory / "model", WORDS, max_position_embeddings=16)


@pytest.fixture(scope="module")
def model_dir(shared_artifact):
    return shared_artifact("search_module_model_dir", _build_model_dir)[1]  # once per test run, read only


def _build_exported(directory, model_dir):
    corpus = write_text(directory / "corpus.txt", "\n".join(CORPUS) + "\n")
    path = str(directory / "saved")
    return [path, export_saved_model(model_dir, path, search_corpus=corpus, search_batch_size=2)]


@pytest.fixture(scope="module")
def exported(model_dir, shared_artifact):
    """`(SavedModel path, metadata)` of the tiny encoder with CORPUS as its search corpus (once per test run)."""
    _, (path, metadata) = shared_artifact(
        "search_module_exported", lambda directory: _build_exported(directory, model_dir)
    )
    return path, metadata


@pytest.fixture(scope="module")
def loaded(exported):
    return tf.saved_model.load(exported[0])


def _search(loaded, queries, k):
    out = loaded.signatures["search"](query=tf.constant(queries, tf.string), k=tf.constant(k, tf.int32))
    return {key: value.numpy() for key, value in out.items()}


def _embed(loaded, texts):
    return loaded.signatures["serving_default"](text=tf.constant(texts))["sentence_embedding"].numpy()


@pytest.mark.slow
def test_search_ranks_by_inner_product_of_sentence_embeddings(loaded):
    got = _search(loaded, QUERIES, 3)
    scores = _embed(loaded, QUERIES) @ _embed(loaded, CORPUS_TEXTS).T  # [B, N]
    order = np.argsort(-scores, axis=1, kind="stable")[:, :3]
    assert got["ids"].shape == got["texts"].shape == got["scores"].shape == (len(QUERIES), 3)
    assert got["scores"].dtype == np.float32
    np.testing.assert_array_equal(got["ids"].astype(str), np.array(CORPUS_IDS)[order])
    np.testing.assert_array_equal(got["texts"].astype(str), np.array(CORPUS_TEXTS)[order])
    np.testing.assert_allclose(got["scores"], np.take_along_axis(scores, order, axis=1), atol=1e-5)


def test_corpus_embeddings_are_the_query_path_embeddings(loaded):
    np.testing.assert_allclose(loaded.corpus_embeddings.numpy(), _embed(loaded, CORPUS_TEXTS), atol=1e-5)
    got = _search(loaded, CORPUS_TEXTS, 1)  # each passage, sent as a query, finds itself first
    assert [x.decode() for x in got["ids"][:, 0]] == CORPUS_IDS
    np.testing.assert_allclose(got["scores"][:, 0], 1.0, atol=1e-5)  # normalized: the cosine with itself


def test_k_over_the_corpus_size_returns_the_whole_corpus_ranked(loaded):
    got = _search(loaded, QUERIES[:2], 1000)
    assert got["ids"].shape == (2, len(CORPUS_IDS))
    assert all(sorted(row.astype(str)) == sorted(CORPUS_IDS) for row in got["ids"])
    assert np.all(np.diff(got["scores"], axis=1) <= 0)


@pytest.mark.parametrize("k", [0, -3])
def test_k_below_one_is_an_invalid_argument_naming_k(loaded, k):
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"search: k \(the number of passages"):
        _search(loaded, QUERIES[:1], k)


def test_metadata_lists_search_and_corpus_size(exported):
    path, metadata = exported
    with open(os.path.join(path, "assets.extra", METADATA_FILE), encoding="utf-8") as f:
        assert json.load(f) == metadata
    assert metadata["kind"] == "encoder"
    assert metadata["search"] == {
        "corpus_size": len(CORPUS_IDS),
        "embedding_dim": 16,
        "quantization": "none",
        "rescore": "none",
        "rescore_multiplier": 4,
        "texts": True,
    }
    assert metadata["signatures"]["search"] == {"inputs": ["query", "k"], "outputs": ["ids", "scores", "texts"]}
    assert {"serving_default", "single", "pair", "ids"} <= set(metadata["signatures"])  # the encoder's, kept


def test_served_where_bert_tf_cannot_be_imported(exported, loaded, workdir):
    """Every input-safety case of the other signatures, on `search`, in a process without bert_tf."""
    path = exported[0]
    strings = {
        "texts": (QUERIES, 2),
        "k_over_corpus": (QUERIES[:1], 50),
        "empty_batch": ([], 2),
        "empty_strings": (["", " \t"], 2),
        "invalid_utf8": ([b"caf\xc3 \xff\xfe john\x80 lives in paris", b"\xc3\xa9\xed\xa0\x80 dog"], 2),
        "megabyte": ([("john lives in paris . " * 50_000).encode("utf-8"), b"x" * (1 << 20)], 2),
    }
    requests = {
        name: (path, "search", {"query": np.array(q, object), "k": np.int32(k)}) for name, (q, k) in strings.items()
    }
    requests["k_zero"] = (path, "search", {"query": np.array([b"cat"], object), "k": np.int32(0)})
    requests["query_rank0"] = (path, "search", {"query": np.array(b"cat", object), "k": np.int32(1)})
    requests["query_rank2"] = (path, "search", {"query": np.array([[b"cat"]], object), "k": np.int32(1)})
    requests["k_rank1"] = (path, "search", {"query": np.array([b"cat"], object), "k": np.array([1], np.int32)})
    result, responses = serve_blocked(requests, workdir, "search")
    assert result.returncode == 0, result.stdout[-500:] + result.stderr[-3000:]
    for name in ("k_zero", "query_rank0", "query_rank2", "k_rank1"):
        assert responses[name] == {"error": "InvalidArgumentError"}, name
    for name, (queries, k) in strings.items():
        expected = _search(loaded, queries, k)
        assert sorted(responses[name]) == ["ids", "scores", "texts"], name
        np.testing.assert_array_equal(responses[name]["ids"], expected["ids"], err_msg=name)
        np.testing.assert_allclose(responses[name]["scores"], expected["scores"], atol=1e-5, err_msg=name)
    assert responses["empty_batch"]["ids"].shape == (0, 2)
    assert responses["k_over_corpus"]["ids"].shape == (1, len(CORPUS_IDS))
    assert responses["megabyte"]["ids"].shape == (2, 2)


def test_jsonl_id_column(model_dir, workdir):
    """The ids of a JSONL corpus's id column come back from `search` (the app test runs a TSV through a save)."""
    rows = [{"doc": f"doc-{i}", "body": text, "other": i} for i, text in enumerate(CORPUS_TEXTS)]
    corpus = write_text(workdir / "corpus.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    passages = read_passages(corpus, text_column="body", id_column="doc", file_format="jsonl")
    module = serving_module(model_dir, passages=passages)
    assert isinstance(module, SearchModule) and module.metadata()["search"]["corpus_size"] == len(rows)
    got = module.search(tf.constant(["john lives in paris ."]), tf.constant(2))  # eagerly
    assert got["ids"][0, 0].numpy().decode() == "doc-2"
    assert got["texts"][0, 0].numpy().decode() == "john lives in paris ."


def test_search_module_refuses_mismatched_corpus(model_dir):
    encoder_module = serving_module(model_dir)
    args = (encoder_module.encoder, encoder_module.tokenizer, 16)
    with pytest.raises(ValueError, match="search corpus is empty"):
        SearchModule(*args, passage_ids=[], passage_texts=[])
    with pytest.raises(ValueError, match="One id per passage"):
        SearchModule(*args, passage_ids=["a"], passage_texts=["x", "y"])
    with pytest.raises(ValueError, match=r"`embeddings` must be \[N, D\] with N = 2 passages and D = 16"):
        SearchModule(*args, passage_ids=["a", "b"], passage_texts=["x", "y"], embeddings=np.zeros([3, 16]))
    with pytest.raises(ValueError, match=r"Received: shape \(2, 8\)"):
        SearchModule(*args, passage_ids=["a", "b"], passage_texts=["x", "y"], embeddings=np.zeros([2, 8]))


def _nothing_written(output):
    parent = os.path.dirname(output)
    return not os.path.exists(output) and not [n for n in os.listdir(parent) if n.startswith("out.partial")]


def test_bad_corpus_is_refused_before_anything_is_written(model_dir, tmp_path):
    output = str(tmp_path / "out")
    empty = write_text(tmp_path / "empty.txt", "\n  \n")
    with pytest.raises(ValueError, match=r"empty.txt: no passage in the file"):
        export_saved_model(model_dir, output, search_corpus=empty)
    no_text = write_text(tmp_path / "corpus.tsv", "id\ttext\na\tthe cat\nb\t \n")
    with pytest.raises(ValueError, match=r"corpus.tsv:3: the passage \(column 'text'\) is empty"):
        export_saved_model(model_dir, output, search_corpus=no_text, search_text_column="text", search_id_column="id")
    with pytest.raises(FileNotFoundError, match="No such corpus file"):
        export_saved_model(model_dir, output, search_corpus=str(tmp_path / "absent.txt"))
    with pytest.raises(ValueError, match="pass search_corpus too"):
        export_saved_model(model_dir, output, search_text_column="text")
    raw = write_text(tmp_path / "corpus.raw", "the cat\n")
    with pytest.raises(ValueError, match="Cannot infer the corpus format of .*corpus.raw.*one of .*text"):
        export_saved_model(model_dir, output, search_corpus=raw)
    assert _nothing_written(output)


def test_a_fine_tuned_directory_needs_encoder_only(tmp_path):
    model_dir = tiny_classifier_dir(tmp_path / "classifier", WORDS, 16, labels=("no", "yes"))
    corpus = write_text(tmp_path / "corpus.txt", "the cat\na dog\n")
    output = str(tmp_path / "out")
    with pytest.raises(ConfigError, match="pass encoder_only=True"):
        export_saved_model(model_dir, output, search_corpus=corpus)
    assert _nothing_written(output)
