"""Each family's converted checkpoint, exported, answers raw strings as transformers does, where bert_tf is absent.

The Hugging Face folders of `../shared/reference/families/` are converted
(`convert_checkpoint`), exported (`export_saved_model`) and queried in a
subprocess that cannot import bert_tf (`tests/export/serving_client.py`): the
classifier's logits on the reference texts equal transformers' within 1e-4,
and fill-mask's best ids at a literal mask token equal the reference's top-5
(their logits' differences too, read from the served probabilities).
ModernBERT (no position or segment tables, rotary positions, a 16-token
sliding window, a `tokenizer.json`-only byte-level BPE) also answers its
`long` rows (1,024 and 784 tokens) from a second export at its own length
(the other rows are cut at the reference's 128 tokens); so do NomicBERT and
GTE (rotary positions past 512: 604 and 468 tokens). XLM-RoBERTa and
`bert-multilingual-sp` (a `bert` checkpoint with XLM-R's SentencePiece files)
tokenize in-graph with fairseq's ids, MPNet with its `<s>`/`</s>` WordPiece;
the three frame pairs as `<s> A </s></s> B </s>`.
"""

import json
import os

import numpy as np
import pytest

from bert_tf import tasks
from bert_tf.export import export_saved_model
from tests.helpers import serve_blocked

SHARED = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "reference", "families"))
FAMILIES = (
    "bert",
    "electra",
    "distilbert",
    "roberta",
    "deberta-v2",
    "modernbert",
    "xlm-roberta",
    "bert-multilingual-sp",
    "mpnet",
    "nomic_bert",
    "gte",
)
# Families whose reference.json has `long` rows: exported twice, at the reference's `max_length=128` for the
# `single` and `pair` rows (whose longest texts it cuts there) and at the model's own length (1,024) for `long`.
LONG = ("modernbert", "nomic_bert", "gte")
REFERENCE_LENGTH = 128
MASK = {"roberta": "<mask>", "xlm-roberta": "<mask>", "bert-multilingual-sp": "<mask>", "mpnet": "<mask>"}


