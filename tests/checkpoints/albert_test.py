"""ALBERT checkpoints saved by Hugging Face transformers, read exactly and written back bit for bit.

References no one here wrote: `../shared/reference/families/albert` (`AlbertForMaskedLM`) and
`albert-cls` (`AlbertForSequenceClassification`), and `tests/data/families/albert-ner`, `albert-qa`
and `albert-pretraining` (`AlbertForPreTraining` with its sentence-order head), made by
`tools/references/make_albert.py` with transformers. The reference token ids are fed directly
(the SentencePiece tokenizer is tested with the tokenizers).
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints, tasks
from bert_tf.models import BertClassifier, BertPretrainer, BertSpanLabeler, BertTokenClassifier
from tests.checkpoints.references import (
    assert_close,
    assert_token_head_rows,
    batch_of,
    hf_round_trip,
    local_dir,
    read_reference,
    shared_dir,
)


def _check_top5(logits, ids, values):
    """Our 5 best ids and logits `[T, V]` against the reference's `[T, 5]`.

    Ids must be identical, except where two reference logits tie within the tolerance (albert/ has one such
    pair, 4e-8 apart, at one position): there the order is float round-off, and both ids must hold the tied value.
    """
    ids, values = np.asarray(ids), np.asarray(values)
    top5 = np.argsort(-logits, axis=-1, kind="stable")[:, :5]
    assert_close(np.take_along_axis(logits, top5, axis=1), values)
    assert_close(np.take_along_axis(logits, ids, axis=1), values)  # the reference's ids have the reference's logits
    for t, k in zip(*np.nonzero(top5 != ids)):
        ties = np.sum(np.abs(values[t] - values[t, k]) <= 1e-5)
        assert ties >= 2 and set(top5[t]) == set(ids[t]), f"position {t}: top-5 ids {top5[t]} != {ids[t]}"


@pytest.mark.slow
def test_masked_lm_hidden_states_and_top5():
    model, _ = tasks.load_model(shared_dir("albert"))
    assert isinstance(model, BertPretrainer) and not model.nsp and model.encoder.model_type == "albert"
    # One shared block: the encoder has one block's variables for its 2 layers.
    assert len(model.encoder.transformer_layers) == 1 and len(model.encoder.applied_layers) == 2
    assert model.mlm_head.token_embedding.embeddings.shape == (2000, 16)
    reference = read_reference(shared_dir("albert"))
    for row in reference["single"] + reference["pair"]:
        inputs = batch_of(row)
        assert_close(model.encoder(inputs)["sequence_output"][0], row["last_hidden_state"])
        assert_close(model.encoder.call_unpadded(inputs)["sequence_output"][0], row["last_hidden_state"])
        length = inputs["token_ids"].shape[1]
        logits = model({**inputs, "mask_positions": np.arange(length, dtype=np.int32)[None]})["mlm"][0].numpy()
        _check_top5(logits, row["mlm_top5_ids"], row["mlm_top5_logits"])


def test_load_encoder_reads_the_base_model():
    encoder = checkpoints.load_encoder(shared_dir("albert-cls"), strict=True)  # the classifier's has the pooler
    row = read_reference(shared_dir("albert"))["single"][0]
    assert_close(encoder(batch_of(row))["sequence_output"][0], row["last_hidden_state"])


@pytest.mark.slow
def test_sequence_classifier_logits_and_labels():
    model, settings = tasks.load_model(shared_dir("albert-cls"))
    assert isinstance(model, BertClassifier)
    assert (settings["task"], settings["labels"]) == ("classification", ["negative", "neutral", "positive"])
    for row in read_reference(shared_dir("albert"))["single"] + read_reference(shared_dir("albert"))["pair"]:
        inputs = batch_of(row)
        assert_close(model(inputs)[0], row["cls_logits"])  # call_selected: the last layer at [CLS] only
        assert_close(model.call_graph(inputs)[0], row["cls_logits"])
        assert_close(model.call_unpadded(inputs)[0], row["cls_logits"])


@pytest.mark.parametrize("head", ["ner", "qa"])
def test_token_heads_on_padded_batches(head):
    model, settings = tasks.load_model(local_dir(f"albert-{head}"))
    reference = read_reference(local_dir(f"albert-{head}"))
    if head == "ner":
        assert isinstance(model, BertTokenClassifier) and len(settings["labels"]) == 9
    else:
        assert isinstance(model, BertSpanLabeler) and settings["task"] == "squad"
    assert_token_head_rows(
        reference, head, lambda inputs: (model(inputs), model.call_unpadded(inputs), model.call_graph(inputs))
    )


def test_albert_for_pretraining_reads_the_sentence_order_head():
    path = local_dir("albert-pretraining")
    model, _ = tasks.load_model(path)
    assert isinstance(model, BertPretrainer) and model.nsp and model.sentence_objective == "sop"
    reference = read_reference(path)
    for row in reference["single"] + reference["pair"]:
        inputs = batch_of(row)
        length = inputs["token_ids"].shape[1]
        outputs = model({**inputs, "mask_positions": np.arange(length, dtype=np.int32)[None]})
        assert_close(outputs["sop"][0], row["sop_logits"])
        _check_top5(outputs["mlm"][0].numpy(), row["prediction_top5_ids"], row["prediction_top5_logits"])


@pytest.mark.parametrize(
    "folder",
    [shared_dir("albert"), shared_dir("albert-cls")]
    + [local_dir(f"albert-{task}") for task in ("ner", "qa", "pretraining")],
    ids=os.path.basename,
)
def test_hf_to_bert_tf_to_hf_is_bit_identical(tmp_path, folder):
    """`convert_checkpoint` to a bert_tf model directory (Google's ALBERT TF1 names) and back to Hugging Face."""
    ours, back, source, written = hf_round_trip(folder, tmp_path)
    for key in ("architectures", "model_type", "embedding_size", "num_hidden_groups", "inner_group_num", "hidden_act"):
        assert written[key] == source[key], key
    if source["architectures"][0].endswith("Classification"):
        assert written["id2label"] == source["id2label"]
    # The SentencePiece model travels both ways.
    assert checkpoints.find_tokenizer(back)[0] == checkpoints.find_tokenizer(folder)[0]
    assert os.path.isfile(os.path.join(ours, "spiece.model")) and os.path.isfile(os.path.join(back, "spiece.model"))


def test_model_directory_uses_googles_albert_names(tmp_path):
    model, settings = tasks.load_model(local_dir("albert-pretraining"))
    checkpoints.save_model_dir(model, str(tmp_path), settings=settings)
    names = {name for name, _ in tf.train.list_variables(str(tmp_path / "bert_model.ckpt"))}
    assert {
        "bert/encoder/embedding_hidden_mapping_in/kernel",
        "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel",
        "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/output/dense/kernel",
        "bert/encoder/transformer/group_0/inner_group_0/LayerNorm_1/gamma",
        "bert/pooler/dense/kernel",
        "cls/predictions/transform/dense/kernel",
        "cls/seq_relationship/output_weights",
    } <= names
    with open(tmp_path / "bert_config.json", encoding="utf-8") as f:
        config = json.load(f)
    assert (config["model_type"], config["embedding_size"], config["hidden_act"]) == ("albert", 16, "gelu_new")


def test_shared_layer_groups_equal_transformers():
    """3 layers over 2 groups of 2 blocks: Hugging Face runs blocks 0 1 | 0 1 | 2 3 (group int(i / 1.5))."""
    path = local_dir("albert-groups")
    encoder = checkpoints.load_encoder(path, strict=True)
    assert [block.name for block in encoder.applied_layers] == [
        f"transformer_group_{g}_layer_{j}" for g, j in ((0, 0), (0, 1), (0, 0), (0, 1), (1, 0), (1, 1))
    ]
    reference = read_reference(path)
    inputs = batch_of(reference)
    mask = inputs["padding_mask"]
    for outputs in (encoder(inputs), encoder.call_unpadded(inputs)):
        assert_close(outputs["sequence_output"], reference["last_hidden_state"], mask)
        assert_close(outputs["pooled_output"], reference["pooler_output"])
        assert len(outputs["encoder_outputs"]) == len(reference["hidden_states"]) == 6
        for ours, theirs in zip(outputs["encoder_outputs"], reference["hidden_states"]):
            assert_close(ours, theirs, mask)
