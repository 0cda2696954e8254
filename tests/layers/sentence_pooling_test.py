"""SentencePooling and BertSentenceEncoder against a numpy transcription of sentence-transformers' pooling."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.layers import POOLING_MODES, SentencePooling, check_pooling
from bert_tf.models import BertSentenceEncoder
from tests.helpers import tiny_encoder


def _reference(sequence, mask, modes, normalize):
    """sentence-transformers' `Pooling._forward_padded` + `Normalize`, row by row, over right-padded rows."""
    rows = []
    for values, real in zip(sequence, mask):
        tokens = values[real.astype(bool)]  # [n, H]
        n = len(tokens)
        weights = np.arange(1, n + 1, dtype=np.float64)[:, None]
        pooled = {
            "cls": tokens[0],
            "lasttoken": tokens[-1],
            "max": tokens.max(axis=0),
            "mean": tokens.sum(axis=0) / n,
            "mean_sqrt_len_tokens": tokens.sum(axis=0) / np.sqrt(n),
            "weightedmean": (tokens * weights).sum(axis=0) / weights.sum(),
        }
        row = np.concatenate([pooled[mode] for mode in modes])
        rows.append(row / max(np.linalg.norm(row), 1e-12) if normalize else row)
    return np.stack(rows)


@pytest.mark.parametrize(
    "modes, normalize",
    [((mode,), False) for mode in POOLING_MODES] + [(("cls", "mean"), True), (("max", "mean_sqrt_len_tokens"), True)],
)
def test_pooling_matches_reference(modes, normalize):
    rng = np.random.default_rng(0)
    sequence = rng.normal(size=(3, 6, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]], "int32")
    pooled = SentencePooling(list(modes), normalize)(sequence, mask).numpy()
    assert pooled.shape == (3, 4 * len(modes))
    np.testing.assert_allclose(pooled, _reference(sequence, mask, modes, normalize), atol=1e-6)


def test_padding_values_do_not_leak():
    sequence = np.ones((1, 4, 2), "float32")
    sequence[0, 2:] = 1000.0  # padding positions
    mask = np.array([[1, 1, 0, 0]], "int32")
    for mode in POOLING_MODES:
        expected = np.sqrt(2.0) if mode == "mean_sqrt_len_tokens" else 1.0  # sum over 2 tokens / sqrt(2)
        np.testing.assert_allclose(SentencePooling(mode, normalize=False)(sequence, mask).numpy(), [[expected] * 2])


def test_bad_pooling_names_the_value():
    for bad in ("avg", [], ["mean", "sum"], 3):
        with pytest.raises(ValueError, match="pooling must be one of"):
            check_pooling(bad)
    with pytest.raises(ValueError, match="`normalize` must be a bool"):
        SentencePooling("mean", normalize="yes")


def test_sentence_encoder_paths_and_config():
    model = BertSentenceEncoder(tiny_encoder(), pooling=["cls", "mean"], normalize=True)
    token_ids = tf.constant([[2, 5, 6, 3, 0, 0], [2, 7, 3, 0, 0, 0]])
    inputs = {
        "token_ids": token_ids,
        "segment_ids": tf.zeros_like(token_ids),
        "padding_mask": tf.cast(token_ids > 0, tf.int32),
    }
    graph = model.call_graph(inputs).numpy()
    assert graph.shape == (2, 2 * model.encoder.hidden_dim)
    np.testing.assert_allclose(model(inputs).numpy(), graph, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(graph, axis=-1), 1.0, atol=1e-6)
    config = model.get_config()
    assert (config["pooling"], config["normalize"]) == (["cls", "mean"], True)
    rebuilt = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(model))
    assert (rebuilt.pooling, rebuilt.normalize) == (("cls", "mean"), True)
