"""Sentence-transformers folders exported as they are: raw strings in, sentence-transformers' own embeddings out.

The references (`tests/data/sentence_transformers/`, made by `tools/references/make_st.py`) are
`SentenceTransformer(folder).encode(texts)`: the all-MiniLM-L6-v2 folder (mean pooling, Normalize,
max_seq_length 256) on texts with literal special tokens, WikiText-2 paragraphs longer than 256 word pieces and
plain sentences; and tiny folders on the tiny BERT checkpoint with each other pooling mode, no Normalize, short
max_seq_length.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.export import serving_module
from tests.conftest import REFERENCE_DIR
from tests.helpers import serve_blocked

TOLERANCE = 1e-4
DATA = os.path.join(os.path.dirname(__file__), "..", "data", "sentence_transformers")
TINY_CHECKPOINT = os.path.join(REFERENCE_DIR, "families", "bert")
TINY_CHECKPOINT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt")


def _load(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return json.load(f)


def _encode(strings):
    return np.array([s.encode("utf-8") for s in strings], object)


@pytest.fixture(scope="module")
def minilm_export(minilm_saved_model):
    """The MiniLM sentence-transformers folder exported as it is (no conversion): `(SavedModel dir, metadata)`,
    the export shared by the test run (conftest's `minilm_saved_model`)."""
    return minilm_saved_model


@pytest.mark.slow
def test_minilm_saved_model_gives_sentence_transformers_embeddings(minilm_export, tmp_path):
    output, metadata = minilm_export
    assert metadata["max_seq_length"] == 256  # sentence_bert_config.json's, not the tokenizer's 512
    shared = _load_shared()
    rows = _load("minilm.json")["texts"]
    texts = [e["text"] for e in shared] + [r["text"] for r in rows]
    assert {r["group"] for r in rows} == {"special_tokens", "long", "plain"}
    assert all(r["pieces"] > 256 for r in rows if r["group"] == "long")
    result, responses = serve_blocked({"embed": (output, "serving_default", {"text": _encode(texts)})}, tmp_path, "st")
    assert result.returncode == 0, result.stderr[-5000:]
    out = responses["embed"]
    expected = [e["sentence_embedding"] for e in shared] + [r["sentence_embedding"] for r in rows]
    lengths = [len(e["token_ids"]) for e in shared] + [min(r["pieces"], 256) for r in rows]
    np.testing.assert_array_equal(out["padding_mask"].sum(axis=1), lengths)
    for row, text in enumerate(texts):
        np.testing.assert_allclose(out["sentence_embedding"][row], expected[row], atol=TOLERANCE, err_msg=text[:80])


def _load_shared():
    with open(os.path.join(REFERENCE_DIR, "minilm_reference.json"), encoding="utf-8") as f:
        return [e for e in json.load(f)["single"] if "sentence_embedding" in e]


@pytest.mark.parametrize("name", sorted(_load("tiny.json")["folders"]))
def test_tiny_folders_give_sentence_transformers_embeddings(name, tmp_path):
    reference = _load("tiny.json")
    expected = reference["folders"][name]
    folder = str(tmp_path / name)
    shutil.copytree(os.path.join(DATA, "tiny", name), folder)
    for file_name in TINY_CHECKPOINT_FILES:
        shutil.copyfile(os.path.join(TINY_CHECKPOINT, file_name), os.path.join(folder, file_name))
    module = serving_module(folder)
    assert module.max_seq_length == expected["max_seq_length"]
    assert list(module.pooling) == _modes(expected["pooling_mode"])
    assert module.normalize is ("Normalize" in expected["modules"])
    out = module.embed_text(tf.constant(reference["texts"]))
    lengths = [min(n, expected["max_seq_length"]) for n in expected["pieces"]]
    np.testing.assert_array_equal(out["padding_mask"].numpy().sum(axis=1), lengths)
    np.testing.assert_allclose(out["sentence_embedding"].numpy(), expected["sentence_embedding"], atol=TOLERANCE)


def _modes(pooling_mode):
    return [pooling_mode] if isinstance(pooling_mode, str) else list(pooling_mode)
