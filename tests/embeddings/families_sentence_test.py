"""The sentence-transformers folders of the new families embed texts as sentence-transformers does: in-process, through
the exported SavedModel served where bert_tf cannot be imported, through bert-tf-embed and the search export.

`../shared/reference/families/FAMILY-st` (saved by sentence-transformers 6.2: the base model, mean pooling,
Normalize, `max_seq_length` 128) for XLM-RoBERTa, `bert-multilingual-sp` (a `bert` encoder with XLM-R's
SentencePiece tokenizer), MPNet, NomicBERT and GTE; the expected vectors are `reference.json`'s `st_embeddings`,
`SentenceTransformer.encode(single texts, normalize_embeddings=True)` (multilingual texts, a BOM, emoji, literal
special tokens; three texts cut at 128 tokens). Every vector within 1e-4 (float32), from the raw strings: the
tokenizer is part of what is checked. The folders' `config_sentence_transformers.json` prompts (recorded in
bert_tf.json) survive `bert-tf-convert`.
"""

import json
import os
import shutil

import numpy as np
import pytest

from bert_tf import tasks
from bert_tf.apps import embed as embed_app
from bert_tf.checkpoints import read_settings
from bert_tf.embeddings import SentenceEmbedder
from bert_tf.export import export_saved_model
from tests.conftest import REFERENCE_DIR
from tests.helpers import run_app_main, serve_blocked

FAMILIES_DIR = os.path.join(REFERENCE_DIR, "families")
FAMILIES = ("xlm-roberta", "bert-multilingual-sp", "mpnet", "nomic_bert", "gte")
ROTARY = ("nomic_bert", "gte")
TOLERANCE = 1e-4
# The family whose folder goes through bert-tf-embed and the search export: the multilingual one users run most.
SEARCH_FAMILY = "xlm-roberta"


def _reference(family):
    with open(os.path.join(FAMILIES_DIR, family, "reference.json"), encoding="utf-8") as f:
        return json.load(f)


def _folder(family):
    return os.path.join(FAMILIES_DIR, f"{family}-st")


# NomicBERT's and GTE's in the slow tier: tests/checkpoints/rotary_families_test.py has the same check there, and
# each family costs its tokenizer's and forward's tracing (~10 s of CPU).
@pytest.mark.parametrize(
    "family", [family if family not in ROTARY else pytest.param(family, marks=pytest.mark.slow) for family in FAMILIES]
)
def test_sentence_embedder_encodes_texts_as_sentence_transformers(family):
    reference = _reference(family)
    embedder = SentenceEmbedder(_folder(family))
    assert (embedder.pooling, embedder.normalize, embedder.max_seq_length) == (["mean"], True, 128)
    got = embedder.encode([row["text"] for row in reference["single"]])
    difference = np.abs(got - np.asarray(reference["st_embeddings"])).max()
    assert difference < TOLERANCE, difference


def test_prompts_survive_conversion(tmp_path):
    """The shared folders' prompts are empty (left out of bert_tf.json); a folder with prompts, as multilingual-e5's
    users write them, keeps them and its default prompt through `bert-tf-convert`."""
    converted = str(tmp_path / "plain")
    tasks.convert_checkpoint(_folder(SEARCH_FAMILY), converted)
    settings = read_settings(converted)
    assert "prompts" not in settings and "default_prompt_name" not in settings
    assert (settings["pooling"], settings["normalize"], settings["max_seq_length"]) == (["mean"], True, 128)

    folder = shutil.copytree(_folder(SEARCH_FAMILY), tmp_path / "prompted")
    config_file = folder / "config_sentence_transformers.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config.update(prompts={"query": "query: ", "passage": "passage: ", "document": ""}, default_prompt_name="query")
    config_file.write_text(json.dumps(config), encoding="utf-8")
    converted = str(tmp_path / "prompted-converted")
    tasks.convert_checkpoint(str(folder), converted)
    settings = read_settings(converted)
    assert settings["prompts"] == {"query": "query: ", "passage": "passage: "}
    assert settings["default_prompt_name"] == "query"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Each folder exported as it is (`bert-tf-export --model_dir=FAMILY-st`): {family: SavedModel path}."""
    base = tmp_path_factory.mktemp("families_st")
    paths = {}
    for family in FAMILIES:
        paths[family] = str(base / family)
        metadata = export_saved_model(_folder(family), paths[family])
        assert metadata["kind"] == "encoder" and metadata["max_seq_length"] == 128, (family, metadata)
    return base, paths


@pytest.mark.slow
def test_exported_sentence_embedding_served_without_bert_tf(exported):
    base, paths = exported
    requests = {}
    for family, path in paths.items():
        texts = np.array([row["text"].encode("utf-8") for row in _reference(family)["single"]], object)
        requests[family] = (path, "serving_default", {"text": texts})
    result, responses = serve_blocked(requests, base, "families_st")
    assert result.returncode == 0, result.stderr[-5000:]
    for family in FAMILIES:
        answer, rows = responses[family], _reference(family)["single"]
        assert "error" not in answer, (family, answer)
        for i, row in enumerate(rows):
            np.testing.assert_array_equal(answer["token_ids"][i][: len(row["input_ids"])], row["input_ids"])
        difference = np.abs(answer["sentence_embedding"] - np.asarray(_reference(family)["st_embeddings"])).max()
        assert difference < TOLERANCE, (family, difference)


def _corpus(directory, rows):
    """The single texts as a JSONL corpus (a text file would lose the leading and trailing spaces of one row)."""
    path = directory / "corpus.jsonl"
    lines = [json.dumps({"id": f"row{i}", "text": row["text"]}, ensure_ascii=False) for i, row in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_bert_tf_embed_and_the_search_export(tmp_path):
    """bert-tf-embed's vectors of the folder are sentence-transformers'; the search export ranks the corpus by their
    inner products, served without bert_tf: each text finds itself first."""
    reference = _reference(SEARCH_FAMILY)
    rows, expected = reference["single"], np.asarray(reference["st_embeddings"])
    corpus = _corpus(tmp_path, rows)
    output = tmp_path / "embedded"
    flags = dict(model_dir=_folder(SEARCH_FAMILY), input=corpus, output=output, text_column="text", id_column="id")
    flags.update(max_seq_length=128, batch_size=8, progress=False)
    assert run_app_main(embed_app.main, ["embed"] + [f"--{k}={v}" for k, v in flags.items()]) == 0
    difference = np.abs(np.load(output / "embeddings.npy") - expected).max()
    assert difference < TOLERANCE, difference
    assert (output / "ids.txt").read_text(encoding="utf-8").splitlines() == [f"row{i}" for i in range(len(rows))]

    saved = str(tmp_path / "search")
    metadata = export_saved_model(
        _folder(SEARCH_FAMILY), saved, search_corpus=corpus, search_text_column="text", search_id_column="id"
    )
    assert metadata["search"] == {"corpus_size": len(rows), "embedding_dim": 32}
    queries = np.array([row["text"].encode("utf-8") for row in rows], object)
    result, responses = serve_blocked(
        {"search": (saved, "search", {"query": queries, "k": np.int32(3)})}, tmp_path, "search"
    )
    assert result.returncode == 0, result.stderr[-5000:]
    answer = responses["search"]
    scores = expected @ expected.T  # the texts' cosine similarities (unit vectors)
    for i in range(len(rows)):
        best = np.argsort(-scores[i], kind="stable")[:3]
        assert answer["ids"][i][0].decode() == f"row{i}", (i, answer["ids"][i])
        np.testing.assert_allclose(answer["scores"][i], scores[i][best], atol=TOLERANCE, err_msg=rows[i]["text"])