def _reference(family):
    with open(os.path.join(SHARED, family, "reference.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def saved_models(tmp_path_factory):
    base = tmp_path_factory.mktemp("families")
    models = {}
    for family in FAMILIES:
        for kind, folder in (("cls", f"{family}-cls"), ("mlm", family)):
            model_dir, saved = str(base / f"{folder}-dir"), str(base / f"{folder}-saved")
            tasks.convert_checkpoint(os.path.join(SHARED, folder), model_dir)
            if family in LONG:
                export_saved_model(model_dir, saved + "-long", text_pair=False)
                models[f"{family}-long", kind] = saved + "-long"
                export_saved_model(model_dir, saved, text_pair=False, max_seq_length=REFERENCE_LENGTH)
            else:
                export_saved_model(model_dir, saved, text_pair=False)
            models[family, kind] = saved
    return base, models


@pytest.mark.slow
def test_classifier_savedmodel_logits_equal_transformers(saved_models):
    base, models = saved_models
    requests = {}
    parts = {family: ("single", "pair", "long") if family in LONG else ("single", "pair") for family in FAMILIES}
    for family in FAMILIES:
        if family in LONG:
            texts = np.array([row["text"] for row in _reference(family)["long"]], dtype=object)
            requests[f"{family}-long"] = (models[f"{family}-long", "cls"], "single", {"text": texts})
        texts = np.array([row["text"] for row in _reference(family)["single"]], dtype=object)
        requests[f"{family}-single"] = (models[family, "cls"], "single", {"text": texts})
        pairs = _reference(family)["pair"]
        requests[f"{family}-pair"] = (
            models[family, "cls"],
            "pair",
            {
                "text": np.array([row["text"] for row in pairs], dtype=object),
                "text_pair": np.array([row["text_pair"] for row in pairs], dtype=object),
            },
        )
    result, responses = serve_blocked(requests, str(base), "cls")
    assert result.returncode == 0, result.stderr[-3000:]
    for family in FAMILIES:
        reference = _reference(family)
        for part in parts[family]:
            answer = responses[f"{family}-{part}"]
            assert "error" not in answer, (family, part, answer)
            expected = np.array([row["cls_logits"] for row in reference[part]])
            np.testing.assert_allclose(answer["logits"], expected, atol=1e-4, rtol=0, err_msg=f"{family} {part}")
            # Label names from config.json's id2label (the tiny random model's logits nearly tie, so the label
            # is checked against the served logits).
            labels = [label.decode() for label in answer["label"]]
            assert labels == [["negative", "neutral", "positive"][i] for i in answer["logits"].argmax(axis=1)]


@pytest.mark.slow
def test_fill_mask_savedmodel_top5_equals_transformers(saved_models):
    base, models = saved_models
    requests, expected = {}, {}
    for family in FAMILIES:
        mask = MASK.get(family, "[MASK]")
        rows = [row for row in _reference(family)["single"] if mask in row["text"]]
        assert rows, family
        requests[family] = (
            models[family, "mlm"],
            "fill_mask",
            {"text": np.array([row["text"] for row in rows], dtype=object)},
        )
        expected[family] = rows
    result, responses = serve_blocked(requests, str(base), "mlm")
    assert result.returncode == 0, result.stderr[-3000:]
    for family, rows in expected.items():
        answer = responses[family]
        assert "error" not in answer, (family, answer)
        for i, row in enumerate(rows):
            np.testing.assert_array_equal(answer["token_ids"][i][: len(row["input_ids"])], row["input_ids"])
            position = int(answer["mask_positions"][i][0])
            assert row["input_ids"][position] == answer["token_ids"][i][position]
            np.testing.assert_array_equal(answer["top_ids"][i][0][:5], row["mlm_top5_ids"][position])
            # log p_k - log p_0 is logit_k - logit_0: the served scores are the reference's logits, shifted.
            served = np.log(answer["top_probabilities"][i][0][:5].astype(np.float64))
            reference = np.asarray(row["mlm_top5_logits"][position], np.float64)
            np.testing.assert_allclose(served - served[0], reference - reference[0], atol=1e-4, rtol=0)


SPECIALS = ("[MASK]", "[SEP]", "[CLS]", "[PAD]", "[UNK]", "<mask>", "<s>", "</s>", "<pad>", "<unk>")


@pytest.mark.slow
def test_encoder_savedmodel_hidden_states_equal_transformers(saved_models):
    """`serving_default` on raw strings: the reference's ids and `last_hidden_state` (real tokens), per family,
    literal special tokens (`[MASK]`, `<mask>`, ...) kept whole as the reference tokenizers keep them."""
    base, models = saved_models
    requests, rows_of = {}, {}
    for family in FAMILIES:
        rows = _reference(family)["single"]
        assert any(token in row["text"] for row in rows for token in SPECIALS), family
        rows_of[family] = rows
        texts = np.array([row["text"] for row in rows], dtype=object)
        requests[family] = (models[family, "mlm"], "serving_default", {"text": texts})
        if family in LONG:  # past 512 positions (and ModernBERT's sliding window)
            rows_of[f"{family}-long"] = _reference(family)["long"]
            texts = np.array([row["text"] for row in rows_of[f"{family}-long"]], dtype=object)
            requests[f"{family}-long"] = (models[f"{family}-long", "mlm"], "serving_default", {"text": texts})
    result, responses = serve_blocked(requests, str(base), "encoder")
    assert result.returncode == 0, result.stderr[-3000:]
    for family, rows in rows_of.items():
        answer = responses[family]
        assert "error" not in answer, (family, answer)
        for i, row in enumerate(rows):
            length = len(row["input_ids"])
            np.testing.assert_array_equal(answer["token_ids"][i][:length], row["input_ids"], err_msg=row["text"])
            assert answer["padding_mask"][i].sum() == length
            np.testing.assert_allclose(
                answer["sequence_output"][i][:length], row["last_hidden_state"], atol=1e-4, rtol=0, err_msg=family
            )
