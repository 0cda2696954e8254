"""ALBERT's converted checkpoints, exported, answer raw strings as transformers does, where bert_tf is absent.

`../shared/reference/families/albert` (fill-mask, encoder) and `albert-cls` (classification) are
converted (`convert_checkpoint`: the SentencePiece model travels), exported (`export_saved_model`) and
queried in a subprocess that cannot import bert_tf (`tests/export/serving_client.py`).

Pairs: transformers 5's `AlbertTokenizer` returns no `token_type_ids` (its `model_input_names` are
`input_ids` and `attention_mask`), so the reference ran every pair with segment 0, while bert_tf packs the
second text in segment 1, as ALBERT was pretrained and as the folder's `tokenizer.json` post-processor
says. The served pairs are therefore held to the reference's ids and to the bert_tf model itself on the
packed inputs, not to the reference's pair logits.
"""

import json
import os

import numpy as np
import pytest

from bert_tf import checkpoints, tasks, text
from bert_tf.export import export_saved_model
from tests.helpers import serve_blocked

SHARED = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "reference", "families"))


def _reference():
    with open(os.path.join(SHARED, "albert", "reference.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("albert")
    dirs, saved = {}, {}
    for folder in ("albert", "albert-cls"):
        dirs[folder], saved[folder] = str(base / f"{folder}-dir"), str(base / f"{folder}-saved")
        tasks.convert_checkpoint(os.path.join(SHARED, folder), dirs[folder])
        export_saved_model(dirs[folder], saved[folder], text_pair=False)
    reference = _reference()
    rows = reference["single"]
    pairs = reference["pair"]
    masked = [row for row in rows if "[MASK]" in row["text"]]
    assert masked
    texts = np.array([row["text"] for row in rows], dtype=object)
    requests = {
        "cls-single": (saved["albert-cls"], "single", {"text": texts}),
        "cls-pair": (
            saved["albert-cls"],
            "pair",
            {
                "text": np.array([row["text"] for row in pairs], dtype=object),
                "text_pair": np.array([row["text_pair"] for row in pairs], dtype=object),
            },
        ),
        "fill-mask": (saved["albert"], "fill_mask", {"text": np.array([row["text"] for row in masked], dtype=object)}),
        "encoder": (saved["albert"], "serving_default", {"text": texts}),
    }
    result, responses = serve_blocked(requests, str(base), "albert")
    assert result.returncode == 0, result.stderr[-3000:]
    for name, answer in responses.items():
        assert "error" not in answer, (name, answer)
    return dirs, responses, reference, masked


@pytest.mark.slow
def test_classifier_logits_equal_transformers_on_single_texts(served):
    _, responses, reference, _ = served
    answer = responses["cls-single"]
    expected = np.array([row["cls_logits"] for row in reference["single"]])
    np.testing.assert_allclose(answer["logits"], expected, atol=1e-4, rtol=0)
    labels = [label.decode() for label in answer["label"]]
    assert labels == [["negative", "neutral", "positive"][i] for i in answer["logits"].argmax(axis=1)]


@pytest.mark.slow
def test_classifier_pairs_equal_the_model_on_the_packed_pair(served):
    dirs, responses, reference, _ = served
    model, settings = tasks.load_model(dirs["albert-cls"])
    tokenizer = checkpoints.load_tokenizer(dirs["albert-cls"], settings)
    pairs = reference["pair"]
    packed = text.packer_for(tokenizer, 128)(
        tokenizer.tokenize(np.array([row["text"] for row in pairs], dtype=object)),
        tokenizer.tokenize(np.array([row["text_pair"] for row in pairs], dtype=object)),
    )
    for i, row in enumerate(pairs):
        length = len(row["input_ids"])
        assert packed["token_ids"][i, :length].numpy().tolist() == row["input_ids"], row["text"]
    np.testing.assert_allclose(responses["cls-pair"]["logits"], model.call_graph(packed), atol=1e-4, rtol=0)


@pytest.mark.slow
def test_fill_mask_top5_and_hidden_states_equal_transformers(served):
    _, responses, reference, masked = served
    answer = responses["fill-mask"]
    for i, row in enumerate(masked):
        np.testing.assert_array_equal(answer["token_ids"][i][: len(row["input_ids"])], row["input_ids"])
        position = int(answer["mask_positions"][i][0])
        np.testing.assert_array_equal(answer["top_ids"][i][0][:5], row["mlm_top5_ids"][position])
    answer = responses["encoder"]
    for i, row in enumerate(reference["single"]):
        length = len(row["input_ids"])
        np.testing.assert_array_equal(answer["token_ids"][i][:length], row["input_ids"], err_msg=row["text"])
        np.testing.assert_allclose(
            answer["sequence_output"][i][:length], row["last_hidden_state"], atol=1e-4, rtol=0, err_msg=row["text"]
        )
