"""Prompts and Matryoshka truncation against sentence-transformers 6.2 (tests/data/prompts/reference.json, made by
tools/references/make_prompts.py): `SentenceEmbedder` and the exported signatures on tiny folders with prompts."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import ConfigError
from bert_tf.embeddings import SentenceEmbedder
from bert_tf.embeddings.prompts import prompt_length, resolve_prompt
from bert_tf.export import export_saved_model, serving_module
from tests.conftest import REFERENCE_DIR
from tests.helpers import tiny_model_dir

REFERENCE_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "prompts", "reference.json")
ATOL = 1e-5


@pytest.fixture(scope="module")
def reference():
    with open(REFERENCE_FILE, encoding="utf-8") as f:
        return json.load(f)


def _folder(reference, name, target):
    """The reference's folder `name`, built as tools/references/make_prompts.py's `prompts_folder` builds it."""
    made = reference["folders_made"][name]
    shutil.copytree(os.path.join(os.path.dirname(REFERENCE_DIR), reference["source"]), target)
    path = os.path.join(target, "config_sentence_transformers.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config.update(prompts=reference["prompts"], default_prompt_name=made["default_prompt_name"])
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    path = os.path.join(target, "1_Pooling", "config.json")
    with open(path, encoding="utf-8") as f:
        pooling = json.load(f)
    pooling.update(made["pooling"])
    with open(path, "w", encoding="utf-8") as f:
        json.dump(pooling, f)
    return target


@pytest.fixture(scope="module")
def folders(reference, tmp_path_factory):
    root = tmp_path_factory.mktemp("prompt_folders")
    return {name: _folder(reference, name, str(root / name)) for name in reference["folders"]}


# reference call -> SentenceEmbedder.encode's arguments (encode_query / encode_document: their prompt names).
CALLS = {
    "encode": {},
    "prompt_name_document": {"prompt_name": "document"},
    "prompt_name_instruction": {"prompt_name": "instruction"},
    "prompt_custom": {"prompt": "custom prompt: "},
    "prompt_empty": {"prompt": ""},
    "encode_query": {"prompt_name": "query"},
    "encode_document": {"prompt_name": "document"},
    "truncate_dim_8": {"truncate_dim": 8},
    "truncate_dim_8_normalized": {"truncate_dim": 8, "normalize": True},
}


# The default tier runs the folder with every feature (a default prompt, include_prompt false, cls and weightedmean
# pooling); the other two are slow-marked.
FOLDERS = [
    pytest.param("default-query", marks=pytest.mark.slow),
    pytest.param("excluded", marks=pytest.mark.slow),
    "excluded-cls-weightedmean",
]


@pytest.fixture(scope="module")
def embedder(folders):
    return SentenceEmbedder(folders["excluded-cls-weightedmean"], batch_size=4)


@pytest.mark.parametrize("name", FOLDERS)
def test_encode_with_prompts_and_truncation_equals_sentence_transformers(reference, folders, embedder, name):
    if name != "excluded-cls-weightedmean":
        embedder = SentenceEmbedder(folders[name], batch_size=4)
    expected = reference["folders"][name]
    texts = reference["texts"]
    for call, kwargs in CALLS.items():
        got = embedder.encode(texts, **kwargs)
        np.testing.assert_allclose(got, np.array(expected["calls"][call]), atol=ATOL, err_msg=f"{name}: {call}")
    for prompt_key, length in expected["prompt_lengths"].items():
        prompt = reference["prompts"].get(prompt_key, prompt_key)
        assert prompt_length(embedder.tokenizer, prompt) == length, (name, prompt)
    # A default prompt is applied when none is named: it changes the embedding; a prompt changes it.
    default = reference["folders_made"][name]["default_prompt_name"] is not None
    assert np.allclose(expected["calls"]["encode"], expected["calls"]["prompt_empty"], atol=1e-3) != default
    assert not np.allclose(expected["calls"]["prompt_custom"], expected["calls"]["prompt_empty"], atol=1e-3)


def test_truncated_vectors_keep_the_models_normalization_unless_asked(reference, embedder):
    texts = reference["texts"][:3]
    got = embedder.encode(texts, truncate_dim=8)
    assert got.shape == (3, 8) and embedder.embedding_dimension == 64  # cls and weightedmean
    assert np.all(np.linalg.norm(got, axis=1) < 0.999)  # the first 8 of a unit vector (sentence-transformers)
    normalized = embedder.encode(texts, truncate_dim=8, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(normalized, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(embedder.encode(texts, truncate_dim=4), got[:, :4], atol=1e-6)


@pytest.mark.parametrize("truncate_dim", [0, 33, -1, 2.5, True])
def test_a_truncate_dim_outside_the_embedding_is_refused_naming_it(folders, truncate_dim):
    with pytest.raises(ValueError, match=rf"truncate_dim={truncate_dim!r}"):
        SentenceEmbedder(folders["default-query"], truncate_dim=truncate_dim)


def test_an_unknown_prompt_name_is_refused_naming_it_and_the_known_ones(folders, embedder):
    with pytest.raises(ValueError, match=r"prompt_name='passage'.*\['document', 'instruction', 'query'\]"):
        SentenceEmbedder(folders["default-query"], prompt_name="passage")  # before any weight is read
    assert embedder.prompt == "Represent this sentence for retrieval: "  # the folder's default prompt
    with pytest.raises(ValueError, match=r"prompt_name='nope'"):
        embedder.encode("x", prompt_name="nope")
    assert resolve_prompt({}, None, None, None) == ""


@pytest.fixture(scope="module")
def exported(folders, tmp_path_factory):
    """The "excluded" folder (prompts, include_prompt false) exported at truncate_dim 8, saved and loaded."""
    output = str(tmp_path_factory.mktemp("prompts_export") / "1")
    metadata = export_saved_model(folders["excluded"], output, truncate_dim=8)
    return metadata, tf.saved_model.load(output)


@pytest.mark.slow
def test_the_export_serves_query_and_document_signatures_truncated(reference, exported):
    metadata, loaded = exported
    expected = reference["folders"]["excluded"]["calls"]
    texts = tf.constant(reference["texts"])
    assert metadata["truncate_dim"] == 8 and metadata["prompts"] == reference["prompts"]
    assert {"query", "document"} <= set(metadata["signatures"])
    for signature, call in (("serving_default", "encode"), ("query", "encode_query"), ("document", "encode_document")):
        got = loaded.signatures[signature](text=texts)["sentence_embedding"].numpy()
        np.testing.assert_allclose(got, np.array(expected[call])[:, :8], atol=ATOL, err_msg=signature)


def test_the_serving_module_applies_the_prompts_and_truncate_dim(reference, folders):
    module = serving_module(folders["excluded-cls-weightedmean"], truncate_dim=8)
    expected = reference["folders"]["excluded-cls-weightedmean"]["calls"]
    texts = tf.constant(reference["texts"])
    for method, call in ((module.embed_text, "encode"), (module.embed_document, "encode_document")):
        got = method(texts)["sentence_embedding"].numpy()  # serving_default: the "instruction" default prompt
        np.testing.assert_allclose(got, np.array(expected[call])[:, :8], atol=ATOL, err_msg=call)
    metadata = module.metadata()
    assert (metadata["truncate_dim"], metadata["default_prompt_name"], metadata["include_prompt"]) == (
        8,
        "instruction",
        False,
    )


@pytest.mark.slow
def test_a_search_corpus_is_embedded_as_documents_and_searched_at_truncate_dim(reference, folders, tmp_path):
    texts = [t for t in reference["texts"] if t]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    module = serving_module(folders["default-query"], truncate_dim=8, passages=_passages(str(corpus)))
    assert module.corpus_embeddings.shape == (len(texts), 8)
    result = module.search(tf.constant(texts[:2]), tf.constant(3))
    queries = SentenceEmbedder(folders["default-query"]).encode(texts[:2], prompt_name="query", truncate_dim=8)
    passages = SentenceEmbedder(folders["default-query"]).encode(texts, prompt_name="document", truncate_dim=8)
    cosines = _unit(queries) @ _unit(passages).T  # [2, N]: renormalized prefixes (the cosine)
    np.testing.assert_allclose(result["scores"].numpy(), -np.sort(-cosines, axis=1)[:, :3], atol=ATOL)


def test_truncate_dim_of_a_classifier_export_is_refused(tmp_path):
    # Refused from the settings, before any weight is read (this directory's weights are an encoder's).
    directory = tiny_model_dir(tmp_path / "m", ["a", "b"], 16, task="classification", labels=["x", "y"])
    with pytest.raises(ConfigError, match="truncate_dim=4"):
        serving_module(directory, truncate_dim=4)
    with pytest.raises(ValueError, match="truncate_dim=33"):
        serving_module(directory, truncate_dim=33, encoder_only=True)


def _passages(path):
    from bert_tf.data import read_passages

    return read_passages(path)


def _unit(vectors):
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.slow
def test_minilm_truncate_dim_equals_sentence_transformers(reference, minilm_dir):
    texts = reference["texts"]
    got = SentenceEmbedder(minilm_dir, truncate_dim=128).encode(texts)
    np.testing.assert_allclose(got, np.array(reference["minilm"]["truncate_dim_128"]), atol=1e-5)
    got = SentenceEmbedder(minilm_dir).encode(texts, truncate_dim=64, normalize=True)
    np.testing.assert_allclose(got, np.array(reference["minilm"]["truncate_dim_64_normalized"]), atol=1e-5)


@pytest.mark.slow
def test_windows_with_a_prompt_excluded_from_pooling_equal_the_exported_windows(reference, folders):
    """long_text="windows": the prompt is part of the text (its first window holds it, its tokens not pooled
    there); SentenceEmbedder and the serving module agree on every signature, truncated."""
    texts = ["word " * 40, "short text", "", "a b c d e f g h i j k l m n o p q r s t u v w x y z " * 3]
    windows = dict(max_seq_length=16, long_text="windows", window_stride=6, truncate_dim=8)
    embedder = SentenceEmbedder(folders["excluded-cls-weightedmean"], **windows)
    module = serving_module(folders["excluded-cls-weightedmean"], **windows)
    for method, name in ((module.embed_text, None), (module.embed_query, "query"), (module.embed_document, "document")):
        got = method(tf.constant(texts))["sentence_embedding"].numpy()
        np.testing.assert_allclose(got, embedder.encode(texts, prompt_name=name), atol=1e-5, err_msg=str(name))
        assert got.shape == (4, 8)
