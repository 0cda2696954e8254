"""ModernBERT-based sentence-transformers folders: `SentenceEmbedder` and the exported embedding SavedModel give the
mean / first-token pooling of the hidden states transformers computed.

The folders are built here as sentence-transformers saves one (`modules.json`, `sentence_bert_config.json`,
`1_Pooling/config.json`, the transformer's own files in the folder root) around
`../shared/reference/families/modernbert` (`ModernBertForMaskedLM`, 4 layers with a 16-token sliding window on
layers 1 and 2, `tokenizer.json` only). The expected vectors are NumPy poolings of that folder's `reference.json`
`last_hidden_state` rows (transformers 5.24, `max_length=128`; the `long` rows run to 1,024 tokens, past the window
and past 512 positions): what sentence-transformers' `Pooling` computes of them (mean over real tokens, `[CLS]`
included; or the first token), then `Normalize` where the folder has it.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.embeddings import SentenceEmbedder
from bert_tf.export import export_saved_model, serving_module
from tests.conftest import REFERENCE_DIR
from tests.helpers import serve_blocked

CHECKPOINT = os.path.join(REFERENCE_DIR, "families", "modernbert")
CHECKPOINT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
TOLERANCE = 1e-5
with open(os.path.join(CHECKPOINT, "reference.json"), encoding="utf-8") as _f:
    REFERENCE = json.load(_f)
SINGLE, LONG = REFERENCE["single"], REFERENCE["long"]
REFERENCE_MAX_LENGTH = 128  # the reference rows' `max_length`: a row of 128 ids was cut there
# Folder name -> (pooling mode, max_seq_length, Normalize module).
FOLDERS = {"mean": ("mean", 128, False), "cls": ("cls", 1024, True)}


def _st_folder(path, pooling, max_seq_length, normalize):
    """A sentence-transformers folder of the reference ModernBERT, as `SentenceTransformer.save` writes one."""
    os.makedirs(os.path.join(path, "1_Pooling"))
    for name in CHECKPOINT_FILES:
        shutil.copyfile(os.path.join(CHECKPOINT, name), os.path.join(path, name))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
        os.makedirs(os.path.join(path, "2_Normalize"))
    pooling_config = {
        "word_embedding_dimension": 32,
        "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean",
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": False,
        "include_prompt": True,
    }
    for name, value in (
        ("modules.json", modules),
        ("sentence_bert_config.json", {"max_seq_length": max_seq_length, "do_lower_case": False}),
        (os.path.join("1_Pooling", "config.json"), pooling_config),
    ):
        with open(os.path.join(path, name), "w", encoding="utf-8") as f:
            json.dump(value, f, indent=2)
    return str(path)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("modernbert_st")
    return {name: _st_folder(root / name, *spec) for name, spec in FOLDERS.items()}


def _rows(name):
    """The reference rows a folder's embeddings are compared on: all single rows at 128 tokens (the reference's cut
    is the folder's); at 1,024 the rows the reference did not cut, and the long rows."""
    if FOLDERS[name][1] == REFERENCE_MAX_LENGTH:
        return SINGLE
    return [row for row in SINGLE if len(row["input_ids"]) < REFERENCE_MAX_LENGTH] + LONG


def _expected(name, rows):
    """NumPy pooling (and normalization) of the rows' reference hidden states: float64 `[N, 32]`."""
    pooling, _, normalize = FOLDERS[name]
    states = [np.asarray(row["last_hidden_state"], np.float64) for row in rows]  # each [T, 32], real tokens
    vectors = np.stack([h.mean(axis=0) if pooling == "mean" else h[0] for h in states])
    if normalize:
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_sentence_embedder_pools_the_reference_hidden_states(folders, name):
    rows = _rows(name)
    assert name == "mean" or max(len(row["input_ids"]) for row in rows) == 1024  # past the window and 512
    embedder = SentenceEmbedder(folders[name], batch_size=8)
    pooling, max_seq_length, normalize = FOLDERS[name]
    assert (embedder.pooling, embedder.max_seq_length, embedder.normalize) == ([pooling], max_seq_length, normalize)
    assert type(embedder.model.encoder).__name__ == "ModernBertEncoder"
    got = embedder.encode([row["text"] for row in rows])
    assert got.shape == (len(rows), 32)
    difference = np.abs(got - _expected(name, rows)).max()
    assert difference < TOLERANCE, difference


@pytest.mark.slow  # the SentenceEmbedder tests hold the same vectors in the default tier
@pytest.mark.parametrize("name", ["mean", "cls"])
def test_the_serving_module_gives_the_reference_ids_and_vectors(folders, name):
    """The module the SavedModel serves (in-graph tokenizer and packing): the reference ids and vectors."""
    rows = _rows(name)
    module = serving_module(folders[name])
    assert (list(module.pooling), module.max_seq_length) == ([FOLDERS[name][0]], FOLDERS[name][1])
    out = module.embed_text(tf.constant([row["text"] for row in rows]))
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(out["token_ids"][i, : len(row["input_ids"])], row["input_ids"])
    np.testing.assert_array_equal(out["padding_mask"].numpy().sum(axis=1), [len(row["input_ids"]) for row in rows])
    difference = np.abs(out["sentence_embedding"].numpy() - _expected(name, rows)).max()
    assert difference < TOLERANCE, difference
    # The `ids` signature takes the same ids (all segment 0: ModernBERT has no segment table).
    ids = out["token_ids"].numpy()
    from_ids = module.embed_ids(tf.constant(ids), tf.zeros_like(ids), out["padding_mask"])
    np.testing.assert_allclose(from_ids["sentence_embedding"].numpy(), out["sentence_embedding"].numpy(), atol=1e-6)


@pytest.mark.slow
def test_exported_saved_models_serve_the_reference_vectors(folders, tmp_path):
    """`bert-tf-export` of each folder as it is, served where bert_tf cannot be imported."""
    requests, expected = {}, {}
    for name, folder in folders.items():
        output = str(tmp_path / f"{name}_saved_model")
        metadata = export_saved_model(folder, output)
        assert metadata["kind"] == "encoder" and metadata["max_seq_length"] == FOLDERS[name][1]
        rows = _rows(name)
        texts = np.array([row["text"].encode("utf-8") for row in rows], object)
        requests[name] = (output, "serving_default", {"text": texts})
        expected[name] = _expected(name, rows)
    result, responses = serve_blocked(requests, tmp_path, "modernbert_st")
    assert result.returncode == 0, result.stderr[-5000:]
    for name, vectors in expected.items():
        difference = np.abs(responses[name]["sentence_embedding"] - vectors).max()
        assert difference < TOLERANCE, (name, difference)
