"""A real checkpoint (all-MiniLM-L6-v2, Hugging Face BERT directory): parity with transformers, round trips.

Reference outputs were computed by Hugging Face transformers
(`../shared/reference/minilm_reference.json`); tolerance 1e-4 absolute.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints

REFERENCE_FILE = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "shared", "reference", "minilm_reference.json"
)
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def reference():
    with open(REFERENCE_FILE, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def encoder(minilm_dir):
    return checkpoints.load_encoder(minilm_dir)


def _inputs(token_ids, segment_ids, padding_mask=None):
    token_ids = np.asarray(token_ids, "int32").reshape(-1, np.shape(token_ids)[-1])
    segment_ids = np.asarray(segment_ids, "int32").reshape(token_ids.shape)
    if padding_mask is None:
        padding_mask = np.ones_like(token_ids)
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": np.asarray(padding_mask, "int32")}


def _sentence_embedding(sequence_output, padding_mask):
    """Mean over real tokens, L2-normalised (sentence-transformers pooling): `[B, T, H] -> [B, H]`."""
    mask = padding_mask[:, :, None].astype("float32")
    mean = (sequence_output * mask).sum(1) / mask.sum(1)
    return mean / np.linalg.norm(mean, axis=-1, keepdims=True)


def _max_errors(outputs, examples, padding_mask):
    """Max abs errors (sequence, pooled, embedding) of batched `outputs` against reference `examples`."""
    sequence = outputs["sequence_output"].numpy()
    pooled = outputs["pooled_output"].numpy()
    embedding = _sentence_embedding(sequence, padding_mask)
    errors = np.zeros(3)
    for row, example in enumerate(examples):
        length = len(example["token_ids"])
        errors[0] = max(errors[0], np.abs(sequence[row, :length] - np.asarray(example["sequence_output"])).max())
        errors[1] = max(errors[1], np.abs(pooled[row] - np.asarray(example["pooled_output"])).max())
        if "sentence_embedding" in example:
            errors[2] = max(errors[2], np.abs(embedding[row] - np.asarray(example["sentence_embedding"])).max())
    return errors


def test_config_read_from_hf_directory(encoder):
    config = encoder.bert_config()
    assert (
        config.vocab_size,
        config.hidden_size,
        config.num_hidden_layers,
        config.num_attention_heads,
        config.intermediate_size,
        config.hidden_act,
    ) == (30522, 384, 6, 12, 1536, "gelu")


@pytest.mark.parametrize("kind", ["single", "pairs"])
def test_matches_transformers_one_by_one(encoder, reference, kind):
    for example in reference[kind]:
        inputs = _inputs([example["token_ids"]], [example["segment_ids"]])
        errors = _max_errors(encoder(inputs), [example], inputs["padding_mask"])
        assert errors.max() <= TOLERANCE, (example.get("text") or example["text_a"], errors)


def _padded_batch(examples):
    """Reference token and segment ids right-padded into int32 `[B, T]` arrays, with the padding mask."""
    length = max(len(example["token_ids"]) for example in examples)
    token_ids = np.zeros((len(examples), length), "int32")
    segment_ids = np.zeros_like(token_ids)
    padding_mask = np.zeros_like(token_ids)
    for row, example in enumerate(examples):
        n = len(example["token_ids"])
        token_ids[row, :n], segment_ids[row, :n], padding_mask[row, :n] = (
            example["token_ids"],
            example["segment_ids"],
            1,
        )
    return token_ids, segment_ids, padding_mask


def test_matches_transformers_padded_batch(encoder, reference):
    examples = reference["single"]
    token_ids, segment_ids, padding_mask = _padded_batch(examples)
    assert padding_mask.min() == 0  # The batch really is padded.
    errors = _max_errors(encoder(_inputs(token_ids, segment_ids, padding_mask)), examples, padding_mask)
    assert errors.max() <= TOLERANCE, errors


def test_tf1_and_hf_round_trips_are_exact(encoder, reference, minilm_dir, minilm_vocab, tmp_path):
    examples = reference["single"][:3] + reference["pairs"]
    token_ids, segment_ids, padding_mask = _padded_batch(examples)
    inputs = _inputs(token_ids, segment_ids, padding_mask)
    expected = encoder(inputs)

    ours = os.path.join(tmp_path, "ours")
    checkpoints.save_model_dir(encoder, ours, vocab_file=minilm_vocab)
    shapes = dict(tf.train.list_variables(os.path.join(ours, "bert_model.ckpt")))
    assert shapes["bert/encoder/layer_0/attention/self/query/kernel"] == [384, 384]
    assert shapes["bert/encoder/layer_5/intermediate/dense/kernel"] == [384, 1536]
    assert shapes["bert/embeddings/LayerNorm/gamma"] == [384]
    assert shapes["bert/embeddings/word_embeddings"] == [30522, 384]
    assert shapes["bert/pooler/dense/kernel"] == [384, 384]
    assert len(shapes) == len(encoder.weights)

    hf = os.path.join(tmp_path, "hf")
    checkpoints.save_hf(encoder, hf, vocab_file=minilm_vocab)
    for path in (ours, hf):
        loaded = checkpoints.load_encoder(path)
        outputs = loaded(inputs)
        for key in ("sequence_output", "pooled_output"):
            np.testing.assert_array_equal(outputs[key].numpy(), expected[key].numpy(), err_msg=f"{path} {key}")
    with open(os.path.join(hf, "vocab.txt")) as a, open(minilm_vocab) as b:
        assert a.read() == b.read()
