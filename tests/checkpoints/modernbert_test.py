"""ModernBERT checkpoints saved by Hugging Face transformers, read exactly.

References no one here wrote: `../shared/reference/families/modernbert`
(`ModernBertForMaskedLM`: 4 layers, global attention on layers 0 and 3 with
RoPE theta 160,000, a 16-token sliding window with theta 10,000 on layers 1
and 2, GeGLU, LayerNorms and projections without biases, 1,024 positions) and
`modernbert-cls` (`ModernBertForSequenceClassification`, the same encoder).
The rows' `input_ids` are fed as they are (the tokenizer is tested with the
tokenizers); the `long` rows (1,024 and 784 tokens) reach past the window and
past 512 positions. Hidden states and logits within 1e-4, identical top-5
ids; HF -> bert_tf -> HF bit-identical; unsupported options refused by name.
"""

import json
import os
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file

from bert_tf import checkpoints, tasks
from bert_tf.checkpoints import CheckpointError
from bert_tf.config import BertConfig, ConfigError
from bert_tf.models import BertClassifier, BertPretrainer, BertTokenClassifier, ModernBertEncoder

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "reference", "families")
TOLERANCE = 1e-4
LABELS = ["negative", "neutral", "positive"]


def _shared(name):
    return os.path.normpath(os.path.join(SHARED, name))


def _json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


REFERENCE = _json(os.path.join(_shared("modernbert"), "reference.json"))


def _batch(rows, pad_id=3):
    """The rows' ids as one right-padded batch (padding does not change real tokens' outputs)."""
    length = max(len(row["input_ids"]) for row in rows)
    ids = np.full((len(rows), length), pad_id, np.int32)
    mask = np.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, : len(row["input_ids"])] = row["input_ids"]
        mask[i, : len(row["input_ids"])] = 1
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


def _max_difference(ours, theirs):
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64).reshape(np.shape(ours))
    return float(np.abs(ours - theirs).max())


@pytest.fixture(scope="module")
def models():
    mlm, _ = tasks.load_model(_shared("modernbert"))
    classifier, settings = tasks.load_model(_shared("modernbert-cls"))
    assert isinstance(mlm, BertPretrainer) and isinstance(mlm.encoder, ModernBertEncoder) and not mlm.nsp
    assert isinstance(classifier, BertClassifier) and isinstance(classifier.encoder, ModernBertEncoder)
    assert (settings["task"], settings["labels"]) == ("classification", LABELS)
    return mlm, classifier


@pytest.mark.parametrize("part", ["single_and_pair", "long"])
def test_hidden_states_mlm_top5_and_classifier_logits(models, part):
    mlm, classifier = models
    rows = REFERENCE["single"] + REFERENCE["pair"] if part == "single_and_pair" else REFERENCE["long"]
    assert len(rows) == (34 if part == "single_and_pair" else 2)
    inputs = _batch(rows)
    length = inputs["token_ids"].shape[1]
    if part == "long":
        assert length == 1024 and mlm.encoder.local_attention == 16
    positions = np.tile(np.arange(length, dtype=np.int32), (len(rows), 1))
    hidden = mlm.encoder(inputs)["sequence_output"].numpy()
    logits = mlm({**inputs, "mask_positions": positions})["mlm"].numpy()
    classes = classifier(inputs).numpy()
    worst = {"hidden": 0.0, "mlm": 0.0, "cls": 0.0}
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        worst["hidden"] = max(worst["hidden"], _max_difference(hidden[i, :n], row["last_hidden_state"]))
        top5 = np.argsort(-logits[i, :n], axis=-1, kind="stable")[:, :5]
        np.testing.assert_array_equal(top5, row["mlm_top5_ids"])
        top5_logits = np.take_along_axis(logits[i, :n], top5, axis=1)
        worst["mlm"] = max(worst["mlm"], _max_difference(top5_logits, row["mlm_top5_logits"]))
        worst["cls"] = max(worst["cls"], _max_difference(classes[i], row["cls_logits"]))
    assert max(worst.values()) < TOLERANCE, worst
    # The padding-free path the SavedModels serve equals the graph at real tokens.
    unpadded = mlm.encoder.call_unpadded(inputs)["sequence_output"].numpy()
    np.testing.assert_allclose(unpadded, hidden * inputs["padding_mask"][:, :, None], atol=1e-5)
    np.testing.assert_allclose(classifier.call_unpadded(inputs), classes, atol=1e-5)


def _weights_only_copy(folder, target):
    """`config.json` and `model.safetensors` of `folder` (the tokenizer files are another test's)."""
    os.makedirs(target)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(folder, name), target)
    return target


