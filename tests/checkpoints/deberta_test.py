"""DeBERTa-v2/v3 checkpoints saved by Hugging Face transformers, read exactly.

References no one here wrote: `../shared/reference/families/deberta-v2` and
`deberta-v2-cls` (c2p + p2c, shared keys, 32 buckets, no absolute
positions), and `tests/data/deberta/` (tiny random models with the other
options: the convolution, absolute positions, segments, c2p or p2c alone,
own position projections, plain clipped distances, an embedding projection,
token-classification and QA heads; and the fixture on 100 tokens), made by
`tools/references/make_deberta.py` with transformers 5.24. Hidden states and
logits within 1e-4, identical top-5 ids; HF -> bert_tf -> HF bit-identical.
"""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file

from bert_tf import checkpoints, tasks
from bert_tf.config import BertConfig, ConfigError
from bert_tf.models import BertClassifier, BertPretrainer, BertSpanLabeler, BertTokenClassifier, DebertaV2Encoder

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "reference", "families")
LOCAL = os.path.join(os.path.dirname(__file__), "..", "data", "deberta")
TOLERANCE = 1e-4


def _shared(name):
    return os.path.normpath(os.path.join(SHARED, name))


def _local(name):
    return os.path.normpath(os.path.join(LOCAL, name))


def _json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _inputs(row):
    ids = np.array(row["input_ids"], np.int32).reshape(-1, np.shape(row["input_ids"])[-1])
    segments = np.array(row.get("token_type_ids", np.zeros_like(ids)), np.int32).reshape(ids.shape)
    mask = np.array(row.get("attention_mask", np.ones_like(ids)), np.int32).reshape(ids.shape)
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


def _close(ours, theirs, mask=None):
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64).reshape(np.shape(ours))
    if mask is not None:  # real tokens only (values at padding are not defined)
        keep = np.asarray(mask) > 0
        ours, theirs = ours[keep], theirs[keep]
    np.testing.assert_allclose(ours, theirs, atol=TOLERANCE, rtol=0)


def test_fixture_hidden_states_mlm_top5_and_classifier_logits():
    mlm, _ = tasks.load_model(_shared("deberta-v2"))
    classifier, settings = tasks.load_model(_shared("deberta-v2-cls"))
    assert isinstance(mlm, BertPretrainer) and isinstance(mlm.encoder, DebertaV2Encoder) and not mlm.nsp
    assert isinstance(classifier, BertClassifier) and settings["labels"] == ["negative", "neutral", "positive"]
    reference = _json(os.path.join(_shared("deberta-v2"), "reference.json"))
    rows = reference["single"] + reference["pair"]
    assert len(rows) == 34
    # One padded batch of every row (padding does not change real tokens' outputs).
    length = max(len(row["input_ids"]) for row in rows)
    ids = np.zeros((len(rows), length), np.int32)
    for i, row in enumerate(rows):
        ids[i, : len(row["input_ids"])] = row["input_ids"]
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": (ids > 0).astype(np.int32)}
    positions = np.tile(np.arange(length, dtype=np.int32), (len(rows), 1))
    hidden = mlm.encoder(inputs)["sequence_output"].numpy()
    logits = mlm({**inputs, "mask_positions": positions})["mlm"].numpy()
    classes = classifier(inputs).numpy()
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        _close(hidden[i, :n], row["last_hidden_state"])
        top5 = np.argsort(-logits[i, :n], axis=-1, kind="stable")[:, :5]
        np.testing.assert_array_equal(top5, row["mlm_top5_ids"])
        _close(np.take_along_axis(logits[i, :n], top5, axis=1), row["mlm_top5_logits"])
        _close(classes[i], row["cls_logits"])


def test_fixture_on_100_tokens_past_its_32_buckets():
    reference = _json(_local("long.json"))
    encoder = checkpoints.load_encoder(_shared("deberta-v2"))
    _close(encoder(_inputs(reference))["sequence_output"][0], reference["last_hidden_state"])


