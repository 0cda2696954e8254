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

import os

import numpy as np
import pytest

from bert_tf import checkpoints, tasks
from bert_tf.config import BertConfig, ConfigError
from bert_tf.models import BertClassifier, BertPretrainer, BertSpanLabeler, BertTokenClassifier, DebertaV2Encoder
from tests.checkpoints.references import (
    assert_close,
    batch_of,
    hf_round_trip,
    local_dir,
    read_json,
    read_reference,
    shared_dir,
)


def test_fixture_hidden_states_mlm_top5_and_classifier_logits():
    mlm, _ = tasks.load_model(shared_dir("deberta-v2"))
    classifier, settings = tasks.load_model(shared_dir("deberta-v2-cls"))
    assert isinstance(mlm, BertPretrainer) and isinstance(mlm.encoder, DebertaV2Encoder) and not mlm.nsp
    assert isinstance(classifier, BertClassifier) and settings["labels"] == ["negative", "neutral", "positive"]
    reference = read_reference(shared_dir("deberta-v2"))
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
        assert_close(hidden[i, :n], row["last_hidden_state"])
        top5 = np.argsort(-logits[i, :n], axis=-1, kind="stable")[:, :5]
        np.testing.assert_array_equal(top5, row["mlm_top5_ids"])
        assert_close(np.take_along_axis(logits[i, :n], top5, axis=1), row["mlm_top5_logits"])
        assert_close(classes[i], row["cls_logits"])


def test_fixture_on_100_tokens_past_its_32_buckets():
    reference = read_json(local_dir("long.json", "deberta"))
    encoder = checkpoints.load_encoder(shared_dir("deberta-v2"))
    assert_close(encoder(batch_of(reference))["sequence_output"][0], reference["last_hidden_state"])


@pytest.mark.parametrize("name", ["conv", "plain"])
def test_tiny_models_with_the_other_options_every_layer_on_padded_batches(name):
    model, _ = tasks.load_model(local_dir(name, "deberta"))
    reference = read_reference(local_dir(name, "deberta"))
    inputs = batch_of(reference)
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
        assert_close(ours, theirs, mask)
    positions = np.tile(np.arange(mask.shape[1], dtype=np.int32), (mask.shape[0], 1))
    logits = model({**inputs, "mask_positions": positions})["mlm"]
    assert_close(logits, reference["logits"], mask)


@pytest.mark.parametrize("head", ["ner", "qa"])
def test_token_classification_and_question_answering_heads(head):
    model, settings = tasks.load_model(local_dir(f"conv-{head}", "deberta"))
    reference = read_reference(local_dir(f"conv-{head}", "deberta"))
    inputs = batch_of(reference)
    mask = inputs["padding_mask"]
    for output in (model(inputs), model.call_unpadded(inputs)):
        if head == "ner":
            assert isinstance(model, BertTokenClassifier) and settings["task"] == "ner"
            assert_close(output, reference["logits"], mask)
        else:
            assert isinstance(model, BertSpanLabeler) and settings["task"] == "squad"
            logits = np.stack([output["start_logits"], output["end_logits"]], -1)
            assert_close(logits, reference["logits"], mask)


@pytest.mark.parametrize(
    "folder",
    [shared_dir("deberta-v2"), shared_dir("deberta-v2-cls")]
    + [local_dir(n, "deberta") for n in ("conv", "plain", "conv-ner", "conv-qa")],
    ids=os.path.basename,
)
def test_hf_to_bert_tf_to_hf_is_bit_identical(tmp_path, folder):
    _, _, source, written = hf_round_trip(folder, tmp_path, allow_missing_vocab=True)
    assert written["architectures"] == source["architectures"]
    assert BertConfig.from_hf_dict(written) == BertConfig.from_hf_dict(source)
    for key in ("legacy", "pos_att_type", "position_buckets", "share_att_key", "conv_kernel_size", "type_vocab_size"):
        if key in source:
            assert written[key] == source[key], key


def test_unsupported_values_are_named(tmp_path):
    data = read_json(os.path.join(shared_dir("deberta-v2"), "config.json"))
    for field, value, message in (
        ("relative_attention", False, r"`relative_attention` must be true.*Received: relative_attention=False"),
        ("pooler_hidden_size", 16, r"`pooler_hidden_size` must equal `hidden_size` \(32\).*pooler_hidden_size=16"),
        ("pos_att_type", "p2c|c2c", r"pos_att_type.*Received: pos_att_type=\('p2c', 'c2c'\)"),
    ):
        with pytest.raises(ConfigError, match=message):
            BertConfig.from_hf_dict({**data, field: value}, source="config.json")
    assert BertConfig.from_hf_dict({**data, "pos_att_type": "p2c|c2p"}).pos_att_type == ("p2c", "c2p")
