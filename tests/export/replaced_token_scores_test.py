"""The `replaced_token_scores` signature: ELECTRA's discriminator served from raw strings.

`tests/data/electra_pretraining/` (a discriminator and generator saved by transformers,
`tools/references/make_electra_pretraining.py`) is converted to a bert_tf model directory (the
discriminator keeps its `discriminator_predictions` head) and exported once. The served `scores` equal
`sigmoid` of transformers' `ElectraForPreTraining` logits within 1e-5 on every real token and are 0 at
padding, in process and in a process that cannot import bert_tf (`tests/export/serving_client.py`).
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import tasks
from bert_tf.export import METADATA_FILE, export_saved_model, serving_module
from tests.helpers import serve_blocked

REFERENCE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "data", "electra_pretraining"))
TOLERANCE = 1e-5


def _rows():
    with open(os.path.join(REFERENCE, "reference.json"), encoding="utf-8") as f:
        return json.load(f)["single"]


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def _check(token_ids, scores, rows):
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        np.testing.assert_array_equal(token_ids[i][:n], row["input_ids"])
        np.testing.assert_allclose(scores[i][:n], _sigmoid(row["discriminator_logits"]), atol=TOLERANCE, rtol=0)
        np.testing.assert_array_equal(scores[i][n:], 0.0)  # padding
        np.testing.assert_array_equal(token_ids[i][n:], 0)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("rtd") / "model")
    tasks.convert_checkpoint(REFERENCE, path)  # the pair: the discriminator here, the generator in generator/
    return path


def test_signature_scores_equal_sigmoid_of_transformers_logits(model_dir):
    module = serving_module(model_dir)
    signatures = module.signatures()
    assert "replaced_token_scores" in signatures and "fill_mask" not in signatures
    assert module.metadata()["replaced_token_detection"] is True
    rows = _rows()
    out = signatures["replaced_token_scores"](text=tf.constant([row["text"] for row in rows]))
    assert out["scores"].dtype == tf.float32 and out["token_ids"].dtype == tf.int32
    _check(out["token_ids"].numpy(), out["scores"].numpy(), rows)
    empty = signatures["replaced_token_scores"](text=tf.constant([], tf.string))
    assert empty["scores"].shape[0] == 0


@pytest.mark.slow
def test_savedmodel_serves_scores_without_bert_tf(model_dir, tmp_path):
    saved = str(tmp_path / "saved")
    metadata = export_saved_model(model_dir, saved)
    assert metadata["signatures"]["replaced_token_scores"] == {"inputs": ["text"], "outputs": ["scores", "token_ids"]}
    with open(os.path.join(saved, "assets.extra", METADATA_FILE), encoding="utf-8") as f:
        assert json.load(f)["replaced_token_detection"] is True
    rows = _rows()
    texts = np.array([row["text"] for row in rows], dtype=object)
    result, responses = serve_blocked({"rtd": (saved, "replaced_token_scores", {"text": texts})}, str(tmp_path), "rtd")
    assert result.returncode == 0, result.stderr[-3000:]
    answer = responses["rtd"]
    assert "error" not in answer, answer
    _check(answer["token_ids"], answer["scores"], rows)