@pytest.mark.parametrize("name", ["conv", "plain"])
def test_tiny_models_with_the_other_options_every_layer_on_padded_batches(name):
    model, _ = tasks.load_model(_local(name))
    reference = _json(os.path.join(_local(name), "reference.json"))
    inputs = _inputs(reference)
    mask = inputs["padding_mask"]
    encoder = model.encoder
    config = encoder.bert_config()
    if name == "conv":
        assert (config.conv_kernel_size, config.type_vocab_size, config.pos_att_type) == (3, 2, ("c2p",))
        assert config.position_biased_input and not config.share_att_key
    else:
        assert (config.position_buckets, config.embedding_size, config.conv_groups) == (-1, 8, 2)
    out = encoder(inputs)
    for ours, theirs in zip(out["encoder_outputs"], reference["hidden_states"][1:], strict=True):
        _close(ours, theirs, mask)
    positions = np.tile(np.arange(mask.shape[1], dtype=np.int32), (mask.shape[0], 1))
    logits = model({**inputs, "mask_positions": positions})["mlm"]
    _close(logits, reference["logits"], mask)


@pytest.mark.parametrize("head", ["ner", "qa"])
def test_token_classification_and_question_answering_heads(head):
    model, settings = tasks.load_model(_local(f"conv-{head}"))
    reference = _json(os.path.join(_local(f"conv-{head}"), "reference.json"))
    inputs = _inputs(reference)
    mask = inputs["padding_mask"]
    for output in (model(inputs), model.call_unpadded(inputs)):
        if head == "ner":
            assert isinstance(model, BertTokenClassifier) and settings["task"] == "ner"
            _close(output, reference["logits"], mask)
        else:
            assert isinstance(model, BertSpanLabeler) and settings["task"] == "squad"
            logits = np.stack([output["start_logits"], output["end_logits"]], -1)
            _close(logits, reference["logits"], mask)


@pytest.mark.parametrize(
    "folder",
    [_shared("deberta-v2"), _shared("deberta-v2-cls")] + [_local(n) for n in ("conv", "plain", "conv-ner", "conv-qa")],
    ids=os.path.basename,
)
def test_hf_to_bert_tf_to_hf_is_bit_identical(tmp_path, folder):
    ours, back = str(tmp_path / "ours"), str(tmp_path / "hf")
    tasks.convert_checkpoint(folder, ours, allow_missing_vocab=True)
    tasks.convert_checkpoint(ours, back, to="hf", allow_missing_vocab=True)
    original, returned = load_file(os.path.join(folder, "model.safetensors")), load_file(back + "/model.safetensors")
    assert sorted(returned) == sorted(original)
    for name, value in original.items():
        np.testing.assert_array_equal(returned[name], value, err_msg=name)
    source, written = _json(os.path.join(folder, "config.json")), _json(os.path.join(back, "config.json"))
    assert written["architectures"] == source["architectures"]
    assert BertConfig.from_hf_dict(written) == BertConfig.from_hf_dict(source)
    for key in ("legacy", "pos_att_type", "position_buckets", "share_att_key", "conv_kernel_size", "type_vocab_size"):
        if key in source:
            assert written[key] == source[key], key


def test_unsupported_values_are_named(tmp_path):
    data = _json(os.path.join(_shared("deberta-v2"), "config.json"))
    for field, value, message in (
        ("relative_attention", False, r"`relative_attention` must be true.*Received: relative_attention=False"),
        ("pooler_hidden_size", 16, r"`pooler_hidden_size` must equal `hidden_size` \(32\).*pooler_hidden_size=16"),
        ("pos_att_type", "p2c|c2c", r"pos_att_type.*Received: pos_att_type=\('p2c', 'c2c'\)"),
    ):
        with pytest.raises(ConfigError, match=message):
            BertConfig.from_hf_dict({**data, field: value}, source="config.json")
    assert BertConfig.from_hf_dict({**data, "pos_att_type": "p2c|c2p"}).pos_att_type == ("p2c", "c2p")