@pytest.mark.parametrize("name", ["modernbert", "modernbert-cls"])
def test_hf_to_bert_tf_to_hf_is_bit_identical(tmp_path, name):
    folder = _weights_only_copy(_shared(name), str(tmp_path / "source"))
    ours, back = str(tmp_path / "ours"), str(tmp_path / "hf")
    tasks.convert_checkpoint(folder, ours, allow_missing_vocab=True)
    assert BertConfig.from_json_file(os.path.join(ours, "bert_config.json")).model_type == "modernbert"
    tasks.convert_checkpoint(ours, back, to="hf", allow_missing_vocab=True)
    original, returned = load_file(os.path.join(folder, "model.safetensors")), load_file(back + "/model.safetensors")
    assert sorted(returned) == sorted(original)
    for tensor, value in original.items():
        np.testing.assert_array_equal(returned[tensor], value, err_msg=tensor)
    source, written = _json(os.path.join(folder, "config.json")), _json(os.path.join(back, "config.json"))
    assert written["architectures"] == source["architectures"]
    assert BertConfig.from_hf_dict(written) == BertConfig.from_hf_dict(source)
    for key in ("layer_types", "rope_parameters", "local_attention", "pad_token_id", "max_position_embeddings"):
        assert written[key] == source[key], key
    if name.endswith("-cls"):
        assert written["id2label"] == source["id2label"]


def test_masked_lm_checkpoint_has_no_pooled_output_head(caplog):
    encoder = checkpoints.load_encoder(_shared("modernbert"))
    assert "pooler/dense/kernel" in caplog.text and "pooler/norm/gamma" in caplog.text
    assert "freshly initialised" in caplog.text
    # The masked-LM model's `head` is its masked-LM transform, not the classifier's: strict loading fails.
    with pytest.raises(CheckpointError, match=r"`pooler/dense/kernel` has no name in the hf format"):
        checkpoints.load_encoder(_shared("modernbert"), strict=True)
    assert not encoder.norm_bias and not encoder.classifier_bias
    assert sorted(v.path for v in encoder.pooler.weights) == ["pooler/dense/kernel", "pooler/norm/gamma"]


def test_token_classification_has_no_hugging_face_form(tmp_path):
    """ModernBERT's token-classification and QA classes run `head` on every token before their logits; bert_tf's
    token heads do not, so they are neither written nor read as such."""
    encoder = checkpoints.load_encoder(_shared("modernbert-cls"))
    tagger = BertTokenClassifier(encoder, 5)
    with pytest.raises(CheckpointError, match=r"`tagger_head/logits/kernel` has no Hugging Face equivalent"):
        checkpoints.save_hf(tagger, str(tmp_path / "ner"))
    assert not os.path.exists(tmp_path / "ner")
    checkpoints.save_model_dir(tagger, str(tmp_path / "ours"))  # its own format keeps it


def _config_with(tmp_path, **changes):
    data = _json(os.path.join(_shared("modernbert"), "config.json"))
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_unsupported_options_are_refused_naming_file_key_and_value(tmp_path):
    rope = _json(os.path.join(_shared("modernbert"), "config.json"))["rope_parameters"]
    linear = {**rope, "sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}}
    for changes, message in (
        (
            {"rope_parameters": linear},
            r"config.json: field `rope_parameters.sliding_attention.rope_type` must be 'default'.*"
            r"Received: rope_parameters.sliding_attention.rope_type='linear'",
        ),
        (
            {"layer_types": ["full_attention", "chunked_attention", "sliding_attention", "full_attention"]},
            r"config.json: field `layer_types`.*Received: layer_types\[1\]='chunked_attention'",
        ),
        (
            {"classifier_pooling": "max"},
            r"config.json: field `classifier_pooling` must be one of \('cls', 'mean'\).*classifier_pooling='max'",
        ),
        ({"rope_scaling": {"type": "dynamic"}}, r"config.json: field `rope_scaling` is not supported"),
        ({"local_attention": 1}, r"config.json: field `local_attention`.*Received: local_attention=1"),
    ):
        with pytest.raises(ConfigError, match=message):
            BertConfig.from_json_file(_config_with(tmp_path, **changes))


def test_older_config_keys_read_as_the_new_ones(tmp_path):
    """transformers 4's `global_attn_every_n_layers` and `global_rope_theta` / `local_rope_theta`."""
    new = BertConfig.from_json_file(os.path.join(_shared("modernbert"), "config.json"))
    old = BertConfig.from_json_file(
        _config_with(
            tmp_path,
            layer_types=None,
            rope_parameters=None,
            global_attn_every_n_layers=3,
            global_rope_theta=160000.0,
            local_rope_theta=10000.0,
        )
    )
    assert old == new
    assert new.layer_types == ("full_attention", "sliding_attention", "sliding_attention", "full_attention")
    assert (new.global_rope_theta, new.local_rope_theta, new.local_attention) == (160000.0, 10000.0, 16)
    # ModernBERT's options stay out of every other family's config.
    with pytest.raises(ConfigError, match=r"`local_attention` is ModernBERT's.*Received: local_attention=16"):
        BertConfig(vocab_size=30, local_attention=16)
    assert "layer_types" not in BertConfig(vocab_size=30).to_dict()
