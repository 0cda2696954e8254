"""Cross-encoders served: `RerankModule` (`serving_default` pairs -> scores, `rerank` query + passages -> scores,
order, truncated) gives `CrossEncoder.predict`'s scores within 1e-4, in-process and through SavedModels loaded where
bert_tf cannot be imported; `bert-tf-export --search_reranker` reranks a bi-encoder's candidates in one SavedModel.

References: `tests/data/cross_encoder/reference.json` (`tools/references/make_cross_encoder.py`): tiny CrossEncoder
folders made by sentence-transformers 6.2 (BERT with sigmoid; BERT with identity and max_length 24, so long pairs
are cut; XLM-RoBERTa), rebuilt by `tests.cross_encoders`.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.checkpoints import CheckpointError
from bert_tf.export import export_saved_model, serving_module
from bert_tf.serving import RerankedSearchModule, RerankModule
from bert_tf.tasks.rerank import load_reranker
from tests.conftest import REFERENCE_DIR
from tests.cross_encoders import cross_encoder_folder, reference
from tests.helpers import serve_blocked, write_text

TOLERANCE = 1e-4
BI_ENCODER = os.path.join(REFERENCE_DIR, "families", "bert")  # the tiny BERT: mean pooling, normalized
TOP_N = 4


def _strings(values):
    return np.array([v.encode("utf-8") for v in values], object)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("cross_encoders")
    return {name: cross_encoder_folder(name, str(root / name)) for name in reference()["folders"]}


@pytest.fixture(scope="module")
def modules(folders):
    # The "bert" folder is served through the SavedModel below (every reference pair and the ranking).
    return {name: serving_module(folders[name]) for name in ("bert-identity", "xlm-roberta")}


@pytest.fixture(scope="module")
def exports(folders, tmp_path_factory):
    """One SavedModel: the two-stage search of a tiny bi-encoder over the reference corpus, reranked by the "bert"
    cross-encoder, whose `rerank` signature it holds too."""
    root = tmp_path_factory.mktemp("rerank_exports")
    search = reference()["folders"]["bert"]["search"]
    corpus = write_text(str(root / "corpus.txt"), "\n".join(search["corpus"]) + "\n")
    # The bi-encoder: the tiny BERT's encoder (mean pooling, normalized) as the cross-encoder folder holds it, which
    # exports no fill_mask signature (the family folder's masked-LM head would add one to trace).
    metadata = export_saved_model(
        folders["bert"],
        str(root / "search"),
        encoder_only=True,
        search_corpus=corpus,
        search_reranker=folders["bert"],
        search_rerank_top_n=TOP_N,
    )
    return str(root / "search"), metadata


@pytest.mark.parametrize("name", ["bert-identity", "xlm-roberta"])
def test_scores_and_order_are_cross_encoders(name, modules):
    expected = reference()["folders"][name]
    module = modules[name]
    assert isinstance(module, RerankModule) and module.max_seq_length == expected["max_seq_length"]
    pairs = expected["pairs"]
    scores = module.score_pairs(tf.constant([p["query"] for p in pairs]), tf.constant([p["passage"] for p in pairs]))
    np.testing.assert_allclose(scores["scores"].numpy(), [p["score"] for p in pairs], atol=TOLERANCE)
    rank = expected["rank"]
    out = module.rerank(tf.constant(rank["query"]), tf.constant(rank["passages"]))
    assert out["order"].numpy().tolist() == rank["order"]
    np.testing.assert_allclose(out["scores"].numpy()[rank["order"]], rank["scores"], atol=TOLERANCE)
    # `truncated`: the pair's pieces do not fit beside the specials ([CLS] A [SEP] B [SEP]; XLM-R's </s></s>).
    one = module.rerank(tf.constant(pairs[-1]["query"]), tf.constant([p["passage"] for p in pairs]))
    specials = 4 if name == "xlm-roberta" else 3
    fits = [pairs[-1]["query_pieces"] + p["passage_pieces"] <= module.max_seq_length - specials for p in pairs]
    assert one["truncated"].numpy().tolist() == [not f for f in fits]


def test_empty_candidates_give_empty_outputs_and_a_query_must_be_one_string(modules):
    module = modules["bert-identity"]
    out = module.rerank(tf.constant("q"), tf.constant([], tf.string))
    assert {k: v.shape.as_list() for k, v in out.items()} == {"scores": [0], "order": [0], "truncated": [0]}
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        module.rerank(tf.constant(["q", "r"]), tf.constant(["a"]))


def test_bad_rerankers_and_options_are_refused_by_name(modules, folders, tmp_path):
    with pytest.raises(ValueError, match="top_n=0"):
        RerankedSearchModule(object(), modules["bert-identity"], 0)
    with pytest.raises(CheckpointError, match="no task model"):
        load_reranker(BI_ENCODER)
    with pytest.raises(ValueError, match="pass search_corpus"):
        export_saved_model(BI_ENCODER, str(tmp_path / "a"), search_reranker=folders["bert"])
    with pytest.raises(ValueError, match="pass search_reranker.*search_rerank_top_n=3"):
        export_saved_model(BI_ENCODER, str(tmp_path / "b"), search_rerank_top_n=3)
    with pytest.raises(ValueError, match="search_rerank_top_n=0"):
        export_saved_model(BI_ENCODER, str(tmp_path / "c"), search_reranker=folders["bert"], search_rerank_top_n=0)
    assert not any(os.path.exists(tmp_path / name) for name in "abc")


@pytest.mark.slow  # over 10 s (the make test budget)
def test_saved_model_served_without_bert_tf(exports, tmp_path):
    output, metadata = exports
    assert metadata["signatures"]["rerank"] == {
        "inputs": ["query", "passages"],
        "outputs": ["order", "scores", "truncated"],
    }
    assert metadata["rerank"] == {"top_n": TOP_N, "score_activation": "sigmoid", "max_seq_length": 128}
    folder = reference()["folders"]["bert"]
    search = folder["search"]
    # Each reference pair as a one-passage `rerank` (the long ones cut at 128 tokens), and the ranking.
    requests = {
        f"pair-{i:02d}": (
            output,
            "rerank",
            {"query": np.array(p["query"].encode(), object), "passages": _strings([p["passage"]])},
        )
        for i, p in enumerate(folder["pairs"])
    }
    rank = folder["rank"]
    requests["rank"] = (
        output,
        "rerank",
        {"query": np.array(rank["query"].encode(), object), "passages": _strings(rank["passages"])},
    )
    requests["empty"] = (output, "rerank", {"query": np.array(b"q", object), "passages": np.array([], object)})
    requests["query-rank-1"] = (output, "rerank", {"query": _strings(["q"]), "passages": _strings(["a"])})
    requests["search"] = (output, "search", {"query": _strings(search["queries"]), "k": np.int32(3)})
    requests["search-k-over-n"] = (output, "search", {"query": _strings(search["queries"]), "k": np.int32(50)})
    requests["search-k-0"] = (output, "search", {"query": _strings(search["queries"]), "k": np.int32(0)})
    result, responses = serve_blocked(requests, str(tmp_path), "rerank")
    assert result.returncode == 0, result.stderr[-5000:]
    for i, pair in enumerate(folder["pairs"]):
        np.testing.assert_allclose(responses[f"pair-{i:02d}"]["scores"], [pair["score"]], atol=TOLERANCE)
        assert responses[f"pair-{i:02d}"]["truncated"].tolist() == [pair["query_pieces"] + pair["passage_pieces"] > 125]
    assert responses["rank"]["order"].tolist() == rank["order"]
    assert responses["empty"]["scores"].shape == (0,) and responses["empty"]["order"].shape == (0,)
    assert responses["query-rank-1"] == {"error": "InvalidArgumentError"}
    assert responses["search-k-0"] == {"error": "InvalidArgumentError"}
    # The two-stage search: the bi-encoder's TOP_N candidates, ranked by the cross-encoder's scores (the reference's).
    scores = np.array(search["scores"])  # [queries, corpus]
    found = responses["search-k-over-n"]
    assert found["ids"].shape == (2, TOP_N)  # k beyond n returns the n reranked
    for row in range(2):
        ids = [int(i) for i in found["ids"][row]]
        np.testing.assert_allclose(found["scores"][row], scores[row, ids], atol=TOLERANCE)
        assert list(found["scores"][row]) == sorted(found["scores"][row], reverse=True)
        assert [t.decode() for t in found["texts"][row]] == [search["corpus"][i] for i in ids]
        assert [int(i) for i in responses["search"]["ids"][row]] == ids[:3]


def _score_requests(name, saved_model):
    """The reference pairs (`serving_default`) and ranking (`rerank`) of the folder `name` as serving requests."""
    pairs, rank = reference()["folders"][name]["pairs"], reference()["folders"][name]["rank"]
    return {
        f"{name}-pairs": (
            saved_model,
            "serving_default",
            {"text": _strings([p["query"] for p in pairs]), "text_pair": _strings([p["passage"] for p in pairs])},
        ),
        f"{name}-rerank": (
            saved_model,
            "rerank",
            {"query": np.array(rank["query"].encode(), object), "passages": _strings(rank["passages"])},
        ),
    }


def _check_scores(name, responses):
    pairs, rank = reference()["folders"][name]["pairs"], reference()["folders"][name]["rank"]
    np.testing.assert_allclose(responses[f"{name}-pairs"]["scores"], [p["score"] for p in pairs], atol=TOLERANCE)
    assert responses[f"{name}-rerank"]["order"].tolist() == rank["order"]


@pytest.mark.slow
def test_xlm_roberta_cross_encoder_saved_model_served_without_bert_tf(folders, tmp_path):
    output = str(tmp_path / "xlmr")
    export_saved_model(folders["xlm-roberta"], output)
    result, responses = serve_blocked(_score_requests("xlm-roberta", output), str(tmp_path), "xlmr")
    assert result.returncode == 0, result.stderr[-5000:]
    _check_scores("xlm-roberta", responses)


@pytest.mark.slow
def test_onnx_and_litert_exports_of_a_cross_encoder(folders, tmp_path):
    from bert_tf.export import export_litert, export_onnx

    onnx = export_onnx(folders["bert"], str(tmp_path / "onnx"))
    assert (onnx["kind"], onnx["outputs"]) == ("rerank", ["scores"])  # the ids signature's scores, activated
    assert onnx["verified_max_abs_difference"] < TOLERANCE
    litert = export_litert(folders["bert"], str(tmp_path / "litert"))
    assert [spec["name"] for spec in litert["inputs"]] == ["text", "text_pair"]  # a cross-encoder reads pairs
    pairs = [p for p in reference()["folders"]["bert"]["pairs"] if "[" not in p["query"] + p["passage"]]
    request = {
        "runs": [
            {
                "model": str(tmp_path / "litert" / "model.tflite"),
                "inputs": {"text": [p["query"] for p in pairs], "text_pair": [p["passage"] for p in pairs]},
            }
        ]
    }
    with open(tmp_path / "request.json", "w", encoding="utf-8") as f:
        json.dump(request, f)
    client = os.path.join(os.path.dirname(__file__), "litert_client.py")
    result = subprocess.run(
        [sys.executable, client, str(tmp_path / "request.json"), str(tmp_path / "response.npz")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # Literal special tokens ("[MASK]") are ordinary text in LiteRT's WordPiece (bert_tf.export.litert): left out.
    scores = np.load(tmp_path / "response.npz", allow_pickle=True)["0/scores"]
    np.testing.assert_allclose(scores, [p["score"] for p in pairs], atol=TOLERANCE)
